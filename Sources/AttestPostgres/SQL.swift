import Foundation

/// A SQL statement whose interpolated values travel as bound parameters.
///
/// ```swift
/// let sql: SQL = "SELECT id FROM users WHERE campus_id = \(campus) AND email = \(email)"
/// // text: SELECT id FROM users WHERE campus_id = $1 AND email = $2, two typed parameters
/// ```
///
/// Only string *literals* become SQL text. A `String` variable interpolated is a value, never
/// SQL; raw text goes in only through the visibly unsafe `SQL(unsafeSQL:)` and
/// `\(unsafeRaw:)`. Fragments compose with `\(fragment)` or `+`, renumbering as they go.
public struct SQL: Sendable, ExpressibleByStringInterpolation, CustomStringConvertible {
    enum Part: Sendable {
        case text(String)
        case parameter(Int)
    }

    struct Binding: Sendable {
        var type: PostgresType
        /// Binary representation; nil is SQL NULL.
        var value: [UInt8]?
    }

    var parts: [Part] = []
    var bindings: [Binding] = []
    /// The first value that could not be encoded; reported when the statement is run.
    var encodingFailure: PostgresError?

    public init(stringLiteral value: String) { parts = [.text(value)] }

    public init(stringInterpolation: StringInterpolation) { self = stringInterpolation.sql }

    /// Raw SQL text: nothing in it is escaped or bound. Never pass input from outside.
    public init(unsafeSQL text: String) { parts = [.text(text)] }

    /// The statement's text with `$n` placeholders: safe to log, it holds no values.
    public var text: String {
        var result = ""
        for part in parts {
            switch part {
            case .text(let text): result += text
            case .parameter(let index): result += "$\(index + 1)"
            }
        }
        return result
    }

    public var description: String { text }

    /// Appends another fragment, renumbering its parameters after this one's.
    public mutating func append(_ other: SQL) {
        let shift = bindings.count
        for part in other.parts {
            switch part {
            case .text(let text): parts.append(.text(text))
            case .parameter(let index): parts.append(.parameter(index + shift))
            }
        }
        bindings.append(contentsOf: other.bindings)
        if encodingFailure == nil { encodingFailure = other.encodingFailure }
    }

    public static func + (lhs: SQL, rhs: SQL) -> SQL {
        var result = lhs
        result.append(rhs)
        return result
    }

    mutating func bind(_ type: PostgresType, encoding encode: (inout [UInt8]) throws -> Void) {
        var buffer: [UInt8] = []
        do {
            try encode(&buffer)
        } catch {
            let reason = (error as? PostgresCodingFailure)?.reason ?? "\(error)"
            if encodingFailure == nil {
                encodingFailure = PostgresError(
                    code: .encoding, message: "parameter $\(bindings.count + 1) (\(type)): \(reason)")
            }
        }
        parts.append(.parameter(bindings.count))
        bindings.append(Binding(type: type, value: buffer))
    }

    public struct StringInterpolation: StringInterpolationProtocol, Sendable {
        var sql = SQL(unsafeSQL: "")

        public init(literalCapacity: Int, interpolationCount: Int) {
            sql.parts.reserveCapacity(interpolationCount * 2 + 1)
        }

        public mutating func appendLiteral(_ literal: String) { sql.parts.append(.text(literal)) }

        /// A value, bound as a parameter of its PostgreSQL type.
        public mutating func appendInterpolation<Value: PostgresEncodable>(_ value: Value) {
            sql.bind(Value.postgresType) { try value.encode(into: &$0) }
        }

        /// An optional value: nil is bound as a typed NULL.
        public mutating func appendInterpolation<Value: PostgresEncodable>(_ value: Value?) {
            guard let value else {
                sql.parts.append(.parameter(sql.bindings.count))
                sql.bindings.append(Binding(type: Value.postgresType, value: nil))
                return
            }
            appendInterpolation(value)
        }

        /// Another statement fragment, spliced in with its parameters.
        public mutating func appendInterpolation(_ fragment: SQL) { sql.append(fragment) }

        /// An identifier (table, column, database name), double-quoted and escaped.
        public mutating func appendInterpolation(identifier: String) {
            sql.parts.append(.text("\"" + identifier.replacingOccurrences(of: "\"", with: "\"\"") + "\""))
        }

        /// Raw SQL text. Never pass input from outside.
        public mutating func appendInterpolation(unsafeRaw text: String) { sql.parts.append(.text(text)) }
    }
}
