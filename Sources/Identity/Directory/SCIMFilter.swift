import AttestFoundation
import AttestPlugins
import AttestPostgres
import Foundation

/// A SCIM attribute path (RFC 7644 §3.10 and the PATCH `path` of §3.5.2): an attribute,
/// perhaps under a schema URN (`urn:…:enterprise:2.0:User:employeeNumber`), perhaps with a
/// filter choosing elements of a multi-valued attribute (`emails[type eq "work"]`), perhaps
/// naming a sub-attribute (`name.familyName`, `emails[type eq "work"].value`). Names keep the
/// case they were given; compare them with `matches`.
public struct SCIMPath: Sendable, Equatable, CustomStringConvertible {
    /// The schema URN before the attribute, when one was written.
    public var schema: String?
    public var attribute: String
    public var filter: SCIMFilter?
    public var subAttribute: String?

    public init(schema: String? = nil, attribute: String, filter: SCIMFilter? = nil, subAttribute: String? = nil) {
        (self.schema, self.attribute, self.filter, self.subAttribute) = (schema, attribute, filter, subAttribute)
    }

    public var description: String {
        (schema.map { $0 + ":" } ?? "") + attribute + (filter.map { "[\($0)]" } ?? "") + (subAttribute.map { "." + $0 } ?? "")
    }

    /// Whether the attribute is `name` (case-insensitive, as SCIM attribute names are).
    public func names(_ name: String, sub: String? = nil) -> Bool {
        attribute.caseInsensitiveCompare(name) == .orderedSame
            && (sub == nil ? subAttribute == nil : subAttribute?.caseInsensitiveCompare(sub ?? "") == .orderedSame)
    }
}

