import AttestPlugins
import Hummingbird

/// A route's query string, read as strictly as request bodies are: a parameter the route
/// does not take, one given more than once, or a value without a name, is a problem naming
/// it (an empty segment, `&&`, holds no parameter and is passed over). It is never ignored
/// (a misspelt `colour` would otherwise return everything) nor guessed between (which of
/// two `from`s counts?).
package struct QueryParameters {
    private var values: [String: String] = [:]
    /// What is wrong with the query string itself, in the order the parameters came.
    package private(set) var problems: [Problem.FieldError] = []

    /// `names`: the parameters the route takes, as the problems list them.
    package init(_ request: Request, accepting names: [String]) {
        var refused: Set<String> = []
        for (key, value) in request.uri.queryParameters {
            let name = String(key.prefix(40))  // echoed in the problem: bounded
            if name.isEmpty {
                // An empty segment (`?&a=1`, `a=1&&b=2`) holds no parameter, as browsers read it.
                if value.isEmpty { continue }
                // `&=x`: named by what was sent, since it has no name to go by.
                let sent = "=" + String(value.prefix(39))
                if refused.insert(sent).inserted {
                    problems.append(
                        .init(field: sent, message: "is a parameter without a name; remove it (this route takes \(Self.list(names)))"))
                }
            } else if !names.contains(name) {
                if refused.insert(name).inserted {
                    problems.append(.init(field: name, message: "is not a parameter of this route; it takes \(Self.list(names))"))
                }
            } else if values[name] != nil {
                if refused.insert(name).inserted { problems.append(.init(field: name, message: "is given more than once; give it once")) }
            } else {
                values[name] = String(value)
            }
        }
    }

    package subscript(name: String) -> String? { values[name] }

    /// A page size: `limit` when given, a whole number from 1 to `most`, else `fallback` (a
    /// bad one is added to `problems`, naming it).
    package func limit(default fallback: Int, most: Int, problems: inout [Problem.FieldError]) -> Int {
        guard let text = values["limit"] else { return fallback }
        guard let value = Int(text), (1...most).contains(value) else {
            problems.append(.init(field: "limit", message: "must be a whole number from 1 to \(most)"))
            return fallback
        }
        return value
    }

    /// A list route's `limit` (1–100, default 20) and `cursor` (read by `cursor`, nil when it
    /// is none this API gave out): the query's problems and these, all at once, as a 422.
    package static func page<Cursor>(_ request: Request, cursor read: (String) -> Cursor?) throws -> (limit: Int, cursor: Cursor?) {
        let query = QueryParameters(request, accepting: ["limit", "cursor"])
        var problems = query.problems
        let limit = query.limit(default: 20, most: 100, problems: &problems)
        var cursor: Cursor?
        if let text = query["cursor"] {
            cursor = read(text)
            if cursor == nil { problems.append(unknownCursor) }
        }
        guard problems.isEmpty else { throw Problem.validation(problems) }
        return (limit, cursor)
    }

    /// A `cursor` this API did not give out.
    package static let unknownCursor = Problem.FieldError(
        field: "cursor", message: "is not a cursor this API gave out: pass nextCursor from the previous page unchanged")

    /// "a", "a and b", "a, b and c".
    package static func list(_ names: [String]) -> String {
        names.count < 2 ? names.joined() : names.dropLast().joined(separator: ", ") + " and " + names[names.count - 1]
    }
}

extension QueryParameters {
    /// `from` and `to` (campus days, YYYY-MM-DD) of a member's range: the 30 days through
    /// `today` when not given. Each bad date is a problem appended to `problems`, and then a
    /// `from` after `to` or a range over 366 days.
    package func dateRange(today: LocalDate, problems: inout [Problem.FieldError]) -> (from: LocalDate, to: LocalDate) {
        var dateProblems: [Problem.FieldError] = []
        func date(_ name: String, _ fallback: LocalDate) -> LocalDate {
            guard let text = self[name] else { return fallback }
            guard let date = LocalDate(text) else {
                dateProblems.append(.init(field: name, message: "must be a date YYYY-MM-DD"))
                return fallback
            }
            return date
        }
        let from = date("from", today.adding(days: -29)), to = date("to", today)
        if dateProblems.isEmpty, from > to || from.days(until: to) > 365 {
            dateProblems.append(.init(field: "from", message: "must not be after to, and the range at most 366 days"))
        }
        problems += dateProblems
        return (from, to)
    }
}
