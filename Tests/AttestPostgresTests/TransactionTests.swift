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

    @Test func theCampusSettingLastsForTheTransactionOnly() async throws {
        try await withFreshDatabase(maxConnections: 1) { client async throws in
            let campus = UUID()
            let inside = try await client.withTransaction(campus: campus) { connection in
                try await connection.query("SELECT current_setting('attest.campus_id', true) AS campus")[0]
                    .decode("campus", as: String?.self)
            }
            #expect(inside == campus.uuidString.lowercased())
            // Same (only) connection afterwards: the setting is gone.
            let after = try await client.query("SELECT coalesce(current_setting('attest.campus_id', true), '') AS campus")
            #expect(try after[0].decode("campus", as: String.self) == "")
            let single = try await client.query("SELECT current_setting('attest.campus_id') AS campus", campus: campus)
            #expect(try single[0].decode("campus", as: String.self) == campus.uuidString.lowercased())
        }
    }
}
