import Foundation
import Testing

@testable import AttestPostgres

@Suite("Pipeline mode")
struct PipelineTests {
    @Test func aThousandUnitsInOneRoundTrip() async throws {
        try await withFreshDatabase { client async throws in
            try await client.query("CREATE TABLE events (n int PRIMARY KEY)")
            let units = (0..<1000).map { PipelineUnit(statements: ["INSERT INTO events VALUES (\(Int32($0))) RETURNING n"]) }
            let outcomes = try await client.withConnection { try await $0.pipeline(units) }
            #expect(outcomes.count == 1000)
            let returned = try outcomes.map { try $0.get()[0][0].decode("n", as: Int.self) }
            #expect(returned == Array(0..<1000))
            #expect(try await client.query("SELECT count(*) AS n FROM events")[0].decode("n", as: Int.self) == 1000)
        }
    }

    @Test func aThousandStatementsInOneUnit() async throws {
        try await withFreshDatabase { client async throws in
            try await client.query("CREATE TABLE events (n int PRIMARY KEY)")
            let unit = PipelineUnit(statements: (0..<1000).map { "INSERT INTO events VALUES (\(Int32($0)))" })
            let outcomes = try await client.withConnection { try await $0.pipeline([unit]) }
            #expect(try outcomes[0].get().count == 1000)
            #expect(try await client.query("SELECT count(*) AS n FROM events")[0].decode("n", as: Int.self) == 1000)
        }
    }

