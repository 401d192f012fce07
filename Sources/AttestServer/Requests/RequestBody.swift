import AttestPlugins
import AttestPostgres
import Foundation
import Hummingbird
import NIOCore

extension Request {
    /// Whether a Content-Type is JSON itself: the media type without its parameters
    /// (`; charset=utf-8`) and the spaces or tabs around it, in any case, is `application/json`.
    /// Not `application/json-patch+json` or the like. Compared byte by byte: every submission
    /// asks, and Foundation's trimming cost 1.4% of a submission's CPU.
    package static func namesJSON(_ contentType: String) -> Bool {
        var type = contentType.utf8.prefix { $0 != UInt8(ascii: ";") }[...]
        while let first = type.first, first == 0x20 || first == 0x09 { type.removeFirst() }
        while let last = type.last, last == 0x20 || last == 0x09 { type.removeLast() }
        let json = "application/json".utf8
        guard type.count == json.count else { return false }
        return zip(type, json).allSatisfy { byte, expected in
            (byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte) == expected
        }
    }

    /// Reads the JSON body as a top-level object: 413 past the size limit, 415 for another
    /// content type, 400 when it is not a JSON object.
    /// `limit`: the most bytes (default `context.maxUploadSize`, 64 KiB).
    package func jsonObject(context: AttestRequestContext, limit: Int? = nil) async throws -> [String: JSONValue] {
        // No Content-Type at all is taken as JSON.
        if let type = headers[.contentType], !Self.namesJSON(type) {
            throw Problem(
                .unsupportedMediaType, slug: "unsupported-media-type", title: "Unsupported media type",
                detail: "Send the body as application/json.")
        }
        let buffer: ByteBuffer
        do {
            buffer = try await collectBody(context: context, limit: limit)
        } catch let problem as Problem {
            throw problem
        } catch {
            throw Problem(
                .contentTooLarge, slug: "body-too-large", title: "Request body too large",
                detail: "The body is larger than \((limit ?? context.maxUploadSize) / 1024) KiB.")
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

extension Request {
    /// The body: at most `limit` (default `context.maxUploadSize`) bytes (past it, a 413 naming
    /// the limit), all of it within `AttestRequestContext.bodyTimeout` of the request's head
    /// (`BodyDeadlineHandler`). Slower is a 408 `body-timeout`, and the connection is closed a
    /// second later, the answer written: what is left of the body is not waited for.
    package func collectBody(context: AttestRequestContext, limit: Int? = nil) async throws -> ByteBuffer {
        let limit = limit ?? context.maxUploadSize
        var reading = self
        do {
            return try await reading.collectBody(upTo: limit)
        } catch is NIOTooManyBytesError {
            var problem = Problem(
                .contentTooLarge, slug: "body-too-large", title: "Request body too large",
                detail: "The body is larger than \(limit / 1024) KiB. Send a smaller one.")
            problem.limit = limit
            throw problem
        } catch is BodyDeadlineExceeded {
            let channel = context.channel
            channel.eventLoop.scheduleTask(in: .seconds(1)) { channel.close(promise: nil) }
            throw Problem(
                .requestTimeout, slug: "body-timeout", title: "Request body too slow",
                detail:
                    "The request body did not arrive within \(AttestRequestContext.bodyTimeout.components.seconds) s. Send it again, all at once.",
                headers: [.connection: "close"])
        }
    }
}

extension Problem {
    /// The most field errors one response lists: a request with thousands of stray fields
    /// gets a short answer, not one a hundred times its size.
    package static let maxFieldErrors = 20

    /// 422 listing each invalid field (the first `maxFieldErrors`, then how many more).
    package static func validation(_ errors: [FieldError]) -> Problem {
        var listed = Array(errors.prefix(maxFieldErrors))
        if errors.count > maxFieldErrors {
            listed.append(.init(field: "(more)", message: "and \(errors.count - maxFieldErrors) more problems of the same request"))
        }
        return Problem(
            .unprocessableContent, slug: "validation", title: "Invalid request",
            detail: listed.map { "\($0.field): \($0.message)" }.joined(separator: "; "), errors: listed)
    }
}
