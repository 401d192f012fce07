import AttestPostgres
import Foundation
import Testing

@Suite("Types round-trip through PostgreSQL")
struct TypeRoundTripTests {
    @Test func scalarsComeBackUnchanged() async throws {
        try await withFreshDatabase { client async throws in
            #expect(try await roundTrip(true, client) == true)
            #expect(try await roundTrip(false, client) == false)
            #expect(try await roundTrip(Int16.min, client) == Int16.min)
            #expect(try await roundTrip(Int32.max, client) == Int32.max)
            #expect(try await roundTrip(Int64.min, client) == Int64.min)
            #expect(try await roundTrip(-42, client) == -42)
            #expect(try await roundTrip(3.141592653589793, client) == 3.141592653589793)
            #expect(try await roundTrip(-Double.infinity, client) == -Double.infinity)
            #expect(try await roundTrip("plain text", client) == "plain text")
            #expect(try await roundTrip("", client) == "")
            let uuid = UUID()
            #expect(try await roundTrip(uuid, client) == uuid)
            let bytes = Data([0, 1, 2, 255, 0, 128])
            #expect(try await roundTrip(bytes, client) == bytes)
        }
    }

    @Test func timestampsKeepMicroseconds() async throws {
        try await withFreshDatabase { client async throws in
            let instant = Date(timeIntervalSince1970: 1_763_726_400.123456)
            let back = try await roundTrip(instant, client)
            #expect(abs(back.timeIntervalSince1970 - instant.timeIntervalSince1970) < 0.000_001)
            let early = Date(timeIntervalSince1970: -1_000_000_000.5)
            #expect(try await roundTrip(early, client) == early)
            // A time that is no time, or past PostgreSQL's range, is refused when the statement
            // runs, with an error that names it (its message must not describe the date: that traps).
            for seconds in [TimeInterval.nan, .infinity, -.infinity, 1e300] {
                await #expect(throws: PostgresError.self, "\(seconds)") {
                    try await client.query("SELECT \(Date(timeIntervalSince1970: seconds)) AS at")
                }
            }
            // The server agrees on the instant, not just our own decoder.
            let rows = try await client.query("SELECT to_char(\(instant) AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') AS text")
            #expect(try rows[0].decode("text", as: String.self) == "2025-11-21 12:00:00.123456")
        }
    }

    @Test func calendarDatesAcrossEpochsAndLeapDays() async throws {
        try await withFreshDatabase { client async throws in
            for text in ["2000-01-01", "1999-12-31", "2024-02-29", "1970-01-01", "1900-03-01", "2100-12-31"] {
                let date = try #require(PostgresDate(iso8601: text))
                #expect(try await roundTrip(date, client) == date)
                let rows = try await client.query("SELECT \(date)::text AS text, \(text)::date AS parsed")
                #expect(try rows[0].decode("text", as: String.self) == text)
                #expect(try rows[0].decode("parsed", as: PostgresDate.self) == date)
            }
            #expect(PostgresDate(iso8601: "2023-02-29") == nil)
            #expect(PostgresDate(iso8601: "2023-13-01") == nil)
            #expect(PostgresDate(iso8601: "2023-1-01") == nil)
        }
    }

    @Test func jsonbIsNormalisedByTheServerAndDecodes() async throws {
        struct Answers: Codable, Equatable {
            var fever: Bool
            var temperature: Double
        }
        try await withFreshDatabase { client async throws in
            let json = try PostgresJSON(encoding: Answers(fever: true, temperature: 37.5))
            let rows = try await client.query("SELECT \(json) AS doc, (\(json))->>'temperature' AS temperature")
            #expect(try rows[0].decode("doc", as: PostgresJSON.self).decode(as: Answers.self) == Answers(fever: true, temperature: 37.5))
            #expect(try rows[0].decode("temperature", as: String.self) == "37.5")
            await #expect(throws: PostgresError.self) { try await client.query("SELECT \(PostgresJSON("{not json")) AS doc") }
        }
    }

    @Test func arraysOfIntegersStringsAndUUIDs() async throws {
        try await withFreshDatabase { client async throws in
            let numbers: [Int64] = [1, -2, Int64.max]
            #expect(try await roundTrip(numbers, client) == numbers)
            let words = ["a", "", "with \"quotes\" and , commas", "ünïcödé 🎉"]
            #expect(try await roundTrip(words, client) == words)
            let ids = [UUID(), UUID()]
            #expect(try await roundTrip(ids, client) == ids)
            #expect(try await roundTrip([String](), client) == [])
            let rows = try await client.query("SELECT cardinality(\(words)) AS n, (\(words))[4] AS fourth")
            #expect(try rows[0].decode("n", as: Int.self) == 4)
            #expect(try rows[0].decode("fourth", as: String.self) == "ünïcödé 🎉")
        }
    }

    @Test func nilBindsAsTypedNullAndDecodesOnlyAsOptional() async throws {
        try await withFreshDatabase { client async throws in
            let missing: String? = nil
            let count: Int? = nil
            let when: Date? = nil
            let rows = try await client.query(
                "SELECT \(missing) AS text, \(count) AS number, \(when) AS at, pg_typeof(\(count))::text AS type")
            #expect(try rows[0].decode("text", as: String?.self) == nil)
            #expect(try rows[0].decode("number", as: Int?.self) == nil)
            #expect(try rows[0].decode("at", as: Date?.self) == nil)
            #expect(try rows[0].decode("type", as: String.self) == "bigint")
            #expect(rows[0].isNull("text"))
            let error = try #require(throws: PostgresError.self) { try rows[0].decode("text", as: String.self) }
            #expect(error.code == .decoding)
            #expect(error.message.contains("\"text\""))
            #expect(error.message.contains("NULL"))
            let present: Int? = 7
            #expect(try await client.query("SELECT \(present) AS n")[0].decode("n", as: Int?.self) == 7)
        }
    }

    @Test func mismatchNamesTheColumnAndBothTypes() async throws {
        try await withFreshDatabase { client async throws in
            let rows = try await client.query("SELECT 42::integer AS age, 'x'::text AS name")
            let error = try #require(throws: PostgresError.self) { try rows[0].decode("age", as: String.self) }
            #expect(error.code == .decoding)
            #expect(error.message.contains("\"age\""))
            #expect(error.message.contains("integer"))
            #expect(error.message.contains("String"))
            let missing = try #require(throws: PostgresError.self) { try rows[0].decode("agee", as: Int.self) }
            #expect(missing.message.contains("agee") && missing.message.contains("age, name"))
            // Widening works; narrowing refuses values that do not fit.
            #expect(try rows[0].decode(at: 0, as: Int64.self) == 42)
            let big = try await client.query("SELECT 70000::integer AS n")
            #expect(throws: PostgresError.self) { try big[0].decode("n", as: Int16.self) }
        }
    }
}
