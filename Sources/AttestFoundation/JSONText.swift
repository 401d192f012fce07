import Foundation

/// JSON text written straight into UTF-8 bytes, for the hottest responses (a submission's
/// 201, the admin dashboard): no `String` is grown, so no append pays for String's
/// bookkeeping (a 30-day dashboard spent over half of its server time appending to a String,
/// docs/performance.md, "fifteenth round"). The caller writes keys in sorted order, as
/// `JSONText` does, so equal values give equal text.
public struct JSONBytes: Sendable {
    public private(set) var bytes: [UInt8]

    public init(capacity: Int = 256) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    /// Text written as it is: punctuation and keys known when the code was written.
    public mutating func literal(_ text: StaticString) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    /// `text` as a JSON string literal, quotes included, escaped as `JSONText.appendString` does.
    public mutating func string(_ text: String) {
        bytes.append(UInt8(ascii: "\""))
        var text = text
        text.withUTF8 { utf8 in
            var pending = 0
            for index in utf8.indices {
                let byte = utf8[index]
                guard JSONText.needsEscape(byte) else { continue }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[pending..<index]))
                bytes.append(contentsOf: JSONText.escape(byte).utf8)
                pending = index + 1
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[pending...]))
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// An integer in decimal; `Int.min` too (its magnitude is taken as a `UInt`).
    public mutating func integer(_ value: Int) {
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        // UInt.max has 20 digits.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var start = digits.count
            repeat {
                start -= 1
                digits[start] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: digits[start...]))
        }
    }

    /// A number as `JSONText.appendNumber` writes it: integers below 2^53 without a fraction,
    /// others in Swift's shortest round-trip form, `null` for a non-finite one.
    public mutating func number(_ number: Double) {
        guard number.isFinite else { return literal("null") }
        if let integer = JSONText.integral(number) {
            self.integer(integer)
        } else {
            bytes.append(contentsOf: number.description.utf8)
        }
    }

    public mutating func bool(_ value: Bool) {
        value ? literal("true") : literal("false")
    }

    /// What another `JSONBytes` wrote, as it is (JSON kept from an earlier response).
    public mutating func append(_ written: JSONBytes) {
        bytes.append(contentsOf: written.bytes)
    }

    public var isEmpty: Bool { bytes.isEmpty }

    /// The text written, as a `String` (for tests and logs; responses send `bytes`).
    public var text: String { String(decoding: bytes, as: UTF8.self) }
}

/// Writes JSON text without `JSONEncoder`, for the hot paths: object keys in sorted order, so
/// equal values give equal text.
public enum JSONText {
    /// `text` as a JSON string literal, quotes included.
    public static func appendString(_ text: String, to output: inout String) {
        output.append("\"")
        var pending = text.utf8.startIndex
        let utf8 = text.utf8
        var index = pending
        while index != utf8.endIndex {
            let byte = utf8[index]
            if needsEscape(byte) {
                output.append(contentsOf: text[pending..<index])
                output.append(escape(byte))
                pending = utf8.index(after: index)
            }
            index = utf8.index(after: index)
        }
        output.append(contentsOf: text[pending...])
        output.append("\"")
    }

    /// Whether a byte of UTF-8 text must be escaped in a JSON string: a control character, a
    /// quote or a backslash (`JSONBytes` writes by the same rule).
    static func needsEscape(_ byte: UInt8) -> Bool {
        byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\")
    }

    /// The escape for a byte that `needsEscape`: the short form where JSON has one, else `\u00XX`.
    static func escape(_ byte: UInt8) -> String {
        switch byte {
        case UInt8(ascii: "\""): return "\\\""
        case UInt8(ascii: "\\"): return "\\\\"
        case 0x0A: return "\\n"
        case 0x0D: return "\\r"
        case 0x09: return "\\t"
        default:
            let hex = Array("0123456789abcdef".utf8)
            return "\\u00" + String(decoding: [hex[Int(byte >> 4)], hex[Int(byte & 0xF)]], as: UTF8.self)
        }
    }

    /// A number: integers below 2^53 without a fraction, others in Swift's shortest round-trip
    /// form; `null` for a non-finite one, which JSON cannot hold.
    public static func appendNumber(_ number: Double, to output: inout String) {
        guard number.isFinite else { return output.append("null") }
        if let integer = integral(number) {
            output.append(String(integer))
        } else {
            output.append(number.description)
        }
    }

    /// `number` as an integer when JSON should show it without a fraction: whole and below
    /// 2^53 in magnitude (where every integer is a Double). Never traps (no `Int(Double)`).
    static func integral(_ number: Double) -> Int? {
        abs(number) < 9_007_199_254_740_992 ? Int(exactly: number) : nil
    }
}
