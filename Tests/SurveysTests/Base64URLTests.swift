import Foundation
import Testing

@testable import Surveys

@Suite("base64url and badge claims")
struct Base64URLTests {
    /// What Foundation gives, made URL-safe and unpadded: the reference.
    static func reference(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    @Test func encodesAsFoundationDoesAndDecodesBack() {
        var generator = SystemRandomNumberGenerator()
        for length in 0...70 {
            for _ in 0..<20 {
                let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
                let encoded = Base64URL.encode(bytes)
                #expect(encoded == Self.reference(bytes), "length \(length)")
                #expect(Base64URL.decode(Substring(encoded)).map(Array.init) == bytes, "length \(length)")
            }
        }
        #expect(Base64URL.encode([0xFB, 0xFF, 0xBF]) == "-_-_")  // both URL-safe characters
    }

    /// What a badge token is written with: appended after what is there, at the length
    /// `encodedCount` promises.
    @Test func appendsAfterWhatIsThereAtTheCountsLength() {
        var generator = SystemRandomNumberGenerator()
        for length in 0...70 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            var output = Array("head.".utf8)
            bytes.withUnsafeBytes { Base64URL.append($0, to: &output) }
            #expect(String(decoding: output, as: UTF8.self) == "head." + Self.reference(bytes), "length \(length)")
            #expect(Base64URL.encodedCount(length) == Self.reference(bytes).utf8.count, "length \(length)")
        }
    }

    @Test func decodingRefusesAnythingButTheOneCanonicalSpelling() {
        #expect(Base64URL.decode("QQ") == Data([0x41]))
        for bad in ["QQ==", "Q", "QR", "QUJ", "+_8", "/_8", "QQ QQ", "QQ\n", "é"] {
            #expect(Base64URL.decode(Substring(bad)) == nil, "\(bad)")
        }
        #expect(Base64URL.decode("QUI") == Data("AB".utf8))
        #expect(Base64URL.decode("") == Data())
    }

    @Test func claimsAreCompactJSONWithSortedKeysThatDecodeBack() throws {
        let claims = BadgeClaims(
            campus: "north", sub: "5f0c\"\\\u{1}é", date: "2026-11-22", color: "green", iat: 1_795_000_000, exp: 1_795_050_000)
        #expect(claims.json == #"{"campus":"north","color":"green","date":"2026-11-22","exp":1795050000,"iat":1795000000,"sub":"5f0c\"\\\u0001é"}"#)
        #expect(BadgeClaims(verifiedJSON: Data(claims.json.utf8)) == claims)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let plain = BadgeClaims(campus: "north", sub: UUID().uuidString.lowercased(), date: "2026-11-22", color: "red", iat: 1, exp: 2)
        #expect(plain.json == String(decoding: try encoder.encode(plain), as: UTF8.self))
    }
}
