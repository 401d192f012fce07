import AttestPluginsTesting
import AttestTestSupport
import Foundation
import Identity
import Surveys
import Testing

@testable import AttestServer
@testable import AttestWeb

/// The door scanner's server path (`POST …/badges/scan`, issue 60): the server reads QR codes drawn
/// by another library than the server's (PyPI `qrcode`) and by the server's own libqrencode,
/// at several sizes, turned, blurred, as JPEG of three qualities and WebP, and small in a
/// larger photo; each answers as `badges/verify` answers the token. What is not an image, does
/// not decode, claims too many pixels or holds no badge gets its 4xx, and nothing crashes.
@Suite("Badges scanned from images")
struct BadgeScanTests {
    static let scanPath = "/v1/campuses/{campus}/badges/scan"
    static let images = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appending(path: "Images/qr_images.py")

    static func type(of name: String) -> String {
        name.hasSuffix(".jpg") ? "image/jpeg" : name.hasSuffix(".webp") ? "image/webp" : "image/png"
    }

    @Test func aBadgeIsReadFromPhotosAndFramesAndWhatIsNotOneIsRefusedClearly() async throws {
        let clock = TestClock(Date())
        let (server, north) = try await AttestationTests.setUp(clock: clock)
        let (_, member) = try await server.user("m@example.edu", at: north)
        let (_, screener) = try await server.user("door@example.edu", at: north, roles: [.screener])
        try await server.run { api in
            let submitted = try await api.send(
                .post, "/v1/campuses/north/attestations", template: BadgeTests.submitPath, token: member,
                json: AttestationTests.body(#"{"fever": false, "cough": false}"#))
            #expect(submitted.status == 201)
            let badge = try await api.send(.get, "/v1/campuses/north/me/badge", template: BadgeTests.badgePath, token: member)
            let token = try #require(badge.json["token"] as? String)
            let color = try #require(badge.json["color"] as? String)

            // The images, made by Python's qrcode and Pillow; libqrencode's modules as the page draws them.
            let directory = FileManager.default.temporaryDirectory.appending(path: "attest-scan-\(UUID().uuidString.prefix(8))")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let modules = try #require(QRCode.modules(token)).map { $0.map { $0 ? 1 : 0 } }
            let request = try JSONSerialization.data(withJSONObject: [
                "badge": token, "other": "https://example.edu/not-a-badge", "modules": modules,
            ])
            let requestFile = directory.appending(path: "request.json")
            try request.write(to: requestFile)
            let made = try await ChildProcess.run(
                ["/usr/bin/env", "python3", Self.images.path, directory.path, requestFile.path], timeout: .seconds(120))
            #expect(made.status == 0, "qr_images.py: \(made.stderr)")
            let names = made.stdout.split(separator: "\n").map(String.init)
            #expect(names.count == 19, "\(names)")

            func scan(_ name: String, type: String? = nil, as who: String? = nil) async throws -> APIClient.Reply {
                let bytes = try [UInt8](Data(contentsOf: directory.appending(path: name)))
                return try await api.send(
                    .post, "/v1/campuses/north/badges/scan", template: Self.scanPath, token: who ?? screener, bytes: bytes,
                    contentType: type ?? Self.type(of: name))
            }
            for name in names where name.hasPrefix("qrcode") || name.hasPrefix("libqrencode") {
                let reply = try await scan(name)
                #expect(reply.status == 200, "\(name): \(reply.status) \(reply.body)")
                #expect(reply.json["valid"] as? Bool == true && reply.json["color"] as? String == color, "\(name): \(reply.body)")
            }

            // Not a badge, no code, too many pixels, too wide, truncated, not an image.
            let notABadge = try await scan("not-a-badge.png")
            #expect(notABadge.status == 422 && notABadge.problem.type == "/problems/not-a-badge", "\(notABadge.body)")
            let blank = try await scan("blank.png")
            #expect(blank.status == 422 && blank.problem.type == "/problems/no-qr-code", "\(blank.body)")
            #expect(blank.problem.detail.contains("hold the badge's code whole and flat in the frame"))
            let huge = try await scan("too-many-pixels.png")
            #expect(huge.status == 422 && huge.problem.fields == ["body"], "\(huge.body)")
            #expect(huge.body.contains("is 7000×7000 pixels; at most 40 megapixels for a JPEG, 16 for a PNG or WebP"), "\(huge.body)")
            let wide = try await scan("too-wide.png")
            #expect(wide.status == 422 && wide.body.contains("is 20000×1 pixels"), "\(wide.body)")
            let truncated = try await scan("truncated.jpg")
            #expect(truncated.status == 422 && truncated.body.contains("does not decode"), "\(truncated.body)")
            let text = try await scan("not-an-image.png")
            #expect(text.status == 422 && text.body.contains("is not a JPEG, PNG or WebP image"), "\(text.body)")
            // The type must be an image's; the body at most 2 MB; only screeners and admins scan.
            let plain = try await scan("qrcode-4px.png", type: "text/plain")
            #expect(plain.status == 415, "\(plain.body)")
            // A type of nothing but separators is no type: 415, never a trap on the empty split.
            for odd in [";", " ; ", ";;charset=utf-8", " "] {
                #expect(try await scan("qrcode-4px.png", type: odd).status == 415, "Content-Type \(odd)")
            }
            let large = try await api.send(
                .post, "/v1/campuses/north/badges/scan", template: Self.scanPath, token: screener,
                bytes: [UInt8](repeating: 0xFF, count: BadgeHTTP.maxScanBytes + 1), contentType: "image/jpeg")
            #expect(large.status == 413, "\(large.body)")
            #expect(try await scan("qrcode-4px.png", as: member).status == 403)
            #expect(try await scan("qrcode-4px.png", as: "no-such-token").status == 401)
        }
    }

    /// Another campus's badge, scanned: not valid, for the reason `verify` gives.
    @Test func anotherCampussBadgeIsAnsweredAsVerifyAnswersIt() async throws {
        let clock = TestClock(Date())
        let (server, north) = try await AttestationTests.setUp(clock: clock)
        let south = try await server.campus("south")
        _ = try await QuestionnaireStore(client: server.pool).publish(campus: south, draft: AttestationTests.draft, actor: "test")
        let (_, southMember) = try await server.user("m@example.edu", at: south)
        let (_, screener) = try await server.user("door@example.edu", at: north, roles: [.screener])
        try await server.run { api in
            _ = try await api.send(
                .post, "/v1/campuses/south/attestations", template: BadgeTests.submitPath, token: southMember,
                json: AttestationTests.body(#"{"fever": false, "cough": false}"#))
            let badge = try await api.send(.get, "/v1/campuses/south/me/badge", template: BadgeTests.badgePath, token: southMember)
            let token = try #require(badge.json["token"] as? String)
            let modules = try #require(QRCode.modules(token))
            let reply = try await api.send(
                .post, "/v1/campuses/north/badges/scan", template: Self.scanPath, token: screener, bytes: Self.png(modules),
                contentType: "image/png")
            let verified = try await BadgeTests.verify(api, token, at: "north", as: screener)
            #expect(reply.status == 200, "\(reply.body)")
            #expect(reply.json["valid"] as? Bool == false, "\(reply.body)")
            #expect(reply.json["reason"] as? String == verified.json["reason"] as? String, "\(reply.body) against \(verified.body)")
            #expect(reply.json["detail"] as? String == verified.json["detail"] as? String)
        }
    }

    /// Bytes no decoder should trip on: every prefix of a real JPEG, PNG and WebP header, and
    /// random bytes behind each format's magic, read on the calling thread (no crash, no hang).
    @Test func damagedImagesNeverCrashTheDecoder() throws {
        var generator = SystemRandomNumberGenerator()
        let magics: [[UInt8]] = [
            [0xFF, 0xD8, 0xFF, 0xE0], [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A], Array("RIFF\u{0}\u{0}\u{0}\u{0}WEBPVP8 ".utf8),
        ]
        let png = Self.png([[true, false], [false, true]])
        for length in 0..<png.count {
            // Without its 12-byte IEND chunk the image is whole: read, and no code in it.
            let outcome = Array(png.prefix(length)).withUnsafeBytes { BadgeImage.decode($0) }
            let expected: BadgeImage.Outcome = length < 8 ? .notAnImage : length < png.count - 12 ? .unreadable : .noCode
            #expect(outcome == expected, "the first \(length) bytes: \(outcome)")
        }
        #expect(png.withUnsafeBytes { BadgeImage.decode($0) } == .noCode)
        for magic in magics {
            for _ in 0..<300 {
                let bytes =
                    magic + (0..<Int.random(in: 0...600, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
                let outcome = bytes.withUnsafeBytes { BadgeImage.decode($0) }
                #expect(
                    [.unreadable, .noCode, .notAnImage].contains(outcome) || { if case .tooManyPixels = outcome { true } else { false } }(),
                    "\(outcome)")
            }
        }
    }

    /// The decoders and the QR reader fed real photos of codes (JPEG, PNG, WebP, from qr_images.py)
    /// mutated as the parsers' fuzz tests mutate input (`Fuzz.mutate`: bits flipped, runs
    /// dropped, repeated, cut short; `ATTEST_FUZZ_SEED` replays, `ATTEST_FUZZ_CASES` runs longer):
    /// every one answered, none crashing. The C and C++ files alone took 6,000 such images
    /// (JPEG, PNG, WebP) under AddressSanitizer and UndefinedBehaviorSanitizer without a report
    /// (36,000 before, with ZBar).
    @Test func mutatedPhotosNeverCrashTheDecoder() async throws {
        let directory = FileManager.default.temporaryDirectory.appending(path: "attest-fuzz-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let request = directory.appending(path: "request.json")
        try Data(#"{"badge": "eyJhbGciOiJFUzI1NiJ9.eyJjYW1wdXMiOiJub3J0aCJ9.c2ln", "other": "x", "modules": [[1, 0], [0, 1]]}"#.utf8)
            .write(to: request)
        let made = try await ChildProcess.run(
            ["/usr/bin/env", "python3", Self.images.path, directory.path, request.path], timeout: .seconds(120))
        #expect(made.status == 0, "qr_images.py: \(made.stderr)")
        let photos = made.stdout.split(separator: "\n").filter { $0.hasPrefix("qrcode") || $0.hasPrefix("libqrencode") }
        var generator = SeededGenerator(seed: Fuzz.seed)
        var answered = 0, found = 0
        for name in photos {
            let original = try [UInt8](Data(contentsOf: directory.appending(path: String(name))))
            for _ in 0..<Fuzz.cases(60) {
                let outcome = Fuzz.mutate(original, using: &generator).withUnsafeBytes { BadgeImage.decode($0) }
                answered += 1
                if case .found = outcome { found += 1 }
            }
        }
        #expect(photos.count == 13 && answered == photos.count * Fuzz.cases(60), "seed \(Fuzz.seed)")
        // Some mutations leave the code readable: the images were real, not refused whole.
        #expect(found > 0, "seed \(Fuzz.seed)")
    }

    /// A PNG of `modules` (8 px a module, a 4-module quiet zone), written by hand: grey, 8 bits,
    /// stored (uncompressed) deflate blocks, so no library of the server's draws it.
    static func png(_ modules: [[Bool]]) -> [UInt8] {
        let scale = 8, side = (modules.count + 8) * scale
        var raw: [UInt8] = []
        for y in 0..<side {
            raw.append(0)
            for x in 0..<side {
                let (row, column) = (y / scale - 4, x / scale - 4)
                let dark = modules.indices.contains(row) && modules[row].indices.contains(column) && modules[row][column]
                raw.append(dark ? 0 : 255)
            }
        }
        var deflate: [UInt8] = [0x78, 0x01]
        var offset = 0
        while offset < raw.count {
            let block = min(65_535, raw.count - offset)
            let last: UInt8 = offset + block == raw.count ? 1 : 0
            deflate += [last, UInt8(block & 0xFF), UInt8(block >> 8), UInt8(~block & 0xFF), UInt8((~block >> 8) & 0xFF)]
            deflate += raw[offset..<offset + block]
            offset += block
        }
        var a: UInt32 = 1, b: UInt32 = 0
        for byte in raw {
            a = (a + UInt32(byte)) % 65_521
            b = (b + a) % 65_521
        }
        deflate += bigEndian((b << 16) | a)
        func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
            let body = Array(type.utf8) + data
            return bigEndian(UInt32(data.count)) + body + bigEndian(crc32(body))
        }
        let header = bigEndian(UInt32(side)) + bigEndian(UInt32(side)) + [8, 0, 0, 0, 0]
        return [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + chunk("IHDR", header) + chunk("IDAT", deflate) + chunk("IEND", [])
    }

    static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)]
    }

    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = (crc >> 1) ^ (crc & 1 == 1 ? 0xEDB8_8320 : 0) }
        }
        return ~crc
    }
}
