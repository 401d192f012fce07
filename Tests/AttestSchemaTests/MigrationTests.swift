import AttestPostgres
import AttestTestSupport
import Foundation
import Testing

@testable import AttestSchema

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

    /// Every file under `Migrations/` is a migration: named `NNNN-name.sql`, its first line its
    /// name, the versions one after another from 2 (a file named otherwise, or a gap, would be
    /// skipped without a word).
    @Test func everyMigrationFileIsAVersionInTurnWithItsName() throws {
        let files = embeddedMigrationFiles()
        #expect(files.count == SchemaMigrator.migrations.count - 1)
        #expect(SchemaMigrator.migrations.map(\.version) == Array(1...SchemaMigrator.latestVersion))
        for migration in SchemaMigrator.migrations.dropFirst() {
            #expect(!migration.name.isEmpty && migration.name.count <= 200 && !migration.name.contains("\n"), "\(migration.version)")
            #expect(migration.sql.hasPrefix("-- \(migration.name)\n"))
        }
        #expect(SchemaMigrator.migration(file: "0017-x.sql", text: "ALTER TABLE t ADD COLUMN c int;\n") == nil)
        #expect(SchemaMigrator.migration(file: "x.sql", text: "-- x\n") == nil)
        #expect(SchemaMigrator.migration(file: "0017-x.sql", text: "-- a name\nSELECT 1;\n")?.name == "a name")
    }

    /// The names of the files under `Migrations/` beside this package's `Package.swift`.
    func embeddedMigrationFiles() -> [String] {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let names = (try? FileManager.default.contentsOfDirectory(atPath: root.appending(path: "Migrations").path)) ?? []
        return names.filter { $0.hasSuffix(".sql") }
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

    /// A database made by the first release (attestations keyed by id, with a full date
    /// index) gets version 2 (and 3, which finds its work done) and ends with the keys and
    /// indexes `schema.sql` makes.
    @Test func aVersion1DatabaseGetsVersion2AndEndsAsSchemaSQLBuildsIt() async throws {
        let (owner, migrator) = try await Self.migrated()
        let fresh = try await Self.attestationKeys(owner)
        #expect(fresh.contains { $0.hasPrefix("attestations_pkey: ") && $0.hasSuffix("(campus_id, user_id, local_date)") })
        // Back to version 1's shape, as a database migrated by the first release has it.
        try await owner.withConnection {
            try await $0.runScript(
                unsafeSQL: """
                    ALTER TABLE attestations DROP CONSTRAINT attestations_pkey;
                    DROP INDEX attestations_follow_ups, attestations_answered;
                    ALTER TABLE attestations ADD PRIMARY KEY (campus_id, id);
                    ALTER TABLE attestations ADD UNIQUE (campus_id, user_id, local_date);
                    CREATE INDEX attestations_by_day_color ON attestations (campus_id, local_date, color);
                    DELETE FROM schema_migrations WHERE version > 1;
                    """)
        }
        #expect(try await Self.attestationKeys(owner) != fresh)
        let report = try await migrator.migrate(owner)
        #expect(report.applied == Array(2...SchemaMigrator.latestVersion))
        #expect(try await Self.attestationKeys(owner) == fresh)
        await owner.shutdown()
    }

    /// A database at version 2 (before the security review) gets version 3 alone and ends
    /// with the tables, columns, policies, functions and grants `schema.sql` makes.
    @Test func aVersion2DatabaseGetsVersion3AndEndsAsSchemaSQLBuildsIt() async throws {
        let (owner, migrator) = try await Self.migrated()
        let fresh = try await Self.catalog(owner)
        #expect(fresh.contains { $0.hasPrefix("policy campuses.campus_isolation") })
        #expect(fresh.contains("function attest_campus_by_slug true"))
        try await owner.withConnection {
            try await $0.runScript(
                unsafeSQL: """
                    DROP POLICY campus_isolation ON campuses;
                    ALTER TABLE campuses DISABLE ROW LEVEL SECURITY;
                    GRANT DELETE ON campuses TO attest_app;
                    DROP FUNCTION attest_campus_by_slug(text), attest_campus_directory();
                    ALTER TABLE campus_oidc_issuers DROP COLUMN allow_any_domain, DROP COLUMN label, DROP COLUMN client_id, DROP COLUMN client_secret;
                    ALTER TABLE badge_keys DROP COLUMN kek_id;
                    DROP TABLE id_token_uses, sign_in_nonces, badge_subject_keys;
                    DELETE FROM schema_migrations WHERE version > 2;
                    """)
        }
        #expect(try await Self.catalog(owner) != fresh)
        let report = try await migrator.migrate(owner)
        #expect(report.applied == Array(3...SchemaMigrator.latestVersion))
        let migrated = try await Self.catalog(owner)
        #expect(migrated == fresh, "differs: \(Set(migrated).symmetricDifference(fresh).sorted())")
        await owner.shutdown()
    }

    /// A database at version 8 keeps its roles in `user_roles`; version 9 moves each user's
    /// onto their row (sorted; a user with no row keeps the member role) and drops the table,
    /// ending as `schema.sql` builds it.
    @Test func aVersion8DatabaseGetsItsRolesOntoTheUsersRows() async throws {
        let (owner, migrator) = try await Self.migrated()
        let fresh = try await Self.catalog(owner)
        let (campus, admin, plain, unlisted) = (UUID(), UUID(), UUID(), UUID())
        try await owner.withConnection {
            try await $0.runScript(
                unsafeSQL: """
                    ALTER TABLE users DROP COLUMN roles;
                    CREATE TABLE user_roles (
                        campus_id uuid NOT NULL, user_id uuid NOT NULL,
                        role text NOT NULL CHECK (role IN ('member', 'screener', 'health_officer', 'admin')),
                        granted_at timestamptz NOT NULL DEFAULT now(), granted_by text NOT NULL,
                        PRIMARY KEY (campus_id, user_id, role),
                        FOREIGN KEY (campus_id, user_id) REFERENCES users (campus_id, id) ON DELETE CASCADE);
                    ALTER TABLE user_roles ENABLE ROW LEVEL SECURITY;
                    ALTER TABLE user_roles FORCE ROW LEVEL SECURITY;
                    INSERT INTO campuses (id, slug, name, time_zone) VALUES ('\(campus)', 'old', 'Old', 'UTC');
                    INSERT INTO users (campus_id, id, email) VALUES ('\(campus)', '\(admin)', 'admin@old.edu'),
                        ('\(campus)', '\(plain)', 'plain@old.edu'), ('\(campus)', '\(unlisted)', 'unlisted@old.edu');
                    INSERT INTO user_roles (campus_id, user_id, role, granted_by) VALUES ('\(campus)', '\(admin)', 'member', 'test'),
                        ('\(campus)', '\(admin)', 'screener', 'test'), ('\(campus)', '\(admin)', 'admin', 'test'),
                        ('\(campus)', '\(plain)', 'member', 'test');
                    DELETE FROM schema_migrations WHERE version > 8;
                    """)
        }
        let report = try await migrator.migrate(owner)
        #expect(report.applied == Array(9...SchemaMigrator.latestVersion))
        let rows = try await owner.query("SELECT email, array_to_string(roles, ',') AS roles FROM users ORDER BY email")
        #expect(
            try rows.map { "\(try $0.decode("email", as: String.self)) \(try $0.decode("roles", as: String.self))" } == [
                "admin@old.edu admin,member,screener", "plain@old.edu member", "unlisted@old.edu member",
            ])
        let migrated = try await Self.catalog(owner)
        #expect(migrated == fresh, "differs: \(Set(migrated).symmetricDifference(fresh).sorted())")
        await owner.shutdown()
    }

    /// A database at version 9 has a foreign key from each attestation to its questionnaire
    /// and lets the application change or delete a questionnaire; version 10 drops the key,
    /// takes those two privileges, keeps every row, and ends as `schema.sql` builds it.
    @Test func aVersion9DatabaseLosesTheQuestionnaireKeyAndTheRightToChangeAVersion() async throws {
        let (owner, migrator) = try await Self.migrated()
        let fresh = try await Self.catalog(owner)
        #expect(fresh.contains("foreign key attestations (campus_id, user_id) -> users ON DELETE c"))
        #expect(!fresh.contains { $0.hasPrefix("foreign key attestations (campus_id, survey_version)") })
        #expect(fresh.contains("grant questionnaires INSERT") && !fresh.contains("grant questionnaires DELETE"))
        let (campus, member) = (UUID(), UUID())
        try await owner.withConnection {
            try await $0.runScript(
                unsafeSQL: """
                    ALTER TABLE attestations ADD FOREIGN KEY (campus_id, survey_version) REFERENCES questionnaires (campus_id, version);
                    GRANT UPDATE, DELETE ON questionnaires TO attest_app;
                    INSERT INTO campuses (id, slug, name, time_zone) VALUES ('\(campus)', 'old', 'Old', 'UTC');
                    INSERT INTO users (campus_id, id, email) VALUES ('\(campus)', '\(member)', 'member@old.edu');
                    INSERT INTO questionnaires (campus_id, version, definition, published_by) VALUES ('\(campus)', 1, '{}', 'test');
                    INSERT INTO attestations (campus_id, id, user_id, local_date, submitted_at, on_time, survey_version, answers,
                                              color, valid_until, rule_id)
                    VALUES ('\(campus)', gen_random_uuid(), '\(member)', '2026-11-20', now(), true, 1, '{}', 'green', now(), 'test');
                    DELETE FROM schema_migrations WHERE version > 9;
                    """)
        }
        #expect(try await Self.catalog(owner) != fresh)
        let report = try await migrator.migrate(owner)
        #expect(report.applied == Array(10...SchemaMigrator.latestVersion))
        let migrated = try await Self.catalog(owner)
        #expect(migrated == fresh, "differs: \(Set(migrated).symmetricDifference(fresh).sorted())")
        let kept = try await owner.query("SELECT survey_version FROM attestations WHERE campus_id = \(campus)")
        #expect(try kept.map { try $0.decode("survey_version", as: Int.self) } == [1])
        await owner.shutdown()
    }

    /// A new database migrated to the latest version, its owner's client, and the migrator.
    static func migrated() async throws -> (PostgresClient, SchemaMigrator) {
        let owner = TestDatabase.client(database: try await TestDatabase.create(migrated: false), role: nil)
        let migrator = SchemaMigrator(logger: TestDatabase.testLogger)
        _ = try await migrator.migrate(owner)
        return (owner, migrator)
    }

    /// What the security review changed, as lines: columns of every public table, row-level
    /// security and policies, functions, foreign keys, and the application role's table
    /// privileges.
    static func catalog(_ client: PostgresClient) async throws -> [String] {
        try await client.query(
            """
            SELECT 'column ' || table_name || '.' || column_name || ' ' || data_type || ' ' || is_nullable || ' '
                   || coalesce(column_default, '') || ' ' || is_identity AS line
            FROM information_schema.columns WHERE table_schema = 'public'
            UNION ALL
            SELECT 'trigger ' || tgrelid::regclass::text || '.' || tgname FROM pg_trigger WHERE NOT tgisinternal
            UNION ALL
            SELECT 'rls ' || relname || ' ' || relrowsecurity || ' ' || relforcerowsecurity FROM pg_class
            WHERE relnamespace = 'public'::regnamespace AND relkind = 'r'
            UNION ALL
            SELECT 'policy ' || tablename || '.' || policyname || ' ' || coalesce(qual, '') || ' ' || coalesce(with_check, '') FROM pg_policies
            UNION ALL
            SELECT 'function ' || proname || ' ' || prosecdef FROM pg_proc WHERE pronamespace = 'public'::regnamespace
            UNION ALL
            SELECT 'foreign key ' || conrelid::regclass::text || ' ('
                   || (SELECT string_agg(attname, ', ' ORDER BY k.n) FROM unnest(conkey) WITH ORDINALITY AS k(attnum, n)
                       JOIN pg_attribute ON attrelid = conrelid AND pg_attribute.attnum = k.attnum)
                   || ') -> ' || confrelid::regclass::text || ' ON DELETE ' || confdeltype::text
            FROM pg_constraint WHERE contype = 'f' AND connamespace = 'public'::regnamespace
            UNION ALL
            SELECT 'grant ' || table_name || ' ' || privilege_type FROM information_schema.role_table_grants
            WHERE grantee = 'attest_app'
            ORDER BY line
            """
        ).map { try $0.decode("line") }
    }

    /// The indexes of `attestations` as `name: definition`, sorted.
    static func attestationKeys(_ client: PostgresClient) async throws -> [String] {
        try await client.query(
            "SELECT indexname || ': ' || indexdef AS line FROM pg_indexes WHERE tablename = 'attestations' ORDER BY indexname"
        ).map { try $0.decode("line") }
    }

    @Test func theEmbeddedSchemaIsTheFileInTheRepository() throws {
        let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appending(path: "schema.sql")
        let text = try String(contentsOf: file, encoding: .utf8)
        #expect(
            SchemaMigrator.schemaSQL.trimmingCharacters(in: .whitespacesAndNewlines) == text.trimmingCharacters(in: .whitespacesAndNewlines)
        )
    }
}
