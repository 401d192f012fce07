import AttestFoundation
import Foundation
import Testing

@Suite("base64url")
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

    /// `Data`'s spelling of the same codec, which sign-in, sessions and cookies use.
    @Test func dataEncodesAndDecodesWithTheSameCodec() {
        let bytes = Data((0..<33).map { UInt8($0 * 7 % 256) })
        #expect(bytes.base64URLEncoded() == Base64URL.encode(bytes))
        #expect(Data(base64URLEncoded: bytes.base64URLEncoded()) == bytes)
        #expect(Data(base64URLEncoded: "QQ==") == nil)  // padding is not base64url as JOSE writes it
        #expect(Data(base64URLEncoded: "QR") == nil)  // unused bits set: not the one spelling
    }
}
