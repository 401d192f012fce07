import Foundation

/// A `multipart/form-data` body (RFC 7578), as a browser sends a form with a file: its parts
/// in order, each with its field name, the file's name and type when it is a file, and its
/// bytes. The reader refuses (nil) rather than guesses: a part without a name, headers that
/// are not `Name: value` lines, no closing delimiter, more than `maxParts` parts.
package struct MultipartForm {
    package struct Part {
        package var name: String
        package var filename: String?
        package var contentType: String?
        package var body: Data
    }

    package var parts: [Part]

    package static let maxParts = 200
    package static let maxHeaderBytes = 8 * 1024

    /// The boundary of a `multipart/form-data; boundary=…` Content-Type (1 to 70 characters,
    /// quoted or not), or nil.
    package static func boundary(contentType: String) -> String? {
        let pieces = contentType.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
        guard pieces.first?.lowercased() == "multipart/form-data" else { return nil }
        for piece in pieces.dropFirst() {
            let pair = piece.split(separator: "=", maxSplits: 1).map(String.init)
            guard pair.count == 2, pair[0].trimmingCharacters(in: .whitespaces).lowercased() == "boundary" else { continue }
            var value = pair[1].trimmingCharacters(in: .whitespaces)
            if value.utf8.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") { value = String(value.dropFirst().dropLast()) }
            guard (1...70).contains(value.utf8.count), value.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F || $0 == 0x20 }) else { return nil }
            return value
        }
        return nil
    }

    /// The parts of `bytes` delimited by `boundary`, or nil when they are not a well-formed body.
    package static func parse(_ bytes: [UInt8], boundary: String) -> MultipartForm? {
        let dashBoundary = Array("--\(boundary)".utf8)
        let delimiter = [0x0D, 0x0A] + dashBoundary  // CRLF--boundary: what ends a part's body
        // The first boundary may follow a preamble; at the very start it has no CRLF before it.
        var position: Int
        if bytes.starts(with: dashBoundary) {
            position = dashBoundary.count
        } else if let found = find(delimiter, in: bytes, from: 0) {
            position = found + delimiter.count
        } else {
            return nil
        }
        var parts: [Part] = []
        while true {
            // After a delimiter: "--" ends the body; otherwise optional padding, then CRLF.
            if bytes.count >= position + 2, bytes[position] == 0x2D, bytes[position + 1] == 0x2D { return MultipartForm(parts: parts) }
            while position < bytes.count, bytes[position] == 0x20 || bytes[position] == 0x09 { position += 1 }
            guard bytes.count >= position + 2, bytes[position] == 0x0D, bytes[position + 1] == 0x0A else { return nil }
            position += 2
            guard parts.count < maxParts,
                let headerEnd = find([0x0D, 0x0A, 0x0D, 0x0A], in: bytes, from: position, within: maxHeaderBytes + 4),
                let headers = String(validating: bytes[position..<headerEnd], as: UTF8.self)
            else { return nil }
            let bodyStart = headerEnd + 4
            guard let bodyEnd = find(delimiter, in: bytes, from: bodyStart) else { return nil }
            guard let part = part(headers: headers, body: Data(bytes[bodyStart..<bodyEnd])) else { return nil }
            parts.append(part)
            position = bodyEnd + delimiter.count
        }
    }

    /// A part from its header block: `Content-Disposition: form-data; name="…"[; filename="…"]`
    /// is required; `Content-Type` is kept; other headers are ignored.
    private static func part(headers: String, body: Data) -> Part? {
        var name: String?, filename: String?, contentType: String?
        for line in headers.split(separator: "\r\n", omittingEmptySubsequences: false) {
            guard let colon = line.firstIndex(of: ":") else { return nil }
            let field = line[..<colon].trimmingCharacters(in: .whitespaces).lowercased()
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            switch field {
            case "content-disposition":
                guard let parameters = dispositionParameters(value) else { return nil }
                name = parameters["name"]
                filename = parameters["filename"]
            case "content-type":
                contentType = value
            default:
                continue
            }
        }
        guard let name else { return nil }
        return Part(name: name, filename: filename, contentType: contentType, body: body)
    }

    /// `form-data; name="a"; filename="b.webm"` → ["name": "a", "filename": "b.webm"]; quoted
    /// values may hold `;` and escaped quotes (`\"`), as browsers write them.
    package static func dispositionParameters(_ value: String) -> [String: String]? {
        var scalars = Substring(value).unicodeScalars[...]
        func skipSpaces() { while let first = scalars.first, first == " " || first == "\t" { scalars.removeFirst() } }
        func token() -> String {
            var text = ""
            while let first = scalars.first, first != ";", first != "=" { text.unicodeScalars.append(scalars.removeFirst()) }
            return text.trimmingCharacters(in: .whitespaces)
        }
        guard token().lowercased() == "form-data" else { return nil }
        var parameters: [String: String] = [:]
        while let first = scalars.first {
            guard first == ";" else { return nil }
            scalars.removeFirst()
            skipSpaces()
            if scalars.isEmpty { break }
            let key = token().lowercased()
            guard scalars.first == "=", !key.isEmpty else { return nil }
            scalars.removeFirst()
            skipSpaces()
            var text = ""
            if scalars.first == "\"" {
                scalars.removeFirst()
                var closed = false
                while let next = scalars.first {
                    scalars.removeFirst()
                    if next == "\\", let escaped = scalars.first {
                        scalars.removeFirst()
                        text.unicodeScalars.append(escaped)
                    } else if next == "\"" {
                        closed = true
                        break
                    } else {
                        text.unicodeScalars.append(next)
                    }
                }
                guard closed else { return nil }
                skipSpaces()
            } else {
                text = token()
            }
            parameters[key] = text
        }
        return parameters
    }

    /// Where `needle` first begins in `haystack` at or after `start` (and, with `within`,
    /// before `start + within`).
    package static func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int, within: Int? = nil) -> Int? {
        guard let first = needle.first, start >= 0 else { return nil }
        let limit = min(haystack.count - needle.count, within.map { start + $0 - needle.count } ?? Int.max)
        guard limit >= start else { return nil }
        var index = start
        while index <= limit {
            if haystack[index] == first {
                var matched = 1
                while matched < needle.count, haystack[index + matched] == needle[matched] { matched += 1 }
                if matched == needle.count { return index }
            }
            index += 1
        }
        return nil
    }
}
