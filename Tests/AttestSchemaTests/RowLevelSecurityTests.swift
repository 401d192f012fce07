import AttestPlugins
import AttestPostgres
import AttestSchema
import AttestTestSupport
import Foundation
import Tenancy
import Testing

@Suite("Row-level security")
struct RowLevelSecurityTests {
    /// Two campuses with one user each, inserted through the application role.
    static func twoCampuses(_ app: PostgresClient) async throws -> (Campus, Campus) {
        let store = CampusStore(client: app)
        let a = try await store.create(NewCampus(slug: "campus-a", name: "A", timeZone: "America/New_York"))
        let b = try await store.create(NewCampus(slug: "campus-b", name: "B", timeZone: "Pacific/Auckland"))
        for (campus, email) in [(a, "alice@a.edu"), (b, "bob@b.edu")] {
            try await app.query(
                "INSERT INTO users (campus_id, id, email) VALUES (\(campus.id), \(UUID()), \(email))", campus: campus.id.rawValue)
        }
        return (a, b)
    }

    /// Both ways the campus setting is made: `SET LOCAL` in an explicit block is what a Citus
    /// coordinator passes on to its workers.
    @Test(arguments: [TransactionSettings.Style.setConfig, .setLocal])
    func withCampusASetAQueryWithoutWhereSeesNoRowOfCampusB(style: TransactionSettings.Style) async throws {
        let name = try await TestDatabase.create()
        let app = TestDatabase.client(database: name, settingsStyle: style)
        defer { Task { await app.shutdown() } }
        let (a, b) = try await Self.twoCampuses(app)
        let seen = try await app.withTransaction(campus: a.id.rawValue) { connection in
            try await connection.query("SELECT email, campus_id FROM users")
        }
        #expect(try seen.map { try $0.decode("email", as: String.self) } == ["alice@a.edu"])
        let fromB = try await app.query("SELECT email FROM users", campus: b.id.rawValue)
        #expect(try fromB.map { try $0.decode("email", as: String.self) } == ["bob@b.edu"])
    }

    @Test func withoutACampusTheApplicationRoleSeesNothing() async throws {
        let name = try await TestDatabase.create()
        let app = TestDatabase.client(database: name)
        defer { Task { await app.shutdown() } }
        _ = try await Self.twoCampuses(app)
        #expect(try await app.query("SELECT email FROM users").isEmpty)
        // The owner (superuser here) still sees both: the wall is for the application role.
        let owner = TestDatabase.client(database: name, role: nil)
        #expect(try await owner.query("SELECT email FROM users").count == 2)
        await owner.shutdown()
    }

    @Test func writesIntoAnotherCampusAreRefused() async throws {
        let name = try await TestDatabase.create()
        let app = TestDatabase.client(database: name)
        defer { Task { await app.shutdown() } }
        let (a, b) = try await Self.twoCampuses(app)
        let error = await #expect(throws: PostgresError.self) {
            try await app.query(
                "INSERT INTO users (campus_id, id, email) VALUES (\(b.id), \(UUID()), \("mallory@b.edu"))", campus: a.id.rawValue)
        }
        #expect(error?.sqlState == "42501")
        let updated = try await app.query("UPDATE users SET display_name = 'changed' WHERE campus_id = \(b.id)", campus: a.id.rawValue)
        #expect(updated.affectedRows == 0)
        let deleted = try await app.query("DELETE FROM users", campus: a.id.rawValue)
        #expect(deleted.affectedRows == 1)
        #expect(try await app.query("SELECT email FROM users", campus: b.id.rawValue).count == 1)
    }

    /// Campuses are behind the wall too: with campus A set the application sees and changes
    /// row A only, and it deletes none (a cascade would wipe the append-only audit log). The
    /// slug lookup and the workers' list go through the schema's two named functions.
    @Test func aTransactionSeesAndChangesOnlyItsOwnCampusAndDeletesNone() async throws {
        let name = try await TestDatabase.create()
        let app = TestDatabase.client(database: name)
        defer { Task { await app.shutdown() } }
        let (a, b) = try await Self.twoCampuses(app)
        let seen = try await app.query("SELECT slug FROM campuses", campus: a.id.rawValue)
        #expect(try seen.map { try $0.decode("slug", as: String.self) } == ["campus-a"])
        #expect(try await app.query("SELECT slug FROM campuses").isEmpty)
        let renamed = try await app.query("UPDATE campuses SET name = 'Taken over'", campus: a.id.rawValue)
        #expect(renamed.affectedRows == 1)
        let owner = TestDatabase.client(database: name, role: nil)
        defer { Task { await owner.shutdown() } }
        let names = try await owner.query("SELECT name FROM campuses ORDER BY slug").map { try $0.decode("name", as: String.self) }
        #expect(names == ["Taken over", "B"])
        let deleted = await #expect(throws: PostgresError.self) {
            try await app.query("DELETE FROM campuses WHERE id = \(a.id)", campus: a.id.rawValue)
        }
        #expect(deleted?.sqlState == "42501")
        let store = CampusStore(client: app)
        #expect(try await store.find(slug: "campus-b")?.id == b.id)
        #expect(try await store.find(slug: "campus-c") == nil)
        #expect(try await store.list().map(\.slug) == ["campus-a", "campus-b"])
        #expect(try await owner.query("SELECT count(*) AS n FROM audit_log")[0].decode("n", as: Int.self) == 2)
    }

    /// A published questionnaire version is what its attestations were answered against, and
    /// no foreign key guards it (schema version 10): the application may publish one, never
    /// change or delete one, even on its own campus.
    @Test func theApplicationPublishesQuestionnaireVersionsAndNeverChangesOrDeletesOne() async throws {
        let name = try await TestDatabase.create()
        let app = TestDatabase.client(database: name)
        defer { Task { await app.shutdown() } }
        let (a, _) = try await Self.twoCampuses(app)
        try await app.query(
            "INSERT INTO questionnaires (campus_id, version, definition, published_by) VALUES (\(a.id), 1, '{}', 'test')",
            campus: a.id.rawValue)
        let changed = await #expect(throws: PostgresError.self) {
            try await app.query("UPDATE questionnaires SET definition = '{\"questions\": []}'", campus: a.id.rawValue)
        }
        #expect(changed?.sqlState == "42501")
        let deleted = await #expect(throws: PostgresError.self) {
            try await app.query("DELETE FROM questionnaires WHERE version = 1", campus: a.id.rawValue)
        }
        #expect(deleted?.sqlState == "42501")
        let kept = try await app.query("SELECT definition::text AS definition FROM questionnaires", campus: a.id.rawValue)
        #expect(try kept.map { try $0.decode("definition", as: String.self) } == ["{}"])
    }
}
