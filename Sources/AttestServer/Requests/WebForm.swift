import Foundation
import Hummingbird
import NIOCore

/// A form's fields in order (`application/x-www-form-urlencoded`, or `multipart/form-data`
/// when it carries a file), and its files.
package struct WebForm {
    package var fields: [(name: String, value: String)]
    /// The files chosen (parts with a file name and some bytes; a file input left empty sends none).
    package var files: [MultipartForm.Part] = []

    package subscript(name: String) -> String? { fields.first { $0.name == name }?.value }

    /// Every value of a field that may repeat (checkboxes).
    package func all(_ name: String) -> [String] { fields.filter { $0.name == name }.map(\.value) }

    package func file(_ name: String) -> MultipartForm.Part? { files.first { $0.name == name } }

    /// The request's form body; at most `limit` bytes (default `AttestRequestContext.maxUploadSize`),
    /// within `AttestRequestContext.bodyTimeout`.
    package static func read(_ request: Request, context: AttestRequestContext, limit: Int? = nil) async throws -> WebForm {
        let type = request.headers[.contentType] ?? ""
        let boundary = MultipartForm.boundary(contentType: type)
        guard type.lowercased().hasPrefix("application/x-www-form-urlencoded") || boundary != nil else {
            throw Problem(
                .unsupportedMediaType, slug: "unsupported-media-type", title: "Unsupported form",
                detail: "Send the form as application/x-www-form-urlencoded or multipart/form-data, as a browser does.")
        }
        let body = try await request.collectBody(context: context, limit: limit)
        let unreadable = Problem(
            .badRequest, slug: "bad-form", title: "Unreadable form",
            detail: "The form's fields are not well-formed UTF-8. Reload the page and send it again.")
        guard let boundary else {
            guard let form = parse(String(buffer: body)) else { throw unreadable }
            return form
        }
        guard let multipart = MultipartForm.parse(Array(body.readableBytesView), boundary: boundary) else { throw unreadable }
        var form = WebForm(fields: [])
        for part in multipart.parts {
            if part.filename != nil {
                if !part.body.isEmpty { form.files.append(part) }
            } else {
                guard let value = String(validating: part.body, as: UTF8.self) else { throw unreadable }
                form.fields.append((part.name, value))
            }
        }
        return form
    }

    package static func parse(_ text: String) -> WebForm? {
        var fields: [(String, String)] = []
        for pair in text.split(separator: "&", omittingEmptySubsequences: true).prefix(500) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = decode(parts[0]), let value = decode(parts.count > 1 ? parts[1] : "") else { return nil }
            fields.append((name, value))
        }
        return WebForm(fields: fields)
    }

    private static func decode(_ text: Substring) -> String? {
        text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding
    }
}
