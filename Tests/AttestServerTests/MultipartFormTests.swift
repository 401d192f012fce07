import AttestTestSupport
import Foundation
import Testing

@testable import AttestAPI
@testable import AttestServer
@testable import AttestWeb

@Suite("multipart/form-data, as browsers send forms with files")
struct MultipartFormTests {
    static let boundary = "----WebKitFormBoundary7MA4YWxkTrZu0gW"

    /// A body as Chromium writes one: a field, a multi-line field, a file, an empty file input.
    static let browserBody: [UInt8] =
        Array(
            ("--\(boundary)\r\nContent-Disposition: form-data; name=\"csrf\"\r\n\r\nabc\r\n"
                + "--\(boundary)\r\nContent-Disposition: form-data; name=\"text\"\r\n\r\nline one\r\nline two\r\n"
                + "--\(boundary)\r\nContent-Disposition: form-data; name=\"audio\"; filename=\"my \\\"voice\\\"; take 2.webm\"\r\nContent-Type: audio/webm\r\n\r\n")
                .utf8) + [0x1A, 0x45, 0xDF, 0xA3, 0x0D, 0x0A, 0x2D, 0x2D, 0x00, 0xFF]
        + Array(
            "\r\n--\(boundary)\r\nContent-Disposition: form-data; name=\"other\"; filename=\"\"\r\nContent-Type: application/octet-stream\r\n\r\n\r\n--\(boundary)--\r\n"
                .utf8)

    @Test func aBrowsersFormIsReadPartByPart() throws {
        #expect(MultipartForm.boundary(contentType: "multipart/form-data; boundary=\(Self.boundary)") == Self.boundary)
        #expect(MultipartForm.boundary(contentType: "Multipart/Form-Data; charset=utf-8; BOUNDARY=\"a b\"") == "a b")
        let form = try #require(MultipartForm.parse(Self.browserBody, boundary: Self.boundary))
        #expect(form.parts.map(\.name) == ["csrf", "text", "audio", "other"])
        #expect(String(decoding: form.parts[1].body, as: UTF8.self) == "line one\r\nline two")
        #expect(form.parts[2].filename == "my \"voice\"; take 2.webm" && form.parts[2].contentType == "audio/webm")
        // A file's bytes are its own, even when they hold CRLF and dashes.
        #expect(Array(form.parts[2].body) == [0x1A, 0x45, 0xDF, 0xA3, 0x0D, 0x0A, 0x2D, 0x2D, 0x00, 0xFF])
        #expect(form.parts[3].filename == "" && form.parts[3].body.isEmpty)
        // A preamble before the first boundary is passed over.
        #expect(MultipartForm.parse(Array("preamble\r\n".utf8) + Self.browserBody, boundary: Self.boundary)?.parts.count == 4)
    }

    @Test func aBodyThatIsNotWellFormedIsRefusedNotGuessed() {
        let b = "xyz"
        let refused: [String] = [
            "",  // nothing
            "--xyz\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nvalue",  // no closing delimiter
            "--xyz\r\nContent-Disposition: form-data\r\n\r\nvalue\r\n--xyz--",  // no name
            "--xyz\r\nContent-Disposition: attachment; name=\"a\"\r\n\r\nv\r\n--xyz--",  // not form-data
            "--xyz\r\nno colon here\r\n\r\nv\r\n--xyz--",  // a header that is not one
            "--xyz\r\nContent-Disposition: form-data; name=\"a\r\n\r\nv\r\n--xyz--",  // an unclosed quote
            "--xyz\r\nContent-Disposition: form-data; name=\"a\"",  // headers never end
            "--xyzContent-Disposition: form-data; name=\"a\"\r\n\r\nv\r\n--xyz--",  // no line break after the boundary
        ]
        for body in refused { #expect(MultipartForm.parse(Array(body.utf8), boundary: b) == nil, "\(body)") }
        let many =
            (0...MultipartForm.maxParts).map { "--xyz\r\nContent-Disposition: form-data; name=\"f\($0)\"\r\n\r\nv\r\n" }.joined()
            + "--xyz--"
        #expect(MultipartForm.parse(Array(many.utf8), boundary: b) == nil, "more parts than a form has")
        for type in [
            "multipart/form-data", "multipart/form-data; boundary=", "multipart/mixed; boundary=x",
            "multipart/form-data; boundary=\(String(repeating: "a", count: 71))",
        ] {
            #expect(MultipartForm.boundary(contentType: type) == nil, "\(type)")
        }
    }

    /// Crash-proof: mutated bodies are read or refused; what is read writes back and reads
    /// again as the same parts, and no part holds the delimiter.
    @Test func mutatedBodiesAreReadOrRefusedAndWhatIsReadIsConsistent() {
        let seeds = [Self.browserBody, Array("--xyz\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n1\r\n--xyz--".utf8)]
        var accepted = 0
        for input in Fuzz.inputs(seeds: seeds, count: Fuzz.cases(6_000)) {
            for boundary in [Self.boundary, "xyz"] {
                guard let form = MultipartForm.parse(input, boundary: boundary) else { continue }
                accepted += 1
                let delimiter = Data("\r\n--\(boundary)".utf8)
                #expect(form.parts.allSatisfy { $0.body.range(of: delimiter) == nil })
                var again = Data()
                for part in form.parts {
                    again.append(Data("--\(boundary)\r\nContent-Disposition: form-data; name=\"\(Self.quoted(part.name))\"".utf8))
                    if let filename = part.filename { again.append(Data("; filename=\"\(Self.quoted(filename))\"".utf8)) }
                    again.append(Data("\r\n\r\n".utf8) + part.body + Data("\r\n".utf8))
                }
                again.append(Data("--\(boundary)--".utf8))
                let reread = MultipartForm.parse(Array(again), boundary: boundary)
                #expect(reread?.parts.map(\.name) == form.parts.map(\.name))
                #expect(reread?.parts.map(\.body) == form.parts.map(\.body))
            }
        }
        #expect(accepted > 100)
    }

    static func quoted(_ text: String) -> String {
        text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
    }
}
