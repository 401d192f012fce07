import Foundation

/// base64url without padding (RFC 4648 §5), as JOSE uses it, written and read byte by byte.
/// (Every badge read signs a token; Foundation's base64 and string replacing cost three
/// times the signature.) Decoding is strict: no padding, no other alphabet, and the unused
/// bits of the last character must be zero, so one token has one spelling.
public enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
    private static let values: [UInt8] = {
        var values = [UInt8](repeating: 0xFF, count: 256)
        for (value, character) in alphabet.enumerated() { values[Int(character)] = UInt8(value) }
        return values
    }()

    /// How many characters `count` bytes take, unpadded.
    public static func encodedCount(_ count: Int) -> Int { (count * 4 + 2) / 3 }

    public static func encode(_ data: some DataProtocol) -> String {
        let bytes = Array(data)
        return bytes.withUnsafeBytes { bytes in
            String(unsafeUninitializedCapacity: encodedCount(bytes.count)) { write(bytes, to: $0) }
        }
    }

    /// Appends `bytes` in base64url to `output`.
    public static func append(_ bytes: UnsafeRawBufferPointer, to output: inout [UInt8]) {
        let start = output.count, count = encodedCount(bytes.count)
        output.append(contentsOf: repeatElement(0, count: count))
        output.withUnsafeMutableBufferPointer { buffer in
            _ = write(bytes, to: UnsafeMutableBufferPointer(rebasing: buffer[start..<start + count]))
        }
    }

    /// Writes `bytes` in base64url at the start of `output`, which has room for
    /// `encodedCount(bytes.count)`; returns how many it wrote.
    private static func write(_ bytes: UnsafeRawBufferPointer, to output: UnsafeMutableBufferPointer<UInt8>) -> Int {
        var written = 0
        func put(_ bits: UInt32, _ shift: UInt32) {
            output[written] = alphabet[Int(bits >> shift & 63)]
            written += 1
        }
        var index = 0
        while index + 3 <= bytes.count {
            let bits = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
            put(bits, 18)
            put(bits, 12)
            put(bits, 6)
            put(bits, 0)
            index += 3
        }
        switch bytes.count - index {
        case 1:
            let bits = UInt32(bytes[index]) << 16
            put(bits, 18)
            put(bits, 12)
        case 2:
            let bits = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8
            put(bits, 18)
            put(bits, 12)
            put(bits, 6)
        default:
            break
        }
        return written
    }

    public static func decode(_ text: Substring) -> Data? { decodeBytes(text.utf8).map { Data($0) } }

    /// The bytes of base64url `characters` (UTF-8), strictly; nil for anything else. Into an
    /// array first: appending to `Data` byte by byte costs several times the decoding.
    public static func decodeBytes(_ characters: some Collection<UInt8>) -> [UInt8]? {
        if let decoded = characters.withContiguousStorageIfAvailable({ decode(buffer: $0) }) { return decoded }
        return Array(characters).withUnsafeBufferPointer { decode(buffer: $0) }
    }

    /// The decoding itself, over contiguous bytes: a generic collection's iterator, unspecialised
    /// across modules, costs several times the work.
    static func decode(buffer characters: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        guard characters.count % 4 != 1 else { return nil }
        var failed = false
        let output = [UInt8](unsafeUninitializedCapacity: characters.count * 3 / 4) { output, written in
            values.withUnsafeBufferPointer { values in
                var bits: UInt32 = 0, pending = 0
                for character in characters {
                    let value = values[Int(character)]
                    guard value != 0xFF else {
                        failed = true
                        return
                    }
                    bits = bits << 6 | UInt32(value)
                    pending += 6
                    if pending >= 8 {
                        pending -= 8
                        output[written] = UInt8(truncatingIfNeeded: bits >> UInt32(pending))
                        written += 1
                    }
                }
                if bits & (1 << UInt32(pending) - 1) != 0 { failed = true }
            }
        }
        return failed ? nil : output
    }
}

extension Data {
    /// This data in base64url without padding (`Base64URL.encode`).
    public func base64URLEncoded() -> String { Base64URL.encode(self) }

    /// The bytes of base64url text without padding, strictly (`Base64URL.decode`); nil for
    /// anything else.
    public init?(base64URLEncoded text: some StringProtocol) {
        guard let data = Base64URL.decode(Substring(text)) else { return nil }
        self = data
    }
}
