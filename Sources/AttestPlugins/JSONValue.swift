/// Any JSON value: plugin settings arrive as one of these.
public enum JSONValue: Sendable, Hashable, Codable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let flag = try? container.decode(Bool.self) {
            self = .bool(flag)
        } else if let number = try? container.decode(Double.self) {
            self = .number(number)
        } else if let text = try? container.decode(String.self) {
            self = .string(text)
        } else if let array = try? container.decode([JSONValue].self) {
            self = .array(array)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let flag): try container.encode(flag)
        case .number(let number): try container.encode(number)
        case .string(let text): try container.encode(text)
        case .array(let array): try container.encode(array)
        case .object(let object): try container.encode(object)
        }
    }

    public subscript(key: String) -> JSONValue? {
        if case .object(let object) = self { return object[key] }
        return nil
    }
}

// MARK: - JSON text

extension JSONValue {
    /// Parses one JSON text (RFC 8259) straight from UTF-8 bytes: a request body's path,
    /// without `JSONDecoder`'s `Codable` machinery. Strict: no trailing commas, comments,
    /// leading zeros, non-finite numbers, invalid UTF-8, unpaired surrogates, a key repeated
    /// in one object (parsers disagree on which one counts), or anything after the value;
    /// nesting deeper than `maxDepth` is refused.
    public init(parsing bytes: UnsafeRawBufferPointer, maxDepth: Int = 64) throws(JSONSyntaxError) {
        var parser = JSONParser(bytes: bytes, maxDepth: maxDepth)
        parser.skipWhitespace()
        self = try parser.value(depth: 0)
        parser.skipWhitespace()
        guard parser.index == bytes.count else { throw parser.failure("text after the JSON value") }
    }

    /// Parses one JSON text from UTF-8 bytes; see `init(parsing:maxDepth:)`.
    public init(parsing bytes: some Collection<UInt8>) throws(JSONSyntaxError) {
        let result: Result<JSONValue, JSONSyntaxError> = Array(bytes).withUnsafeBytes { raw in
            Result { () throws(JSONSyntaxError) in try JSONValue(parsing: raw) }
        }
        self = try result.get()
    }
}

/// Why a text is not JSON, and where (a byte offset).
public struct JSONSyntaxError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public var offset: Int
    public var description: String { "\(message) at byte \(offset)" }

    public init(message: String, offset: Int) {
        self.message = message
        self.offset = offset
    }
}

struct JSONParser {
    let bytes: UnsafeRawBufferPointer
    let maxDepth: Int
    var index = 0
    /// The members of the objects being parsed, innermost last: an object's dictionary is
    /// made once its members are all read, at their count, rather than grown key by key
    /// (a submission's 14 answers cost five allocations and rehashes that way).
    var members: [(key: String, offset: Int, value: JSONValue)] = []

    init(bytes: UnsafeRawBufferPointer, maxDepth: Int) {
        self.bytes = bytes
        self.maxDepth = maxDepth
    }

    func failure(_ message: String) -> JSONSyntaxError { JSONSyntaxError(message: message, offset: index) }

    var current: UInt8? { index < bytes.count ? bytes[index] : nil }

    mutating func skipWhitespace() {
        while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x0A || bytes[index] == 0x0D || bytes[index] == 0x09 {
            index += 1
        }
    }

