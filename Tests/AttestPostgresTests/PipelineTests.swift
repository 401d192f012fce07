import AttestPostgres
import Foundation
import Testing

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

    @Test(arguments: [TransactionSettings.Style.setConfig, .setLocal])
    func unitsWithSettingsSeeTheirOwn(style: TransactionSettings.Style) async throws {
        try await withFreshDatabase(settingsStyle: style) { client async throws in
            let outcomes = try await client.withConnection { connection in
                try await connection.pipeline([
                    PipelineUnit(
                        settings: TransactionSettings([("test.first", "a"), ("test.second", "b'; DROP")]),
                        statements: ["SELECT current_setting('test.first') || '|' || current_setting('test.second') AS seen"]),
                    PipelineUnit(settings: TransactionSettings([("test.first", "c")]), statements: ["SELECT current_setting('test.first') AS seen"]),
                    PipelineUnit(statements: ["SELECT coalesce(current_setting('test.first', true), '') AS seen"]),
                ])
            }
            let seen = try outcomes.map { try $0.get()[0][0].decode("seen", as: String.self) }
            #expect(seen == ["a|b'; DROP", "c", ""])
            // A later segment's settings replace the earlier ones' for the rest of the unit.
            let segmented = try await client.withConnection { connection in
                try await connection.pipeline([
                    PipelineUnit(segments: [
                        .init(settings: TransactionSettings([("test.first", "one")]), statements: ["SELECT current_setting('test.first') AS seen"]),
                        .init(settings: TransactionSettings([("test.first", "two")]), statements: ["SELECT current_setting('test.first') AS seen"]),
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
            #expect(try await client.query("SELECT coalesce(current_setting('test.first', true), '') AS seen")[0].decode("seen", as: String.self) == "")
        }
    }
}
