import AttestAPI
import AttestServer
import AttestWeb
import Yams

/// A JSON-like value with ordered keys: `openapi.yaml` as libyaml reads it (through Yams), so
/// tests walk the same document the server serves.
indirect enum OpenAPIValue: Sendable, Equatable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    case object([Member])
    case array([OpenAPIValue])
    case string(String)
    case integer(Int)
    case bool(Bool)
    /// YAML's null (`null`, `~`): an enum's null, beside `type: [T, "null"]`.
    case null

    struct Member: Sendable, Equatable {
        var key: String
        var value: OpenAPIValue
    }

    init(stringLiteral value: String) { self = .string(value) }
    init(integerLiteral value: Int) { self = .integer(value) }
    init(booleanLiteral value: Bool) { self = .bool(value) }
    init(arrayLiteral elements: OpenAPIValue...) { self = .array(elements) }
    init(dictionaryLiteral elements: (String, OpenAPIValue)...) {
        self = .object(elements.map { Member(key: $0.0, value: $0.1) })
    }

    /// The member named `key` of an object.
    subscript(key: String) -> OpenAPIValue? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.key == key }?.value
    }

    var members: [Member] {
        if case .object(let members) = self { return members }
        return []
    }

    var stringValue: String? {
        if case .string(let text) = self { return text }
        return nil
    }
}

extension OpenAPIValue {
    struct Unreadable: Error, CustomStringConvertible {
        var description: String
    }

    /// The YAML text's value; a float, a null or an alias is refused (the document has none).
    init(yaml: String) throws {
        guard let node = try Yams.compose(yaml: yaml) else { throw Unreadable(description: "an empty document") }
        self = try Self(node)
    }

    private init(_ node: Node) throws {
        switch node {
        case .mapping(let mapping):
            self = .object(
                try mapping.map { key, value in
                    guard let name = key.string else {
                        throw Unreadable(description: "a key that is not a string at \(key.mark?.description ?? "?")")
                    }
                    return Member(key: name, value: try OpenAPIValue(value))
                })
        case .sequence(let sequence): self = .array(try sequence.map(OpenAPIValue.init))
        case .scalar(let scalar):
            switch Tag.Name(rawValue: node.tag.rawValue) {
            case .int: self = .integer(try node.int ?? { throw Unreadable(description: "an integer out of range: \(scalar.string)") }())
            case .bool: self = .bool(node.bool ?? false)
            case .null: self = .null
            case .str: self = .string(scalar.string)
            default: throw Unreadable(description: "a \(node.tag.rawValue) scalar: \(scalar.string)")
            }
        case .alias: throw Unreadable(description: "an alias")
        }
    }
}

extension OpenAPIDocument {
    /// `openapi.yaml` as a value; an empty object when it does not parse (which
    /// `OpenAPIDocumentTests` reports).
    static let value: OpenAPIValue = (try? OpenAPIValue(yaml: yaml)) ?? .object([])
}
