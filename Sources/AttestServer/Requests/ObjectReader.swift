import AttestPlugins
import Foundation
import Surveys

/// Reads one route's JSON body, collecting a problem for each field rather than stopping at
/// the first: a member the route does not take, a required one missing, a wrong one. Each
/// read answers the value or nil (absent or wrong, the problem noted); `finish()` then throws
/// the 422 naming every field at once.
///
///     var reader = ObjectReader(body, fields: ["expiresIn", "from", "to"])
///     let seconds = reader.wholeNumber("expiresIn", in: 3600...2_592_000, required: "whole seconds …")
///     try reader.finish()
package struct ObjectReader {
    package let object: [String: JSONValue]
    /// The fields' problems, in the order they were read.
    private var found: [Problem.FieldError] = []
    /// The members the route does not take, by name.
    private var unknown: [Problem.FieldError] = []
    /// Every problem: the fields' first, then the members not taken.
    package var problems: [Problem.FieldError] { found + unknown }

    /// `fields`: the members this route takes; each other one is a problem, named as sent
    /// (`""` for the empty name, cut to 40 characters), with `unknown` as its message
    /// (default: "is not a field here (" and the fields ")"). nil: others are let be (a body
    /// whose schema allows more).
    package init(_ object: [String: JSONValue], fields: [String]?, unknown notTaken: String? = nil) {
        self.object = object
        guard let fields else { return }
        let message = notTaken ?? "is not a field here (\(fields.joined(separator: ", ")))"
        for key in object.keys.sorted() where !fields.contains(key) {
            self.unknown.append(.init(field: FieldProblem.name(String(key.prefix(40))), message: message))
        }
    }

    /// Whether the member was sent (null included).
    package func has(_ name: String) -> Bool { object[name] != nil }

    package mutating func problem(_ field: String, _ message: String) { found.append(.init(field: field, message: message)) }

    /// Problems a core check found, but for fields already named.
    package mutating func add(_ found: [(field: String, message: String)]) {
        let reported = Set(problems.map(\.field))
        self.found += found.filter { !reported.contains($0.field) }.map { .init(field: $0.field, message: $0.message) }
    }

    /// The member read by `read`: nil when absent (a problem saying `required`, when given) or
    /// when `read` takes it not (the problem `wrong`).
    package mutating func value<Value>(_ name: String, required: String? = nil, wrong: String, _ read: (JSONValue) -> Value?) -> Value? {
        guard let value = object[name] else {
            if let required { problem(name, "is required: \(required)") }
            return nil
        }
        guard let read = read(value) else {
            problem(name, wrong)
            return nil
        }
        return read
    }

    /// A string. One holding the NUL character (`\u0000`) is refused by name: PostgreSQL's
    /// text cannot hold it, and it would otherwise reach the database and fail there.
    package mutating func text(_ name: String, required: String? = nil, wrong: String = "must be text") -> String? {
        if case .string(let text)? = object[name], text.unicodeScalars.contains("\0") {
            problem(name, "must not hold the NUL character (\\u0000)")
            return nil
        }
        return value(name, required: required, wrong: wrong) { if case .string(let text) = $0 { text } else { nil } }
    }

    /// A whole number in `range` (a JSON number with no fraction).
    package mutating func wholeNumber(_ name: String, in range: ClosedRange<Int>, required: String? = nil, wrong: String) -> Int? {
        value(name, required: required, wrong: wrong) { $0.wholeNumber(in: range) }
    }

    package mutating func date(_ name: String, required: String? = nil, wrong: String = "must be a date YYYY-MM-DD") -> LocalDate? {
        value(name, required: required, wrong: wrong) { if case .string(let text) = $0 { LocalDate(text) } else { nil } }
    }

    /// An RFC 3339 date-time (`2026-11-20T14:05:00Z`, fractions and offsets allowed).
    package mutating func instant(
        _ name: String, required: String? = nil, wrong: String = "must be a date-time such as 2026-11-20T14:05:00Z"
    ) -> Date? {
        value(name, required: required, wrong: wrong, ObjectReader.instant)
    }

    package static func instant(_ value: JSONValue) -> Date? {
        guard case .string(let text) = value, text.utf8.count <= 40 else { return nil }
        if let date = try? Date(text, strategy: .iso8601) { return date }
        return try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }

    /// Throws the 422 naming every problem found, if any.
    package func finish() throws {
        guard problems.isEmpty else { throw Problem.validation(problems) }
    }
}

extension JSONValue {
    /// The number when it is whole and in `range`; never a trap, whatever the number.
    package func wholeNumber(in range: ClosedRange<Int>) -> Int? {
        guard case .number(let number) = self, let whole = Int(exactly: number), range.contains(whole) else { return nil }
        return whole
    }
}
