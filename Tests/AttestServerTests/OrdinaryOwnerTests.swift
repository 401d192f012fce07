import AttestPostgres
import AttestSchema
import AttestTestSupport
import Foundation
import Identity
import Journal
import Logging
import Tenancy
import Testing

/// The schema under an owner like a managed PostgreSQL's (Amazon RDS, Cloud SQL, Azure): a role
/// that may create roles but is neither superuser nor BYPASSRLS, so the forced row-level
/// security of the tenant tables applies to it too, inside its SECURITY DEFINER functions.
@Suite("Under an ordinary schema owner")
struct OrdinaryOwnerTests {
    static let owner = "attest_ordinary_owner"

    /// A database migrated by `owner`, who owns the schema and every function in it.
    static func database() async throws -> String {
        let admin = try TestDatabase.adminClient()
        let name = "attest_ordinary_\(UUID().uuidString.prefix(8).lowercased())"
        do {
            try await admin.query(
                """
                DO $$ BEGIN
                    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'attest_ordinary_owner') THEN
                        CREATE ROLE attest_ordinary_owner LOGIN CREATEROLE NOSUPERUSER NOBYPASSRLS;
                    END IF;
                EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
                END $$
                """)
            try await admin.query("CREATE DATABASE \(identifier: name) OWNER \(identifier: Self.owner)")
        } catch {
            await admin.shutdown()
            throw error
        }
        await admin.shutdown()
        _ = try await migrate(name)
        return name
    }

    /// `database` migrated by `owner` to this build's version.
    static func migrate(_ database: String) async throws -> SchemaMigrator.Report {
        let migrating = PostgresClient(
            configuration: PostgresConfiguration(connectionString: "dbname=\(database) user=\(Self.owner)"),
            options: .init(maxConnections: 1), logger: TestDatabase.testLogger)
        do {
            let report = try await SchemaMigrator(logger: TestDatabase.testLogger).migrate(migrating)
            await migrating.shutdown()
            return report
        } catch {
            await migrating.shutdown()
            throw error
        }
    }