    mutating func expect(_ literal: StaticString, _ value: JSONValue) throws(JSONSyntaxError) -> JSONValue {
        let count = literal.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw failure("unexpected end of text") }
        for offset in 0..<count where bytes[index + offset] != literal.utf8Start[offset] { throw failure("unexpected character") }
        index += count
        return value
    }

    mutating func value(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        guard let byte = current else { throw failure("unexpected end of text") }
        switch byte {
        case UInt8(ascii: "{"):
            guard depth < maxDepth else { throw failure("nesting deeper than \(maxDepth)") }
            index += 1
            skipWhitespace()
            if current == UInt8(ascii: "}") {
                index += 1
                return .object([:])
            }
            let first = members.count
            defer { members.removeSubrange(first...) }
            while true {
                skipWhitespace()
                guard current == UInt8(ascii: "\"") else { throw failure("expected a quoted key") }
                let keyAt = index
                let key = try string()
                skipWhitespace()
                guard current == UInt8(ascii: ":") else { throw failure("expected ':' after a key") }
                index += 1
                skipWhitespace()
                members.append((key, keyAt, try value(depth: depth + 1)))
                skipWhitespace()
                switch current {
                case UInt8(ascii: ",")?: index += 1
                case UInt8(ascii: "}")?:
                    index += 1
                    return .object(try object(from: first))
                default: throw failure("expected ',' or '}' in an object")
                }
            }
        case UInt8(ascii: "["):
            guard depth < maxDepth else { throw failure("nesting deeper than \(maxDepth)") }
            index += 1
            var array: [JSONValue] = []
            skipWhitespace()
            if current == UInt8(ascii: "]") {
                index += 1
                return .array(array)
            }
            while true {
                skipWhitespace()
                array.append(try value(depth: depth + 1))
                skipWhitespace()
                switch current {
                case UInt8(ascii: ",")?: index += 1
                case UInt8(ascii: "]")?:
                    index += 1
                    return .array(array)
                default: throw failure("expected ',' or ']' in an array")
                }
            }
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): return try expect("true", .bool(true))
        case UInt8(ascii: "f"): return try expect("false", .bool(false))
        case UInt8(ascii: "n"): return try expect("null", .null)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try number())
        default: throw failure("unexpected character")
        }
    }

    /// The object of the members from `first` on; a key given twice is refused where it
    /// was given the second time.
    func object(from first: Int) throws(JSONSyntaxError) -> [String: JSONValue] {
        var object = [String: JSONValue](minimumCapacity: members.count - first)
        for member in members[first...] {
            guard object.updateValue(member.value, forKey: member.key) == nil else {
                throw JSONSyntaxError(message: "the key \"\(member.key.prefix(64))\" repeated", offset: member.offset)
            }
        }
        return object
    }

    static func isDigit(_ byte: UInt8?) -> Bool { byte.map { $0 >= 0x30 && $0 <= 0x39 } ?? false }

    mutating func number() throws(JSONSyntaxError) -> Double {
        let start = index
        if current == UInt8(ascii: "-") { index += 1 }
        if current == UInt8(ascii: "0") {
            index += 1
        } else {
            guard Self.isDigit(current) else { throw failure("expected a digit") }
            while Self.isDigit(current) { index += 1 }
        }
        if current == UInt8(ascii: ".") {
            index += 1
            guard Self.isDigit(current) else { throw failure("expected a digit after '.'") }
            while Self.isDigit(current) { index += 1 }
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            index += 1
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { index += 1 }
            guard Self.isDigit(current) else { throw failure("expected a digit in the exponent") }
            while Self.isDigit(current) { index += 1 }
        }
        let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
        guard let number = Double(text), number.isFinite else {
            index = start
            throw failure("a number too large for a double")
        }
        return number
    }

    mutating func string() throws(JSONSyntaxError) -> String {
        index += 1  // the opening quote
        let start = index
        // The common case: no escapes, so the bytes are the string.
        while index < bytes.count, bytes[index] != UInt8(ascii: "\""), bytes[index] != UInt8(ascii: "\\"), bytes[index] >= 0x20 {
            index += 1
        }
        if current == UInt8(ascii: "\"") {
            index += 1
            return try utf8(UnsafeRawBufferPointer(rebasing: bytes[start..<(index - 1)]), at: start)
        }
        var scalars = Array(UnsafeRawBufferPointer(rebasing: bytes[start..<index]))
        while true {
            guard let byte = current else { throw failure("unterminated string") }
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                guard let text = String(validating: scalars, as: UTF8.self) else {
                    throw JSONSyntaxError(message: "invalid UTF-8 in a string", offset: start)
                }
                return text
            case UInt8(ascii: "\\"):
                index += 1
                guard let escape = current else { throw failure("unterminated string") }
                index += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): scalars.append(escape)
                case UInt8(ascii: "b"): scalars.append(0x08)
                case UInt8(ascii: "f"): scalars.append(0x0C)
                case UInt8(ascii: "n"): scalars.append(0x0A)
                case UInt8(ascii: "r"): scalars.append(0x0D)
                case UInt8(ascii: "t"): scalars.append(0x09)
                case UInt8(ascii: "u"):
                    var code = try hex4()
                    if (0xD800...0xDBFF).contains(code) {
                        guard current == UInt8(ascii: "\\"), index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "u") else {
                            throw failure("an unpaired surrogate")
                        }
                        index += 2
                        let low = try hex4()
                        guard (0xDC00...0xDFFF).contains(low) else { throw failure("an unpaired surrogate") }
                        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00...0xDFFF).contains(code) {
                        throw failure("an unpaired surrogate")
                    }
                    guard let scalar = Unicode.Scalar(code) else { throw failure("a bad \\u escape") }
                    scalars.append(contentsOf: String(Character(scalar)).utf8)
                default: throw failure("an unknown escape")
                }
            default:
                guard byte >= 0x20 else { throw failure("a control character in a string") }
                scalars.append(byte)
                index += 1
            }
        }
    }

    mutating func hex4() throws(JSONSyntaxError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw failure("unterminated string") }
        var code: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw failure("a bad \\u escape")
            }
            code = code << 4 | UInt32(digit)
            index += 1
        }
        return code
    }

    func utf8(_ raw: UnsafeRawBufferPointer, at offset: Int) throws(JSONSyntaxError) -> String {
        guard let text = String(validating: raw, as: UTF8.self) else {
            throw JSONSyntaxError(message: "invalid UTF-8 in a string", offset: offset)
        }
        return text
    }
}
