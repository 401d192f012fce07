import AttestPlugins
import Foundation
import Testing

@testable import AttestAPI
@testable import AttestServer
@testable import AttestWeb

/// The one reader of routes' JSON bodies: every field's problem named at once, the fields'
/// first and then the members a route does not take, and no number that traps.
@Suite("Reading a body's fields")
struct ObjectReaderTests {
    @Test func everyProblemIsNamedTheFieldsFirstThenTheMembersNotTaken() throws {
        let body: [String: JSONValue] = ["": .bool(true), "zeta": .null, "count": .number(2.5), "when": .string("2026-02-30")]
        var reader = ObjectReader(body, fields: ["count", "when", "name"])
        #expect(reader.wholeNumber("count", in: 1...10, wrong: "must be a whole number from 1 to 10") == nil)
        #expect(reader.date("when") == nil)
        #expect(reader.text("name", required: "1 to 100 characters") == nil)
        #expect(reader.problems.map(\.field) == ["count", "when", "name", #""""#, "zeta"])
        #expect(
            reader.problems.map(\.message).prefix(3) == [
                "must be a whole number from 1 to 10", "must be a date YYYY-MM-DD", "is required: 1 to 100 characters",
            ])
        #expect(reader.problems[3].message == "is not a field here (count, when, name)")
        #expect(throws: Problem.self) { try reader.finish() }

        var fine = ObjectReader(
            ["count": .number(3), "when": .string("2026-02-28"), "at": .string("2026-11-20T14:05:00.25+01:00")], fields: nil)
        #expect(fine.wholeNumber("count", in: 1...10, wrong: "") == 3)
        #expect(fine.date("when") == LocalDate("2026-02-28"))
        #expect(fine.instant("at") == Date(timeIntervalSince1970: 1_795_179_900.25))
        #expect(fine.text("absent") == nil)
        try fine.finish()
    }

    /// A problem a core check finds again is not named twice; a number too large for an `Int`,
    /// a fraction or a negative zero never traps.
    @Test func coreProblemsAreAddedOnceAndNoNumberTraps() {
        var reader = ObjectReader(["title": .number(1)], fields: ["title"])
        _ = reader.text("title")
        reader.add([("title", "is too long"), ("date", "must not be in the future")])
        #expect(reader.problems.map(\.field) == ["title", "date"])
        for number in [1e300, -1e300, 9.223372036854775807e18, -9.223372036854775808e18, 0.5, -0.0] {
            let whole = JSONValue.number(number).wholeNumber(in: Int.min...Int.max)
            #expect(whole == (number == -0.0 ? 0 : (number == -9.223372036854775808e18 ? Int.min : nil)), "\(number)")
        }
        #expect(JSONValue.number(11).wholeNumber(in: 1...10) == nil)
        #expect(JSONValue.string("5").wholeNumber(in: 1...10) == nil)
    }

    /// PostgreSQL's text cannot hold NUL: a string with one is refused by its field's name,
    /// before anything reaches the database.
    @Test func aTextHoldingNULIsRefusedByName() {
        var reader = ObjectReader(["reason": .string("ok\u{0}then"), "note": .string("fine")], fields: ["reason", "note"])
        #expect(reader.text("reason", required: "a reason") == nil)
        #expect(reader.text("note") == "fine")
        #expect(reader.problems.map(\.field) == ["reason"])
        #expect(reader.problems.first?.message == "must not hold the NUL character (\\u0000)")
    }
}
