import AttestPostgres
import AttestSchema
import AttestTestSupport
import Foundation
import Testing

@Suite("attest migrate")
struct MigrationTests {
    @Test func aSecondRunIsANoOp() async throws {
        let name = try await TestDatabase.create(migrated: false)
        let owner = TestDatabase.client(database: name, role: nil)
        let migrator = SchemaMigrator(logger: TestDatabase.testLogger)
        let first = try await migrator.migrate(owner)
        #expect(first.applied == SchemaMigrator.migrations.map(\.version))
        let tables = try await owner.query("SELECT count(*) AS n FROM pg_tables WHERE schemaname = 'public'")
        let second = try await migrator.migrate(owner)
        #expect(second.applied.isEmpty)
        #expect(second.version == first.version)
        let tablesAfter = try await owner.query("SELECT count(*) AS n FROM pg_tables WHERE schemaname = 'public'")
        #expect(try tables[0].decode("n", as: Int.self) == tablesAfter[0].decode("n", as: Int.self))
        // The file itself is idempotent too: applying it again over a migrated database changes nothing.
        try await owner.withConnection { try await $0.runScript(unsafeSQL: SchemaMigrator.schemaSQL) }
        let versions = try await owner.query("SELECT version FROM schema_migrations ORDER BY version")
        #expect(try versions.map { try $0.decode("version", as: Int.self) } == SchemaMigrator.migrations.map(\.version))
        await owner.shutdown()
    }

    @Test func concurrentRunsQueueOnTheLockAndApplyOnce() async throws {
        let name = try await TestDatabase.create(migrated: false)
        let clients = (0..<4).map { _ in TestDatabase.client(database: name, role: nil, maxConnections: 1) }
        let reports = try await withThrowingTaskGroup(of: SchemaMigrator.Report.self) { group in
            for client in clients {
                group.addTask { try await SchemaMigrator(logger: TestDatabase.testLogger).migrate(client) }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(reports.filter { !$0.applied.isEmpty }.count == 1)
        #expect(Set(reports.map(\.version)).count == 1)
        let rows = try await clients[0].query("SELECT count(*) AS n FROM schema_migrations")
        #expect(try rows[0].decode("n", as: Int.self) == SchemaMigrator.migrations.count)
        for client in clients { await client.shutdown() }
    }

    @Test func theEmbeddedSchemaIsTheFileInTheRepository() throws {
        let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appending(path: "schema.sql")
        let text = try String(contentsOf: file, encoding: .utf8)
        #expect(SchemaMigrator.schemaSQL.trimmingCharacters(in: .whitespacesAndNewlines) == text.trimmingCharacters(in: .whitespacesAndNewlines))
    }
}
