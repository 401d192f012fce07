import AttestPostgres
import AttestSchema
import AttestTestSupport
import Foundation
import Testing

/// The schema's own rules (DESIGN §2), checked against the catalog of a migrated database.
@Suite("Schema rules")
struct SchemaRulesTests {
    static let referenceTables: Set<String> = ["campuses", "schema_migrations", "community_regions", "community_days", "shc_directory"]
    /// A member's own tables: a second, restrictive policy admits only the member a transaction names.
    static let ownerReadTables: Set<String> = ["notification_outbox", "badge_keys", "badge_subject_keys", "campus_plugins"]
    static let memberTables: Set<String> = [
        "journal_entries", "journal_audio", "journal_audio_chunks", "episodes", "journal_shares", "journal_share_openings",
        "member_places", "member_profiles",
    ]

    @Test func everyTenantTableLeadsItsKeysWithCampusAndForcesRowLevelSecurity() async throws {
        let name = try await TestDatabase.create()
        let owner = TestDatabase.client(database: name, role: nil)
        defer { Task { await owner.shutdown() } }
        let tables = try await owner.query(
            """
            SELECT c.relname AS name, c.relrowsecurity AS rls, c.relforcerowsecurity AS forced,
                   EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'campus_id') AS has_campus,
                   (SELECT count(*) FROM pg_policy p WHERE p.polrelid = c.oid) AS policies,
                   EXISTS (SELECT 1 FROM pg_policy p WHERE p.polrelid = c.oid AND p.polname = 'member_only' AND NOT p.polpermissive
                           AND pg_get_expr(p.polqual, p.polrelid) LIKE '%attest.user_id%'
                           AND pg_get_expr(p.polwithcheck, p.polrelid) LIKE '%attest.user_id%') AS member_only
            FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = 'public' AND c.relkind = 'r'
            """)
        let tenantTables = try tables.filter { !Self.referenceTables.contains(try $0.decode("name", as: String.self)) }
        #expect(tenantTables.count >= 12)
        for table in tenantTables {
            let table_name = try table.decode("name", as: String.self)
            #expect(try table.decode("has_campus", as: Bool.self), "\(table_name) has no campus_id")
            #expect(try table.decode("rls", as: Bool.self), "\(table_name) lacks row-level security")
            #expect(try table.decode("forced", as: Bool.self), "\(table_name) does not force row-level security")
            let memberTable = Self.memberTables.contains(table_name)
            // The owner reads every row of the tables the workers' doors read across campuses.
            let ownerReads = Self.ownerReadTables.contains(table_name) ? 1 : 0
            #expect(
                try table.decode("policies", as: Int.self) == (table_name == "journal_shares" ? 3 : memberTable ? 2 : 1) + ownerReads,
                "\(table_name) policy count")
            #expect(try table.decode("member_only", as: Bool.self) == memberTable, "\(table_name): member_only policy")
        }
        // Those owner's policies only read, and only for the owner: never the application's role.
        let ownerReads = try await owner.query(
            "SELECT tablename, cmd, roles::text[] AS roles, current_user::text AS me FROM pg_policies WHERE policyname = 'owner_reads'")
        #expect(try Set(ownerReads.map { try $0.decode("tablename", as: String.self) }) == Self.ownerReadTables)
        for policy in ownerReads {
            #expect(try policy.decode("cmd", as: String.self) == "SELECT")
            #expect(try policy.decode("roles", as: [String].self) == [try policy.decode("me", as: String.self)])
        }
        // Every primary and unique key of a tenant table starts with campus_id.
        let keys = try await owner.query(
            """
            SELECT rel.relname AS table_name, con.conname AS key_name, att.attname AS first_column
            FROM pg_constraint con
            JOIN pg_class rel ON rel.oid = con.conrelid
            JOIN pg_namespace n ON n.oid = rel.relnamespace
            JOIN pg_attribute att ON att.attrelid = con.conrelid AND att.attnum = con.conkey[1]
            WHERE n.nspname = 'public' AND con.contype IN ('p', 'u')
            """)
        for key in keys {
            let table = try key.decode("table_name", as: String.self)
            guard !Self.referenceTables.contains(table) else { continue }
            let keyName = try key.decode("key_name", as: String.self)
            #expect(try key.decode("first_column", as: String.self) == "campus_id", "\(table).\(keyName)")
        }
    }

    @Test func theApplicationRoleOwnsNothingAndCannotBypassSecurity() async throws {
        let name = try await TestDatabase.create()
        let owner = TestDatabase.client(database: name, role: nil)
        defer { Task { await owner.shutdown() } }
        let role = try await owner.query(
            "SELECT rolsuper, rolbypassrls, rolcanlogin FROM pg_roles WHERE rolname = \(SchemaMigrator.applicationRole)")
        #expect(try role[0].decode("rolsuper", as: Bool.self) == false)
        #expect(try role[0].decode("rolbypassrls", as: Bool.self) == false)
        let owned = try await owner.query(
            "SELECT count(*) AS n FROM pg_tables WHERE schemaname = 'public' AND tableowner = \(SchemaMigrator.applicationRole)")
        #expect(try owned[0].decode("n", as: Int.self) == 0)
    }
}
