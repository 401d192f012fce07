import AttestPlugins
import Foundation
import Hummingbird

extension Request {
    /// Reads the JSON body as a top-level object: 413 past the size limit, 415 for another
    /// content type, 400 when it is not a JSON object.
    func jsonObject(context: AttestRequestContext) async throws -> [String: JSONValue] {
        // The media type without its parameters (`; charset=utf-8`), in any case; none at all is
        // taken as JSON. Only JSON itself: not `application/json-patch+json` or the like.
        if let type = headers[.contentType],
            type.split(separator: ";", maxSplits: 1).first?.trimmingCharacters(in: .whitespaces).lowercased() != "application/json"
        {
            throw Problem(
                .unsupportedMediaType, slug: "unsupported-media-type", title: "Unsupported media type",
                detail: "Send the body as application/json.")
        }
        var request = self
        let buffer: ByteBuffer
        do {
            buffer = try await request.collectBody(upTo: context.maxUploadSize)
        } catch {
            throw Problem(
                .contentTooLarge, slug: "body-too-large", title: "Request body too large",
                detail: "The body is larger than \(context.maxUploadSize / 1024) KiB.")
        }
        let parsed = buffer.withUnsafeReadableBytes { bytes in Result { () throws(JSONSyntaxError) in try JSONValue(parsing: bytes) } }
        switch parsed {
        case .success(.object(let object)):
            return object
        case .success:
            throw Problem(
                .badRequest, slug: "invalid-json", title: "Invalid JSON",
                detail: "The body must be a JSON object; see /openapi.yaml for each route's fields.")
        case .failure(let error):
            throw Problem(
                .badRequest, slug: "invalid-json", title: "Invalid JSON",
                detail: "The body is not valid JSON (\(error)); it must be a JSON object, see /openapi.yaml for each route's fields.")
        }
    }
}

extension Problem {
    /// 422 listing each invalid field.
    static func validation(_ errors: [FieldError]) -> Problem {
        Problem(
            .unprocessableContent, slug: "validation", title: "Invalid request",
            detail: errors.map { "\($0.field): \($0.message)" }.joined(separator: "; "), errors: errors)
    }
}