    @Test func everyDoorOfTheSchemaOpensUnderAnOrdinaryOwner() async throws {
        let database = try await Self.database()
        let superuser = TestDatabase.client(database: database, role: nil, maxConnections: 1)
        let role = try await superuser.query(
            """
            SELECT r.rolsuper, r.rolbypassrls, count(p.oid) AS functions
            FROM pg_roles r LEFT JOIN pg_proc p ON p.proowner = r.oid AND p.prosecdef
            WHERE r.rolname = \(Self.owner) GROUP BY r.rolsuper, r.rolbypassrls
            """)
        #expect(try role.first?.decode("rolsuper", as: Bool.self) == false && role.first?.decode("rolbypassrls", as: Bool.self) == false)
        #expect(try role.first?.decode("functions", as: Int.self) == 8)

        let server = try await TestServer.make(database: database)
        let north = try await server.campus("north")
        let (member, _) = try await server.user("m@example.edu", at: north)
        // attest_campus_by_slug, attest_campus_directory, attest_auth_generations.
        #expect(try await CampusStore(client: server.pool).find(slug: "north")?.id == north.id)
        #expect(try await CampusStore(client: server.pool).list().map(\.slug) == ["north"])
        // Trusted for a minute: what is checked is the door, not how fast a loaded machine reads
        // through it (a read over three seconds under the whole suite made the test fail once).
        let generations = AuthGenerations(client: server.pool, trustedFor: .seconds(60))
        try await generations.refresh()
        #expect(generations.current(north.id) != nil)
        // attest_journal_share: the link opens, and stops with its member.
        let shares = JournalShareStore(client: server.pool)
        let today = north.localDate(at: Date())
        let (_, token) = try await shares.create(
            campus: north.id, user: member.id, actor: "test", from: today, to: today, seconds: 3_600, now: Date())
        #expect(try await shares.describe(campus: north.id, token: token, now: Date())?.user == member.id)
        #expect(
            try await shares.open(campus: north.id, token: token, format: "pdf", now: Date())
                == .opened(user: member.id, from: today, to: today))
        // The door set the campus for its own statement only.
        try await server.pool.withTransaction(campus: nil) { connection in
            _ = try await connection.query("SELECT * FROM attest_journal_share(\(north.id), \(Data(count: 32)))")
            let after = try await connection.query(
                "SELECT current_setting('attest.campus_id', true) AS campus, current_setting('attest.share_hash', true) AS hash")
            #expect(try after.first?.decode("campus", as: String?.self) ?? "" == "")
            #expect(try after.first?.decode("hash", as: String?.self) ?? "" == "")
        }
        // The workers' doors read across campuses: each campus with undelivered events, each
        // whose reminders are due, each with a key under another key-encryption key.
        let south = try await server.campus("south")
        for campus in [north, south] {
            try await server.pool.query(
                "INSERT INTO notification_outbox (campus_id, id, event, sink_id, payload) VALUES (\(campus.id), \(UUID()), 'reminder.due', 'log', '{}')",
                campus: campus.id.rawValue)
        }
        let outboxDue = try await server.pool.query("SELECT campus_id FROM attest_outbox_due() ORDER BY campus_id")
        #expect(try Set(outboxDue.map { try $0.decode("campus_id", as: UUID.self) }) == [north.id.rawValue, south.id.rawValue])
        let remindersDue = try await CampusSchedule(client: server.pool).due(.reminders, at: Date())
        #expect(Set(remindersDue.campuses) == [north.id, south.id])
        let census: (String) async throws -> Int = { kek in
            try await server.pool.query("SELECT count(*)::int AS n FROM attest_sealing_census(ARRAY[\(kek)], ARRAY['secret'])")[0].decode(
                "n")
        }
        #expect(try await census(TestServer.kek.id) == 0)
        #expect(try await census("another") == 2)
        // attest_forget_audited: a directory's erasure takes the audit entries naming the user.
        let erasing = try await CampusStore(client: server.pool).set(slug: "south", key: "scim-delete", value: "erase", actor: "test")
        let (leaver, _) = try await server.user("leaver@example.edu", at: erasing)
        try await Directory(client: server.pool).deleteUser(
            campus: erasing, id: leaver.id.rawValue, ifMatch: nil, actor: "scim:test", base: "")
        #expect(try await !AuditLog(client: server.pool).entries(campus: erasing.id).contains { $0.target == "leaver@example.edu" })
        // The application's role itself still sees no campus's rows without naming one.
        let seen = try await server.pool.query("SELECT count(*)::int AS n FROM notification_outbox")
        #expect(try seen[0].decode("n", as: Int.self) == 0)
        try await superuser.query("UPDATE users SET active = false WHERE campus_id = \(north.id) AND id = \(member.id.rawValue)")
        #expect(try await shares.open(campus: north.id, token: token, format: "pdf", now: Date()) == nil)
        await superuser.shutdown()
        await server.pool.shutdown()
    }

    /// `attest campus erase` as an owner under the tables' row-level security: the campus and
    /// everything of its go (the cascades are the database's own), the other campus stays.
    @Test func aCampusIsErasedByAnOrdinaryOwner() async throws {
        let database = try await Self.database()
        let cli = { (arguments: [String]) in
            try await ChildProcess.run(
                [ChildProcess.attestBinary] + arguments, environment: ["DATABASE_URL": "dbname=\(database) user=\(Self.owner)"])
        }
        for (slug, email) in [("north", "a@example.edu"), ("south", "b@example.edu")] {
            let created = try await cli(["campus", "create", slug, "--name", slug, "--timezone", "UTC"])
            #expect(created.status == 0, "\(created.stderr)")
            let added = try await cli(["user", "add", slug, email])
            #expect(added.status == 0, "\(added.stderr)")
        }
        let erased = try await cli(["campus", "erase", "north", "--yes"])
        #expect(erased.status == 0 && erased.stdout.contains("Erased campus north ("), "\(erased.stderr)")
        let superuser = TestDatabase.client(database: database, role: nil, maxConnections: 1)
        let left = try await superuser.query(
            "SELECT (SELECT array_agg(slug) FROM campuses) AS campuses, (SELECT array_agg(email) FROM users) AS users")
        #expect(try left[0].decode("campuses", as: [String].self) == ["south"])
        #expect(try left[0].decode("users", as: [String].self) == ["b@example.edu"])
        await superuser.shutdown()
    }

    /// Version 29 gives each reminder of the last two days the member it is for: campus by
    /// campus, so an owner under the tables' row-level security reaches every campus's rows.
    @Test func version29FindsTheRecentRemindersMembersUnderAnOrdinaryOwner() async throws {
        let database = try await Self.database()
        let superuser = TestDatabase.client(database: database, role: nil, maxConnections: 1)
        let (north, south, ana, bob) = (UUID(), UUID(), UUID(), UUID())
        func reminder(_ campus: UUID, _ user: UUID, daysAgo: Int, event: String = "reminder.due") -> String {
            """
            ('\(campus)', gen_random_uuid(), '\(event)', 'log',
             jsonb_build_object('event', '\(event)', 'userId', '\(user.uuidString.lowercased())', 'date', current_date::text),
             now() - interval '\(daysAgo) days')
            """
        }
        try await superuser.withConnection {
            try await $0.runScript(
                unsafeSQL: """
                    INSERT INTO campuses (id, slug, name, time_zone) VALUES ('\(north)', 'north', 'North', 'UTC'),
                        ('\(south)', 'south', 'South', 'UTC');
                    INSERT INTO notification_outbox (campus_id, id, event, sink_id, payload, created_at) VALUES
                        \(reminder(north, ana, daysAgo: 0)), \(reminder(south, bob, daysAgo: 1)), \(reminder(north, ana, daysAgo: 5)),
                        \(reminder(north, ana, daysAgo: 0, event: "badge.red"));
                    DELETE FROM schema_migrations WHERE version >= 29;
                    """)
        }
        let report = try await Self.migrate(database)
        #expect(report.applied.first == 29)
        let rows = try await superuser.query(
            """
            SELECT event, (now() - created_at > interval '2 days') AS old, reminder_for::text AS reminder_for
            FROM notification_outbox ORDER BY created_at DESC, event
            """)
        await superuser.shutdown()
        let found = try rows.map {
            "\(try $0.decode("event", as: String.self)) \(try $0.decode("old", as: Bool.self) ? "old" : "recent") "
                + (try $0.decode("reminder_for", as: String?.self) ?? "none")
        }
        #expect(
            Set(found) == [
                "reminder.due recent \(ana.uuidString.lowercased())", "badge.red recent none",
                "reminder.due recent \(bob.uuidString.lowercased())", "reminder.due old none",
            ], "\(found)")
    }

    /// Version 30 tells an exemption a health officer ended (kept as denied before) from one
    /// refused, by its `exemption.revoke` entry: campus by campus, under an owner the tables'
    /// row-level security holds; one denied, and one whose id only another campus's entry names, stay denied.
    @Test func version30FindsTheExemptionsThatEndedUnderAnOrdinaryOwner() async throws {
        let database = try await Self.database()
        let superuser = TestDatabase.client(database: database, role: nil, maxConnections: 1)
        let (north, south, ana, bob, cara, dan) = (UUID(), UUID(), UUID(), UUID(), UUID(), UUID())
        let (anas, bobs, caras, dans) = (UUID(), UUID(), UUID(), UUID())
        func exemption(_ campus: UUID, _ user: UUID, _ id: UUID) -> String {
            "('\(campus)', '\(user)', '\(id)', 'medical', '\\x00', 'denied', now(), 'test')"
        }
        try await superuser.withConnection {
            try await $0.runScript(
                unsafeSQL: """
                    INSERT INTO campuses (id, slug, name, time_zone) VALUES ('\(north)', 'north', 'North', 'UTC'),
                        ('\(south)', 'south', 'South', 'UTC');
                    INSERT INTO users (campus_id, id, email) VALUES ('\(north)', '\(ana)', 'ana@example.edu'),
                        ('\(north)', '\(bob)', 'bob@example.edu'), ('\(south)', '\(cara)', 'cara@example.edu'),
                        ('\(south)', '\(dan)', 'dan@example.edu');
                    INSERT INTO exemptions (campus_id, user_id, id, kind, note, status, decided_at, decided_by) VALUES
                        \(exemption(north, ana, anas)), \(exemption(north, bob, bobs)), \(exemption(south, cara, caras)),
                        \(exemption(south, dan, dans));
                    INSERT INTO audit_log (campus_id, actor, action, target, details) VALUES
                        ('\(north)', 'officer', 'exemption.approve', '\(ana)', '{"id": "\(anas.uuidString.lowercased())"}'),
                        ('\(north)', 'officer', 'exemption.revoke', '\(ana)', '{"id": "\(anas.uuidString.lowercased())"}'),
                        ('\(north)', 'officer', 'exemption.deny', '\(bob)', '{"id": "\(bobs.uuidString.lowercased())"}'),
                        ('\(south)', 'officer', 'exemption.revoke', '\(cara)', '{"id": "\(caras.uuidString.lowercased())"}'),
                        ('\(north)', 'officer', 'exemption.revoke', '\(dan)', '{"id": "\(dans.uuidString.lowercased())"}');
                    DELETE FROM schema_migrations WHERE version >= 30;
                    """)
        }
        let report = try await Self.migrate(database)
        #expect(report.applied.first == 30)
        let rows = try await superuser.query("SELECT u.email, e.status FROM exemptions e JOIN users u ON u.id = e.user_id ORDER BY 1")
        await superuser.shutdown()
        let found = try rows.map { "\(try $0.decode("email", as: String.self)) \(try $0.decode("status", as: String.self))" }
        #expect(found == ["ana@example.edu ended", "bob@example.edu denied", "cara@example.edu ended", "dan@example.edu denied"])
    }

    /// A SECURITY DEFINER function runs as its owner: a search_path a caller could put a table
    /// of their own in front of would let them change what it reads. Each ends with pg_temp.
    @Test func everySecurityDefinerFunctionEndsItsSearchPathWithPgTemp() async throws {
        let database = try await TestDatabase.create()
        let client = TestDatabase.client(database: database, role: nil, maxConnections: 1)
        let rows = try await client.query(
            """
            SELECT p.proname, coalesce(array_to_string(p.proconfig, ';'), '') AS config FROM pg_proc p
            JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'public' AND p.prosecdef ORDER BY p.proname
            """)
        await client.shutdown()
        #expect(rows.count == 8)
        for row in rows {
            let name: String = try row.decode("proname"), config: String = try row.decode("config")
            let path = config.split(separator: ";").first { $0.hasPrefix("search_path=") }
            #expect(path.map { $0.hasSuffix("pg_temp") } == true, "\(name): \(config)")
        }
    }
}
