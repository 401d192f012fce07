import AttestPostgres
import Foundation
import Testing

@Suite("Prepared statements")
struct PreparedStatementTests {
    static func preparedCount(_ connection: PostgresConnection) async throws -> Int {
        try await connection.query("SELECT count(*)::int AS n FROM pg_prepared_statements")[0].decode("n")
    }

    @Test func aRepeatedStatementIsPreparedOnceAndRunsWithEachCallsValues() async throws {
        try await withFreshDatabase(maxConnections: 1) { client async throws in
            try await client.query("CREATE TABLE items (n int PRIMARY KEY, label text NOT NULL)")
            try await client.withConnection { connection in
                for n in 0..<20 {
                    try await connection.query("INSERT INTO items VALUES (\(Int32(n)), \("item \(n)"))")
                }
                let units = (20..<40).map { n in
                    PipelineUnit(statements: ["INSERT INTO items VALUES (\(Int32(n)), \("item \(n)")) RETURNING label"])
                }
                let outcomes = try await connection.pipeline(units)
                #expect(try outcomes[19].get()[0][0].decode("label", as: String.self) == "item 39")
                // Two INSERT texts (one with RETURNING), two prepared statements; the count query
                // has no parameters and is not prepared.
                #expect(try await Self.preparedCount(connection) == 2)
                let labels = try await connection.query("SELECT label FROM items WHERE n >= \(Int32(38)) ORDER BY n")
                #expect(try labels.map { try $0.decode("label", as: String.self) } == ["item 38", "item 39"])
                #expect(try await Self.preparedCount(connection) == 3)
            }
        }
    }

    @Test func aStatementTheServerRefusesStillReportsItsOwnError() async throws {
        try await withFreshDatabase(maxConnections: 1) { client async throws in
            do {
                try await client.query("SELECT nosuchcolumn FROM pg_class WHERE relname = \("x")")
                Issue.record("an unknown column was accepted")
            } catch let error as PostgresError {
                #expect(error.sqlState == "42703", "\(error.debugDescription)")
            }
        }
    }

    @Test func pastTheCapStatementsStillRunUnprepared() async throws {
        try await withFreshDatabase(maxConnections: 1) { client async throws in
            try await client.withConnection { connection in
                for n in 0..<300 {
                    let rows = try await connection.query("SELECT \(Int32(1))::int + \(unsafeRaw: String(n)) AS n")
                    #expect(try rows[0].decode("n", as: Int.self) == n + 1)
                }
                #expect(try await Self.preparedCount(connection) == 256)
            }
        }
    }
}
