import AttestPostgres
import Foundation
import Testing

@Suite("Transactions")
struct TransactionTests {
    struct Boom: Error {}

    @Test func throwingRollsBackEverything() async throws {
        try await withFreshDatabase { client async throws in
            try await client.query("CREATE TABLE items (name text)")
            await #expect(throws: Boom.self) {
                try await client.withTransaction { connection in
                    try await connection.query("INSERT INTO items VALUES (\("first"))")
                    try await connection.query("INSERT INTO items VALUES (\("second"))")
                    throw Boom()
                }
            }
            #expect(try await client.query("SELECT count(*) AS n FROM items")[0].decode("n", as: Int.self) == 0)
            // The connection went back to the pool clean and is usable.
            try await client.withTransaction { connection in
                try await connection.query("INSERT INTO items VALUES (\("kept"))")
            }
            #expect(try await client.query("SELECT count(*) AS n FROM items")[0].decode("n", as: Int.self) == 1)
        }
    }

    @Test func aSwallowedStatementErrorFailsTheCommit() async throws {
        try await withFreshDatabase { client async throws in
            try await client.query("CREATE TABLE items (name text UNIQUE)")
            let error = await #expect(throws: PostgresError.self) {
                try await client.withTransaction { connection in
                    try await connection.query("INSERT INTO items VALUES (\("a"))")
                    _ = try? await connection.query("INSERT INTO items VALUES (\("a"))")
                }
            }
            #expect(error?.message.contains("rolled back") == true)
            #expect(try await client.query("SELECT count(*) AS n FROM items")[0].decode("n", as: Int.self) == 0)
        }
    }

    @Test func transactionSettingsLastForTheTransactionOnly() async throws {
        try await withFreshDatabase(maxConnections: 1) { client async throws in
            let settings = TransactionSettings([("test.scope", "inside")])
            let inside = try await client.withTransaction(settings: settings) { connection in
                try await connection.query("SELECT current_setting('test.scope', true) AS scope")[0].decode("scope", as: String?.self)
            }
            #expect(inside == "inside")
            // Same (only) connection afterwards: the setting is gone.
            let after = try await client.query("SELECT coalesce(current_setting('test.scope', true), '') AS scope")
            #expect(try after[0].decode("scope", as: String.self) == "")
            let single = try await client.query("SELECT current_setting('test.scope') AS scope", settings: settings)
            #expect(try single[0].decode("scope", as: String.self) == "inside")
        }
    }
}