/// A SCIM filter (RFC 7644 §3.4.2.2): comparisons of attributes with literals, `pr`, `and`,
/// `or`, `not` and parentheses, and value paths (`emails[type eq "work"]`). Parsed with limits
/// on length and nesting; evaluated on JSON (a PATCH's value filter) or turned into SQL (a
/// list's `filter`) by the resource's attribute map.
public indirect enum SCIMFilter: Sendable, Equatable, CustomStringConvertible {
    public enum Operator: String, Sendable, CaseIterable { case eq, ne, co, sw, ew, gt, ge, lt, le }

    case compare(SCIMPath, Operator, JSONValue)
    case present(SCIMPath)
    case and(SCIMFilter, SCIMFilter)
    case or(SCIMFilter, SCIMFilter)
    case not(SCIMFilter)
    /// `attribute[filter]`: some element of a multi-valued attribute matches.
    case has(SCIMPath)

    public var description: String {
        switch self {
        case .compare(let path, let op, let value): "\(path) \(op.rawValue) \(Self.literal(value))"
        case .present(let path): "\(path) pr"
        case .and(let left, let right): "(\(left) and \(right))"
        case .or(let left, let right): "(\(left) or \(right))"
        case .not(let inner): "not (\(inner))"
        case .has(let path): "\(path)"
        }
    }

    static func literal(_ value: JSONValue) -> String {
        switch value {
        case .string(let text):
            var out = ""
            JSONText.appendString(text, to: &out)
            return out
        case .bool(let flag): return flag ? "true" : "false"
        case .number(let number):
            var out = ""
            JSONText.appendNumber(number, to: &out)
            return out
        default: return "null"
        }
    }

    /// Why a filter or path was refused: SCIM's `invalidFilter` (or `invalidPath`).
    public struct Invalid: Error, Sendable, Equatable, CustomStringConvertible {
        public var message: String
        public var description: String { message }
    }

    /// The schemas this server knows, whose URNs may prefix an attribute.
    public static let schemaURNs = [
        "urn:ietf:params:scim:schemas:core:2.0:User", "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User",
        "urn:ietf:params:scim:schemas:core:2.0:Group",
    ]

    /// The longest filter read, in UTF-8 bytes.
    public static let maxLength = 4096
    /// The deepest nesting of parentheses, `not` and value paths.
    public static let maxDepth = 16
    /// The most comparisons in one filter.
    public static let maxTerms = 100

    /// Parses `text`.
    public static func parse(_ text: String) throws(Invalid) -> SCIMFilter {
        guard text.utf8.count <= maxLength else {
            throw Invalid(message: "the filter is longer than \(maxLength) bytes: ask for fewer things at once")
        }
        var parser = Parser(bytes: Array(text.utf8))
        let filter = try parser.expression(depth: 0)
        parser.skipSpaces()
        guard parser.atEnd else { throw parser.invalid("unexpected text") }
        return filter
    }

    /// Parses a PATCH operation's `path` (an attribute path, with at most one value filter).
    public static func parsePath(_ text: String) throws(Invalid) -> SCIMPath {
        guard !text.isEmpty, text.utf8.count <= maxLength else { throw Invalid(message: "the path is empty or too long") }
        var parser = Parser(bytes: Array(text.utf8))
        parser.skipSpaces()
        let path = try parser.path(depth: 0, allowFilter: true)
        parser.skipSpaces()
        guard parser.atEnd else { throw parser.invalid("unexpected text after the path") }
        return path
    }

    struct Parser {
        let bytes: [UInt8]
        var index = 0
        var terms = 0

        var atEnd: Bool { index >= bytes.count }

        func invalid(_ what: String) -> Invalid {
            Invalid(message: "\(what) at character \(index + 1) of the filter")
        }

        mutating func skipSpaces() {
            while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x09 || bytes[index] == 0x0A || bytes[index] == 0x0D {
                index += 1
            }
        }

        /// `or` binds loosest, then `and`, then `not`.
        mutating func expression(depth: Int) throws(Invalid) -> SCIMFilter {
            guard depth <= SCIMFilter.maxDepth else {
                throw Invalid(message: "the filter nests deeper than \(SCIMFilter.maxDepth) levels")
            }
            var left = try conjunction(depth: depth)
            while try keyword("or") { left = .or(left, try conjunction(depth: depth)) }
            return left
        }

        mutating func conjunction(depth: Int) throws(Invalid) -> SCIMFilter {
            var left = try unary(depth: depth)
            while try keyword("and") { left = .and(left, try unary(depth: depth)) }
            return left
        }

        mutating func unary(depth: Int) throws(Invalid) -> SCIMFilter {
            skipSpaces()
            if try keyword("not") {
                skipSpaces()
                guard index < bytes.count, bytes[index] == UInt8(ascii: "(") else { throw invalid("'not' must be followed by '('") }
                return .not(try unary(depth: depth + 1))
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "(") {
                index += 1
                let inner = try expression(depth: depth + 1)
                skipSpaces()
                guard index < bytes.count, bytes[index] == UInt8(ascii: ")") else { throw invalid("a '(' is never closed") }
                index += 1
                return inner
            }
            terms += 1
            guard terms <= SCIMFilter.maxTerms else {
                throw Invalid(message: "the filter has more than \(SCIMFilter.maxTerms) comparisons")
            }
            let path = try self.path(depth: depth, allowFilter: true)
            if path.filter != nil, path.subAttribute == nil {
                // `emails[type eq "work"]` alone: some element matches.
                let save = index
                skipSpaces()
                if atEnd || bytes[index] == UInt8(ascii: ")") || peekWord() == "and" || peekWord() == "or" {
                    index = save
                    return .has(path)
                }
                index = save
            }
            skipSpaces()
            let word = word()
            guard !word.isEmpty else { throw invalid("expected an operator (eq, ne, co, sw, ew, gt, ge, lt, le or pr)") }
            if word == "pr" { return .present(path) }
            guard let op = Operator(rawValue: word) else { throw invalid("'\(word)' is not an operator") }
            skipSpaces()
            return .compare(path, op, try literal())
        }

        /// An attribute path: `attr`, `urn:…:attr`, `attr.sub`, `attr[filter]`, `attr[filter].sub`.
        mutating func path(depth: Int, allowFilter: Bool) throws(Invalid) -> SCIMPath {
            let start = index
            while index < bytes.count, Self.isNameByte(bytes[index]) { index += 1 }
            guard index > start else { throw invalid("expected an attribute name") }
            var (schema, attribute, sub) = try Self.split(String(decoding: bytes[start..<index], as: UTF8.self), at: start)
            var filter: SCIMFilter?
            if index < bytes.count, bytes[index] == UInt8(ascii: "[") {
                guard allowFilter, sub == nil else { throw invalid("a value filter is not allowed here") }
                index += 1
                filter = try expression(depth: depth + 1)
                skipSpaces()
                guard index < bytes.count, bytes[index] == UInt8(ascii: "]") else { throw invalid("a '[' is never closed") }
                index += 1
                if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                    index += 1
                    let subStart = index
                    while index < bytes.count, Self.isNameByte(bytes[index]), bytes[index] != UInt8(ascii: ".") { index += 1 }
                    guard index > subStart else { throw invalid("expected a sub-attribute name after '.'") }
                    sub = String(decoding: bytes[subStart..<index], as: UTF8.self)
                }
            }
            if let filter, Self.hasValuePath(filter) { throw invalid("a value filter may not hold another") }
            if attribute.isEmpty, filter != nil || sub != nil { throw invalid("a schema URN must name an attribute") }
            return SCIMPath(schema: schema, attribute: attribute, filter: filter, subAttribute: sub)
        }

        static func hasValuePath(_ filter: SCIMFilter) -> Bool {
            switch filter {
            case .compare(let path, _, _), .present(let path): path.filter != nil
            case .has: true
            case .and(let left, let right), .or(let left, let right): hasValuePath(left) || hasValuePath(right)
            case .not(let inner): hasValuePath(inner)
            }
        }

        /// `urn:a:b:2.0:User:attr.sub` → (`urn:a:b:2.0:User`, `attr`, `sub`); `name.givenName` →
        /// (nil, `name`, `givenName`); a known schema's URN alone → (the URN, "", nil).
        static func split(_ text: String, at offset: Int) throws(Invalid) -> (String?, String, String?) {
            var schema: String?
            var rest = Substring(text)
            let lowered = text.lowercased()
            if lowered.hasPrefix("urn:") {
                if let known = SCIMFilter.schemaURNs.first(where: { lowered == $0.lowercased() }) { return (known, "", nil) }
                if let known = SCIMFilter.schemaURNs.first(where: { lowered.hasPrefix($0.lowercased() + ":") }) {
                    schema = known
                    rest = text.dropFirst(known.count + 1)
                } else {
                    guard let colon = text.lastIndex(of: ":") else { throw Invalid(message: "a malformed schema URN") }
                    schema = String(text[..<colon])
                    rest = text[text.index(after: colon)...]
                }
            }
            let parts = rest.split(separator: ".", omittingEmptySubsequences: false)
            guard (1...2).contains(parts.count), parts.allSatisfy({ !$0.isEmpty }) else {
                throw Invalid(message: "'\(text)' is not an attribute path (at character \(offset + 1))")
            }
            for part in parts where part.first.map({ !$0.isLetter && $0 != "$" }) ?? false {
                throw Invalid(message: "'\(text)' is not an attribute path: names start with a letter")
            }
            return (schema, String(parts[0]), parts.count == 2 ? String(parts[1]) : nil)
        }

        static func isNameByte(_ byte: UInt8) -> Bool {
            (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte)
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "$") || byte == UInt8(ascii: ":")
                || byte == UInt8(ascii: ".")
        }

        func peekWord() -> String {
            var end = index
            while end < bytes.count, (0x41...0x5A).contains(bytes[end]) || (0x61...0x7A).contains(bytes[end]) { end += 1 }
            return String(decoding: bytes[index..<end], as: UTF8.self).lowercased()
        }

        mutating func word() -> String {
            let word = peekWord()
            index += word.utf8.count
            return word
        }

        /// Reads the keyword `word` (a whole word, any case) when it comes next.
        mutating func keyword(_ word: String) throws(Invalid) -> Bool {
            let save = index
            skipSpaces()
            let end = index + word.utf8.count
            if peekWord() == word, end >= bytes.count || !Self.isNameByte(bytes[end]) {
                index = end
                return true
            }
            index = save
            return false
        }

        /// A JSON string, number, `true`, `false` or `null`.
        mutating func literal() throws(Invalid) -> JSONValue {
            guard index < bytes.count else { throw invalid("expected a value to compare with") }
            let start = index
            if bytes[index] == UInt8(ascii: "\"") {
                index += 1
                var closed = false
                while index < bytes.count {
                    let byte = bytes[index]
                    index += 1
                    if byte == UInt8(ascii: "\\") {
                        index += 1
                    } else if byte == UInt8(ascii: "\"") {
                        closed = true
                        break
                    }
                }
                guard closed, index <= bytes.count else {
                    index = start
                    throw invalid("a string is never closed")
                }
            } else {
                while index < bytes.count, !(bytes[index] == 0x20 || bytes[index] == UInt8(ascii: ")") || bytes[index] == UInt8(ascii: "]"))
                {
                    index += 1
                }
            }
            let text = bytes[start..<index]
            guard let value = try? JSONValue(parsing: text) else {
                index = start
                throw invalid("expected a value: a \"string\", a number, true, false or null")
            }
            switch value {
            case .array, .object: throw invalid("a value must be a string, number, true, false or null")
            default: return value
            }
        }
    }

    // MARK: Evaluating on JSON

    /// Whether the JSON object `element` (an element of a multi-valued attribute, or a
    /// resource) matches: names compared without case, strings too.
    public func matches(_ element: JSONValue) -> Bool {
        switch self {
        case .and(let left, let right): return left.matches(element) && right.matches(element)
        case .or(let left, let right): return left.matches(element) || right.matches(element)
        case .not(let inner): return !inner.matches(element)
        case .present(let path):
            return Self.values(path, in: element).contains { value in
                switch value {
                case .null: false
                case .string(let text): !text.isEmpty
                case .array(let items): !items.isEmpty
                default: true
                }
            }
        case .has(let path):
            guard let filter = path.filter else { return false }
            return Self.elements(path.attribute, in: element).contains(where: filter.matches)
        case .compare(let path, let op, let literal):
            if let filter = path.filter {
                let inner = SCIMPath(attribute: path.subAttribute ?? "value")
                return Self.elements(path.attribute, in: element).contains {
                    filter.matches($0) && SCIMFilter.compare(inner, op, literal).matches($0)
                }
            }
            return Self.values(path, in: element).contains { Self.holds($0, op, literal) }
        }
    }

    /// The member of `object` named `name`, without regard to case.
    public static func member(_ name: String, of object: JSONValue) -> JSONValue? {
        guard case .object(let members) = object else { return nil }
        if let exact = members[name] { return exact }
        return members.first { $0.key.caseInsensitiveCompare(name) == .orderedSame }?.value
    }

    static func elements(_ attribute: String, in object: JSONValue) -> [JSONValue] {
        switch member(attribute, of: object) {
        case .array(let items)?: items
        case let value?: [value]
        case nil: []
        }
    }

    /// Every value `path` reaches in `object` (a multi-valued attribute's elements, or their
    /// `value`, or their sub-attribute).
    static func values(_ path: SCIMPath, in object: JSONValue) -> [JSONValue] {
        let elements = elements(path.attribute, in: object)
        guard let sub = path.subAttribute else {
            return elements.map { element in
                if case .object = element, let value = member("value", of: element) { value } else { element }
            }
        }
        return elements.compactMap { member(sub, of: $0) }
    }

    static func holds(_ value: JSONValue, _ op: Operator, _ literal: JSONValue) -> Bool {
        switch (value, literal) {
        case (.string(let left), .string(let right)):
            let (l, r) = (left.lowercased(), right.lowercased())
            switch op {
            case .eq: return l == r
            case .ne: return l != r
            case .co: return l.contains(r)
            case .sw: return l.hasPrefix(r)
            case .ew: return l.hasSuffix(r)
            case .gt: return l > r
            case .ge: return l >= r
            case .lt: return l < r
            case .le: return l <= r
            }
        case (.bool(let left), .bool(let right)):
            return op == .eq ? left == right : op == .ne ? left != right : false
        case (.number(let left), .number(let right)):
            switch op {
            case .eq: return left == right
            case .ne: return left != right
            case .gt: return left > right
            case .ge: return left >= right
            case .lt: return left < right
            case .le: return left <= right
            default: return false
            }
        case (_, .null): return op == .ne
        default: return op == .ne
        }
    }
}
