import AttestPostgres
import Foundation
import Testing

@Suite("Server errors map to PostgresError")
struct ErrorMappingTests {
    @Test func uniqueViolationNamesItsConstraintButDescriptionHidesTheValue() async throws {
        try await withFreshDatabase { client async throws in
            try await client.query("CREATE TABLE people (email text CONSTRAINT people_email_key UNIQUE)")
            try await client.query("INSERT INTO people VALUES (\("alice@example.edu"))")
            let error = await #expect(throws: PostgresError.self) {
                try await client.query("INSERT INTO people VALUES (\("alice@example.edu"))")
            }
            let failure = try #require(error)
            #expect(failure.isUniqueViolation)
            #expect(!failure.isForeignKeyViolation && !failure.isSerializationFailure && !failure.isConnectionError)
            #expect(failure.sqlState == "23505")
            #expect(failure.constraint == "people_email_key")
            #expect(failure.table == "people")
            #expect(failure.detail?.contains("alice@example.edu") == true)
            #expect(!failure.description.contains("alice"))
            #expect(failure.description.contains("unique_violation"))
            #expect(failure.debugDescription.contains("alice@example.edu"))
        }
    }

    /// What the server answers 503 for (the request may succeed later) and what it does not.
    @Test(arguments: [
        ("disk_full", "53100", true), ("out_of_memory", "53200", true), ("admin_shutdown", "57P01", true),
        ("read_only_sql_transaction", "25006", true), ("deadlock_detected", "40P01", true),
        ("check_violation", "23514", false), ("insufficient_privilege", "42501", false), ("query_canceled", "57014", false),
    ])
    func transientErrorsAreTheOnesARetryCanMend(condition: String, sqlState: String, transient: Bool) async throws {
        try await withFreshDatabase { client async throws in
            let error = await #expect(throws: PostgresError.self) {
                try await client.query("DO $$ BEGIN RAISE EXCEPTION 'raised' USING ERRCODE = '\(unsafeRaw: condition)'; END $$")
            }
            #expect(error?.sqlState == sqlState)
            #expect(error?.isTransient == transient, "\(sqlState)")
        }
    }

    @Test func foreignKeyViolation() async throws {
        try await withFreshDatabase { client async throws in
            try await client.query("CREATE TABLE parents (id int PRIMARY KEY)")
            try await client.query("CREATE TABLE children (parent int CONSTRAINT children_parent_fkey REFERENCES parents)")
            let error = await #expect(throws: PostgresError.self) { try await client.query("INSERT INTO children VALUES (\(7))") }
            #expect(error?.isForeignKeyViolation == true)
            #expect(error?.constraint == "children_parent_fkey")
        }
    }

    @Test func syntaxErrorCarriesTheQueryTextWithoutValues() async throws {
        try await withFreshDatabase { client async throws in
            let error = await #expect(throws: PostgresError.self) { try await client.query("SELEC \("secret") AS x") }
            #expect(error?.sqlState == "42601")
            #expect(error?.code == .server)
            #expect(error?.query == "SELEC $1 AS x")
            #expect(error?.debugDescription.contains("secret") == false)
        }
    }

    @Test func serializationFailureIsRecognised() async throws {
        try await withFreshDatabase { client async throws in
            try await client.query("CREATE TABLE counter (n int)")
            try await client.query("INSERT INTO counter VALUES (0)")
            // Two serializable transactions that read then write the same row: one must fail.
            let error = await #expect(throws: PostgresError.self) {
                try await client.withTransaction { first in
                    try await first.query("SET TRANSACTION ISOLATION LEVEL SERIALIZABLE")
                    try await first.query("SELECT n FROM counter")
                    try await client.withTransaction { second in
                        try await second.query("SET TRANSACTION ISOLATION LEVEL SERIALIZABLE")
                        try await second.query("SELECT n FROM counter")
                        try await second.query("UPDATE counter SET n = n + 1")
                    }
                    try await first.query("UPDATE counter SET n = n + 1")
                }
            }
            #expect(error?.isSerializationFailure == true)
            #expect(try await client.query("SELECT n FROM counter")[0].decode("n", as: Int.self) == 1)
        }
    }
}
