import AttestServer
import Foundation
import MultipartKit
import NIOCore

// Benchmarks/multipart: the server's own multipart/form-data reader (`MultipartForm`) against
// vapor/multipart-kit 4.7.1's `MultipartParser` (as its `FormDataDecoder` drives it: parts
// gathered with their headers, the field name read from Content-Disposition), on what the
// journal's page sends: a recording (4 MiB of audio, random bytes: CRLFs and dashes appear
// in it as in real audio) with the entry's text fields. Each round parses the same body with
// both, in alternating order; the figures are each one's median over the rounds and the
// ratio. Then the same small bodies through both, to show what each makes of the parameters
// browsers write.
//
// Usage: attest-bench-multipart [rounds] (default 200)

let rounds = CommandLine.arguments.dropFirst().first.flatMap(Int.init) ?? 200
let boundary = "----WebKitFormBoundary7MA4YWxkTrZu0gW"

func body(audio: Int) -> [UInt8] {
    var generator = SystemRandomNumberGenerator()
    var bytes: [UInt8] = []
    func field(_ name: String, _ value: String) {
        bytes += Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"\(name)\"\r\n\r\n\(value)\r\n".utf8)
    }
    field("csrf", "3q2-7Zg_bXcEw9pL0n4KkA")
    field("date", "2026-11-28")
    field("mood", "4")
    field("note", "Slept badly; headache since the afternoon, worse near screens.")
    bytes += Array(
        "--\(boundary)\r\nContent-Disposition: form-data; name=\"audio\"; filename=\"recording.webm\"\r\nContent-Type: audio/webm\r\n\r\n"
            .utf8)
    for _ in 0..<audio { bytes.append(UInt8.random(in: 0...255, using: &generator)) }
    bytes += Array("\r\n--\(boundary)--\r\n".utf8)
    return bytes
}

/// multipart-kit's parts, gathered as its `FormDataDecoder` gathers them.
func kitParts(_ buffer: ByteBuffer, boundary: String) throws -> [MultipartPart] {
    let parser = MultipartParser(boundary: boundary)
    var parts: [MultipartPart] = [], headers = HTTPHeaders(), body = ByteBuffer()
    parser.onHeader = { headers.replaceOrAdd(name: $0, value: $1) }
    parser.onBody = { body.writeBuffer(&$0) }
    parser.onPartComplete = {
        parts.append(MultipartPart(headers: headers, body: body))
        headers = [:]
        body = ByteBuffer()
    }
    try parser.execute(buffer)
    return parts
}

func median(_ values: [Duration]) -> Double {
    let sorted = values.sorted()
    let middle = sorted[sorted.count / 2]
    return Double(middle.components.seconds) * 1e3 + Double(middle.components.attoseconds) / 1e15
}

let upload = body(audio: 4 << 20)
let uploadBuffer = ByteBuffer(bytes: upload)
var ours: [Duration] = [], theirs: [Duration] = []
let clock = ContinuousClock()
for round in 0..<rounds {
    func runOurs() {
        let started = clock.now
        // What `WebForm.read` does: the body's bytes as one array, then the parts.
        let form = MultipartForm.parse(Array(uploadBuffer.readableBytesView), boundary: boundary)
        ours.append(clock.now - started)
        precondition(form?.parts.count == 5 && form?.parts[4].body.count == 4 << 20, "MultipartForm misread the upload")
    }
    func runTheirs() {
        let started = clock.now
        let parts = try? kitParts(uploadBuffer, boundary: boundary)
        let audio = parts?.first { $0.name == "audio" }
        theirs.append(clock.now - started)
        precondition(parts?.count == 5 && audio?.body.readableBytes == 4 << 20, "multipart-kit misread the upload")
    }
    if round % 2 == 0 {
        runOurs()
        runTheirs()
    } else {
        runTheirs()
        runOurs()
    }
}
let (mine, kit) = (median(ours), median(theirs))
print(
    String(
        format:
            "RESULT upload of %d bytes, %d rounds: MultipartForm %.2f ms, multipart-kit %.2f ms (median); multipart-kit ÷ MultipartForm %.2f",
        upload.count, rounds, mine, kit, kit / mine))

// What each reads from the Content-Disposition parameters browsers write.
for filename in ["a=b.webm", "memo; take 2.webm", #"say "hi".webm"#] {
    let header = #"form-data; name="audio"; filename=""# + filename.replacingOccurrences(of: "\"", with: "\\\"") + "\""
    let small = Array("--\(boundary)\r\nContent-Disposition: \(header)\r\n\r\nx\r\n--\(boundary)--\r\n".utf8)
    let mineRead = MultipartForm.parse(small, boundary: boundary)?.parts.first
    let kitRead = (try? kitParts(ByteBuffer(bytes: small), boundary: boundary))?.first
    let kitFilename = kitRead.flatMap { part -> String? in
        // As multipart-kit reads a parameter (HTTPHeaders.getParameter): split on ";", the
        // value after the last "=", quotes trimmed.
        part.headers["Content-Disposition"].first?.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
            .first { $0.hasPrefix("filename=") }?.split(separator: "=").last
            .map { $0.trimmingCharacters(in: .init(charactersIn: #""'"#)) }
    }
    print("FILENAME sent \(filename): MultipartForm \(mineRead?.filename ?? "(refused)"), multipart-kit \(kitFilename ?? "(none)")")
}