    /// Both ways of making settings: a unit in an explicit block (`.setLocal`, for Citus) that
    /// fails leaves its block aborted, and the units after it must still run.
    @Test(arguments: [TransactionSettings.Style.setConfig, .setLocal])
    func aFailingStatementAbortsOnlyItsOwnUnit(style: TransactionSettings.Style) async throws {
        try await withFreshDatabase(settingsStyle: style) { client async throws in
            try await client.query("CREATE TABLE events (n int PRIMARY KEY, note text)")
            try await client.query("INSERT INTO events VALUES (100, 'existing')")
            let units = [
                PipelineUnit(statements: ["INSERT INTO events VALUES (1, 'first unit')"]),
                PipelineUnit(statements: [
                    "INSERT INTO events VALUES (2, 'rolled back with its unit')",
                    "INSERT INTO events VALUES (100, 'duplicate')",
                    "INSERT INTO events VALUES (3, 'skipped')",
                ]),
                PipelineUnit(statements: ["INSERT INTO events VALUES (4, 'third unit')"]),
                PipelineUnit(statements: ["INSERT INTO events VALUES (5, \("bad\u{0}"))"]),
                PipelineUnit(statements: ["INSERT INTO events VALUES (6, 'last unit')"]),
            ]
            let outcomes = try await client.withConnection { try await $0.pipeline(units) }
            #expect((try? outcomes[0].get()) != nil)
            #expect(throws: PostgresError.self) { try outcomes[1].get() }
            if case .failure(let error) = outcomes[1] {
                #expect(error.isUniqueViolation)
            }
            #expect((try? outcomes[2].get()) != nil)
            if case .failure(let error) = outcomes[3] { #expect(error.code == .encoding) } else { Issue.record("NUL was accepted") }
            #expect((try? outcomes[4].get()) != nil)
            let rows = try await client.query("SELECT n FROM events ORDER BY n")
            #expect(try rows.map { try $0.decode("n", as: Int.self) } == [1, 4, 6, 100])
            // The connection is still good for plain queries afterwards.
            #expect(try await client.query("SELECT 1 AS one")[0].decode("one", as: Int.self) == 1)
        }
    }

    /// A pipeline of statements prepared before is sent from the caller's thread without
    /// blocking and read on the pool's: one far larger than the socket takes at once (300
    /// units of 64 KB) arrives whole, each unit with its own settings, a failing unit fails
    /// alone, and the connection is back in blocking mode after (a COPY needs it).
    @Test func aPipelineOfPreparedStatementsIsSentWithoutBlocking() async throws {
        try await withFreshDatabase(settingsStyle: .setConfig) { client async throws in
            try await client.query("CREATE TABLE notes (n int PRIMARY KEY, body text)")
            let body = String(repeating: "x", count: 64 * 1024)
            func units(_ numbers: Range<Int>) -> [PipelineUnit] {
                numbers.map {
                    PipelineUnit(
                        settings: TransactionSettings([("test.n", "\($0)")]),
                        statements: [
                            "INSERT INTO notes VALUES (\(Int32($0)), \(body)) RETURNING n, length(body) AS size, current_setting('test.n') AS seen"
                        ])
                }
            }
            try await client.withConnection { connection in
                // New statements are prepared on the pool first: nothing is sent from here.
                #expect(try connection.raw.sendWithoutBlocking(units(0..<1)) == nil)
                let first = try await connection.pipeline(units(0..<300))
                #expect(first.count == 300)
                let again = units(300..<600) + units(5..<6) + units(600..<601)
                let sent = try #require(try connection.raw.sendWithoutBlocking(again))
                #expect(connection.raw.isNonblocking)
                let outcomes = try await connection.run { try $0.receive(sent) }
                #expect(!connection.raw.isNonblocking)
                #expect(outcomes.count == 302)
                for (index, outcome) in outcomes.enumerated() where index != 300 {
                    let row = try outcome.get()[0][0]
                    let n = try row.decode("n", as: Int.self)
                    #expect(n == (index < 300 ? 300 + index : 600))
                    #expect(try row.decode("size", as: Int.self) == 64 * 1024)
                    #expect(try row.decode("seen", as: String.self) == "\(n)")
                }
                if case .failure(let error) = outcomes[300] {
                    #expect(error.isUniqueViolation)
                } else {
                    Issue.record("a duplicate was stored")
                }
                let copied = try await connection.copy(into: "notes", columns: ["n", "body"]) { rows in
                    for n in 1_000..<1_100 {
                        rows.row(fields: 2)
                        rows.int32(Int32(n))
                        rows.field(Array(body.utf8))
                    }
                    return false
                }
                #expect(copied == 100)
            }
            #expect(try await client.query("SELECT count(*) AS n FROM notes")[0].decode("n", as: Int.self) == 701)
        }
    }

    @Test(arguments: [TransactionSettings.Style.setConfig, .setLocal])
    func unitsWithSettingsSeeTheirOwn(style: TransactionSettings.Style) async throws {
        try await withFreshDatabase(settingsStyle: style) { client async throws in
            let outcomes = try await client.withConnection { connection in
                try await connection.pipeline([
                    PipelineUnit(
                        settings: TransactionSettings([("test.first", "a"), ("test.second", "b'; DROP")]),
                        statements: ["SELECT current_setting('test.first') || '|' || current_setting('test.second') AS seen"]),
                    PipelineUnit(
                        settings: TransactionSettings([("test.first", "c")]), statements: ["SELECT current_setting('test.first') AS seen"]),
                    PipelineUnit(statements: ["SELECT coalesce(current_setting('test.first', true), '') AS seen"]),
                ])
            }
            let seen = try outcomes.map { try $0.get()[0][0].decode("seen", as: String.self) }
            #expect(seen == ["a|b'; DROP", "c", ""])
            // A later segment's settings replace the earlier ones' for the rest of the unit.
            let segmented = try await client.withConnection { connection in
                try await connection.pipeline([
                    PipelineUnit(segments: [
                        .init(
                            settings: TransactionSettings([("test.first", "one")]),
                            statements: ["SELECT current_setting('test.first') AS seen"]),
                        .init(
                            settings: TransactionSettings([("test.first", "two")]),
                            statements: ["SELECT current_setting('test.first') AS seen"]),
                    ])
                ])
            }
            #expect(try segmented[0].get().map { try $0[0].decode("seen", as: String.self) } == ["one", "two"])
            // A transaction with settings, and one whose setting the server refuses (a name it
            // cannot take) leaves the connection usable.
            let inside = try await client.withTransaction(settings: TransactionSettings([("test.first", "tx'x")])) { connection in
                try await connection.query("SELECT current_setting('test.first') AS seen")[0].decode("seen", as: String.self)
            }
            #expect(inside == "tx'x")
            await #expect(throws: PostgresError.self) {
                try await client.withTransaction(settings: TransactionSettings([("bad name", "x")])) { _ in }
            }
            #expect(
                try await client.query("SELECT coalesce(current_setting('test.first', true), '') AS seen")[0].decode(
                    "seen", as: String.self) == "")
        }
    }
}
