/// A JSON-like value with ordered keys, written out as block-style YAML. The OpenAPI
/// document is one of these, so tests can walk the same value the server serves.
public indirect enum OpenAPIValue: Sendable, Equatable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    case object([Member])
    case array([OpenAPIValue])
    case string(String)
    case integer(Int)
    case bool(Bool)

    public struct Member: Sendable, Equatable {
        public var key: String
        public var value: OpenAPIValue
    }

    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .integer(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: OpenAPIValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, OpenAPIValue)...) {
        self = .object(elements.map { Member(key: $0.0, value: $0.1) })
    }

    /// The member named `key` of an object.
    public subscript(key: String) -> OpenAPIValue? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.key == key }?.value
    }

    public var members: [Member] {
        if case .object(let members) = self { return members }
        return []
    }

    public var stringValue: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    /// Block-style YAML; every string is double-quoted, so nothing is read as another type.
    public var yaml: String { lines(indent: 0).joined(separator: "\n") + "\n" }

    private func lines(indent: Int) -> [String] {
        let pad = String(repeating: " ", count: indent)
        switch self {
        case .object(let members):
            if members.isEmpty { return [pad + "{}"] }
            return members.flatMap { member -> [String] in
                let key = pad + Self.key(member.key) + ":"
                if let scalar = member.value.inline { return [key + " " + scalar] }
                return [key] + member.value.lines(indent: indent + 2)
            }
        case .array(let items):
            if items.isEmpty { return [pad + "[]"] }
            return items.flatMap { item -> [String] in
                if let scalar = item.inline { return [pad + "- " + scalar] }
                var nested = item.lines(indent: indent + 2)
                nested[0] = pad + "- " + nested[0].dropFirst(indent + 2)
                return nested
            }
        default:
            return [pad + (inline ?? "")]
        }
    }

    /// The value on one line, for scalars and empty collections.
    private var inline: String? {
        switch self {
        case .string(let text): Self.quoted(text)
        case .integer(let number): String(number)
        case .bool(let flag): flag ? "true" : "false"
        case .object(let members) where members.isEmpty: "{}"
        case .array(let items) where items.isEmpty: "[]"
        default: nil
        }
    }

    private static func key(_ key: String) -> String {
        let plain =
            !key.isEmpty && key.unicodeScalars.allSatisfy { $0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_" }
            && !("0"..."9").contains(key.unicodeScalars.first!)
        return plain ? key : quoted(key)
    }

    private static func quoted(_ text: String) -> String {
        var result = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\t": result += "\\t"
            case _ where scalar.value < 0x20: result += "\\x" + String(scalar.value, radix: 16).leftPadded(2)
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }
}

extension String {
    fileprivate func leftPadded(_ width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}
