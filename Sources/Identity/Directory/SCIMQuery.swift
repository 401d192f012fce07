import AttestFoundation
import AttestPlugins
import AttestPostgres
import Foundation

/// Where an attribute of a SCIM resource lives in the database, for turning a filter into SQL.
public enum SCIMColumn: Sendable {
    /// A text expression; compared without case unless `caseExact`.
    case text(SQL, caseExact: Bool)
    /// A text expression already lower-cased (an indexed key): compared with the literal
    /// lower-cased, so an index on it serves (row-level security keeps `lower(column)` from one).
    case lowered(SQL)
    case boolean(SQL)
    case timestamp(SQL)
    /// A jsonb array of objects (a multi-valued complex attribute): a comparison holds when
    /// some element's sub-attribute (`value` when none is named) satisfies it.
    case elements(SQL)
    /// Ids related through another table: `exists` is an `EXISTS (SELECT 1 … WHERE … AND `
    /// prefix to which the condition on `id` (a text expression) and `)` are added.
    case related(exists: SQL, id: SQL)
}

extension SCIMFilter {
    /// The filter as a SQL condition, each attribute placed by `column` (which throws
    /// `Invalid` for an attribute it does not know). Literals are bound parameters.
    public func sql(_ column: (SCIMPath) throws(Invalid) -> SCIMColumn) throws(Invalid) -> SQL {
        switch self {
        case .and(let left, let right): return "(\(try left.sql(column)) AND \(try right.sql(column)))"
        case .or(let left, let right): return "(\(try left.sql(column)) OR \(try right.sql(column)))"
        case .not(let inner): return "NOT coalesce(\(try inner.sql(column)), false)"
        case .present(let path):
            switch try column(path) {
            case .text(let expression, _), .lowered(let expression): return "coalesce(\(expression) <> '', false)"
            case .boolean(let expression), .timestamp(let expression): return "(\(expression) IS NOT NULL)"
            case .elements(let array):
                guard let sub = path.subAttribute else { return "(jsonb_array_length(coalesce(\(array), '[]')) > 0)" }
                return "EXISTS (SELECT 1 FROM jsonb_array_elements(coalesce(\(array), '[]')) e WHERE coalesce(e->>\(sub) <> '', false))"
            case .related(let exists, _): return "\(exists) true)"
            }
        case .has(let path):
            guard case .elements(let array) = try column(SCIMPath(schema: path.schema, attribute: path.attribute)), let filter = path.filter
            else { throw Invalid(message: "'\(path.attribute)' is not a multi-valued attribute a value filter can choose from") }
            return "EXISTS (SELECT 1 FROM jsonb_array_elements(coalesce(\(array), '[]')) e WHERE \(try filter.sql(Self.element)))"
        case .compare(let path, let op, let literal):
            if let filter = path.filter {
                guard case .elements(let array) = try column(SCIMPath(schema: path.schema, attribute: path.attribute)) else {
                    throw Invalid(message: "'\(path.attribute)' is not a multi-valued attribute a value filter can choose from")
                }
                let inner = SCIMFilter.compare(SCIMPath(attribute: path.subAttribute ?? "value"), op, literal)
                return """
                    EXISTS (SELECT 1 FROM jsonb_array_elements(coalesce(\(array), '[]')) e
                            WHERE \(try filter.sql(Self.element)) AND \(try inner.sql(Self.element)))
                    """
            }
            switch try column(path) {
            case .text(let expression, let caseExact):
                return try Self.compareText(expression, op, literal, caseExact: caseExact, path: path)
            case .lowered(let expression):
                return try Self.compareText(expression, op, literal, caseExact: false, lowered: true, path: path)
            case .boolean(let expression):
                guard case .bool(let flag) = literal, op == .eq || op == .ne else {
                    throw Invalid(message: "'\(path)' is true or false: compare it with eq or ne and true or false")
                }
                return op == .eq ? "(\(expression) = \(flag))" : "(\(expression) IS DISTINCT FROM \(flag))"
            case .timestamp(let expression):
                guard case .string(let text) = literal, let date = SCIMTime.parse(text) else {
                    throw Invalid(message: "'\(path)' is a date-time: compare it with a string such as \"2026-01-31T12:00:00Z\"")
                }
                let sign: String
                switch op {
                case .eq: sign = "="
                case .ne: sign = "<>"
                case .gt: sign = ">"
                case .ge: sign = ">="
                case .lt: sign = "<"
                case .le: sign = "<="
                default: throw Invalid(message: "'\(path)' is a date-time: compare it with eq, ne, gt, ge, lt or le")
                }
                return "(\(expression) \(unsafeRaw: sign) \(date))"
            case .elements(let array):
                let sub = path.subAttribute ?? "value"
                let inner = try Self.element(SCIMPath(attribute: sub))
                guard case .text(let expression, _) = inner else { return "false" }
                return """
                    EXISTS (SELECT 1 FROM jsonb_array_elements(coalesce(\(array), '[]')) e
                            WHERE \(try Self.compareText(expression, op, literal, caseExact: false, path: path)))
                    """
            case .related(let exists, let id):
                return "\(exists) \(try Self.compareText(id, op, literal, caseExact: false, path: path)))"
            }
        }
    }

    /// An element of a multi-valued attribute (`e`): its sub-attributes, `primary` a boolean.
    static func element(_ path: SCIMPath) throws(Invalid) -> SCIMColumn {
        guard path.filter == nil, path.schema == nil, path.subAttribute == nil else {
            throw Invalid(message: "'\(path)' cannot be used inside a value filter: name a sub-attribute such as type or value")
        }
        if path.names("primary") { return .boolean("(e->'primary' = 'true'::jsonb)") }
        return .text("(e->>\(path.attribute))", caseExact: false)
    }

    static func compareText(
        _ expression: SQL, _ op: Operator, _ literal: JSONValue, caseExact: Bool, lowered: Bool = false, path: SCIMPath
    ) throws(Invalid) -> SQL {
        let value: String
        switch literal {
        case .string(let text): value = text
        case .number(let number):
            var text = ""
            JSONText.appendNumber(number, to: &text)
            value = text
        case .bool(let flag): value = flag ? "true" : "false"
        case .null:
            switch op {
            case .eq: return "(\(expression) IS NULL)"
            case .ne: return "(\(expression) IS NOT NULL)"
            default: throw Invalid(message: "null compares only with eq or ne")
            }
        default: throw Invalid(message: "'\(path)' compares with a string")
        }
        let left: SQL = caseExact || lowered ? expression : "lower(\(expression))"
        let right: SQL = caseExact ? "\(value)::text" : "lower(\(value)::text)"
        switch op {
        // Plain comparisons (null is no match), so `userName eq` and `externalId eq` use their
        // indexes; `not` turns a null into false itself.
        case .eq: return "(\(left) = \(right))"
        case .ne: return "coalesce(\(left) <> \(right), true)"
        case .co: return "(strpos(\(left), \(right)) > 0)"
        case .sw: return "starts_with(\(left), \(right))"
        case .ew: return "(right(\(left), length(\(right))) = \(right))"
        case .gt: return "(\(left) > \(right) COLLATE \"C\")"
        case .ge: return "(\(left) >= \(right) COLLATE \"C\")"
        case .lt: return "(\(left) < \(right) COLLATE \"C\")"
        case .le: return "(\(left) <= \(right) COLLATE \"C\")"
        }
    }
}

/// SCIM's date-times (`xsd:dateTime`, RFC 3339 in practice).
public enum SCIMTime {
    public static func parse(_ text: String) -> Date? {
        guard text.utf8.count <= 40 else { return nil }
        if let date = try? Date(text, strategy: .iso8601) { return date }
        return try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }

    /// `2026-11-29T01:02:03.456Z`.
    public static func format(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }
}
