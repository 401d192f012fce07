import AttestPlugins
import AttestPluginsTesting
import AttestPostgres
import AttestTestSupport
import Foundation
import HTTPTypes
import Identity
import Journal
import Notifications
import Surveys
import Tenancy
import Testing

/// `attest user deactivate|reactivate|erase`, end to end with the real binary.
@Suite("A user's lifecycle")
struct UserLifecycleTests {
    static func attest(_ arguments: String..., database: String) async throws -> (status: Int32, stdout: String, stderr: String) {
        try await ChildProcess.run(
            [ChildProcess.attestBinary] + arguments, environment: ["DATABASE_URL": TestDatabase.url(database: database)])
    }

    static func identity(_ email: String) -> VerifiedIdentity {
        VerifiedIdentity(
            issuer: "https://idp.example", subject: "sub-\(email)", email: email, name: "Ana", hostedDomain: nil, tokenID: Data(count: 32),
            expiresAt: Date().addingTimeInterval(600))
    }

    @Test func aDeactivatedMemberLosesSessionsSignInAndLinksUntilReactivated() async throws {
        let server = try await TestServer.make()
        let north = try await server.campus("north")
        let (ana, token) = try await server.user("ana@example.edu", at: north)
        _ = try await server.user("bob@example.edu", at: north)
        try await CampusPluginStore(client: server.pool).enable(
            campus: north, kind: .sink, id: "log", settings: .object([:]), actor: "test")
        let today = north.localDate(at: Date())
        let (_, link) = try await JournalShareStore(client: server.pool).create(
            campus: north.id, user: ana.id, actor: "test", from: today, to: today, seconds: 3_600, now: Date())
        let users = UserStore(client: server.pool)
        @Sendable func activeMembers() async throws -> Int {
            try await server.pool.query(
                "SELECT coalesce(sum(change), 0)::int8 AS n FROM member_changes WHERE campus_id = \(north.id)", campus: north.id.rawValue
            )
            .first?.decode("n") ?? -1
        }
        #expect(try await activeMembers() == 2)

        let off = try await Self.attest("user", "deactivate", "north", "Ana@Example.edu", database: server.database)
        #expect(off.status == 0 && off.stdout.contains("1 sessions revoked"), "\(off.stderr)")
        #expect(
            try await Self.attest("user", "deactivate", "north", "ana@example.edu", database: server.database).stdout.contains(
                "deactivated already"))
        #expect(
            try await Self.attest("user", "list", "north", database: server.database).stdout.contains(
                "ana@example.edu\tmember\tana@example.edu\tdeactivated"))
        #expect(try await activeMembers() == 1)
        // Today's reminders go to Bob alone.
        let evening = north.startOfDay(today).addingTimeInterval(23 * 3_600)
        #expect(try await Reminders(client: server.pool, audience: .unattested).run(campuses: [north], at: evening) == ["north": 1])
        try await server.run { api in
            let me = try await api.send(.get, "/v1/campuses/north/me", template: "/v1/campuses/{campus}/me", token: token)
            #expect(me.status == 401)
            let shared = try await api.send(.get, "/v1/campuses/north/shared/\(link)", template: "/v1/campuses/{campus}/shared/{token}")
            #expect(shared.status == 404)
            await #expect(throws: IdentityError.deactivated) {
                try await users.onboard(campus: north, identity: Self.identity("ana@example.edu"))
            }

            let on = try await Self.attest("user", "reactivate", "north", "ana@example.edu", database: server.database)
            #expect(on.status == 0 && on.stdout.contains("may sign in again"), "\(on.stderr)")
            #expect(try await users.onboard(campus: north, identity: Self.identity("ana@example.edu")).id == ana.id)
            #expect(try await activeMembers() == 2)
            let audit = try await AuditLog(client: server.pool).entries(campus: north.id).map(\.action)
            #expect(audit.contains("user.deactivate") && audit.contains("user.reactivate"))
        }
        let unknown = try await Self.attest("user", "deactivate", "north", "nobody@example.edu", database: server.database)
        #expect(unknown.status == 1 && unknown.stderr.contains("no user with email nobody@example.edu"))
    }

    @Test func anErasedMemberLeavesNoRowAndTheAuditLogOnlyThatItHappened() async throws {
        let clock = try TestClock("2026-11-20T14:00:00Z")
        let (server, north) = try await AttestationTests.setUp(clock: clock)
        let (ana, token) = try await server.user("ana@example.edu", at: north, roles: [.screener])
        let (bob, bobToken) = try await server.user("bob@example.edu", at: north)
        // Each submission's event waits in the outbox, naming its member.
        try await CampusPluginStore(client: server.pool).enable(
            campus: north, kind: .sink, id: "log", settings: .object(["events": .array([.string("attestation.submitted")])]),
            actor: "test")
        try await server.run { api in
            for member in [token, bobToken] {
                let requests = [
                    ("attestations", AttestationTests.body(AttestationTests.healthy)), ("me/journal", #"{"title": "words"}"#),
                    ("me/shares", #"{"expiresIn": 3600, "from": "2026-11-20", "to": "2026-11-20"}"#),
                ]
                for (path, json) in requests {
                    let reply = try await api.send(
                        .post, "/v1/campuses/north/\(path)", template: "/v1/campuses/{campus}/\(path)", token: member, json: json)
                    #expect(reply.status == 201, "\(path): \(reply.body)")
                }
            }
        }
        let refused = try await Self.attest("user", "erase", "north", "ana@example.edu", database: server.database)
        #expect(refused.status == 1 && refused.stderr.contains("pass --yes"))
        let erased = try await Self.attest("user", "erase", "north", "ana@example.edu", "--yes", database: server.database)
        #expect(erased.status == 0 && erased.stdout.contains("audit entries naming them removed"), "\(erased.stderr)")
        #expect(erased.stdout.contains("; 1 notification events naming them deleted."), "\(erased.stdout)")

        let owner = TestDatabase.client(database: server.database, role: nil, maxConnections: 1)
        let events = try await owner.query(
            """
            SELECT count(*) FILTER (WHERE payload->>'userId' = \(ana.id.rawValue.lowercasedText))::int AS ana,
                   count(*) FILTER (WHERE payload->>'userId' = \(bob.id.rawValue.lowercasedText))::int AS bob FROM notification_outbox
            """)
        #expect(try events.first?.decode("ana", as: Int.self) == 0 && events.first?.decode("bob", as: Int.self) == 1)
        for table in ["users", "sessions", "attestations", "journal_entries", "journal_shares", "member_settings", "episodes"] {
            let column = table == "users" ? "id" : "user_id"
            let counts = try await owner.query(
                """
                SELECT count(*) FILTER (WHERE \(identifier: column) = \(ana.id.rawValue)) AS ana,
                       count(*) FILTER (WHERE \(identifier: column) = \(bob.id.rawValue)) AS bob FROM \(identifier: table)
                """)
            #expect(try counts.first?.decode("ana", as: Int.self) == 0, "\(table) keeps a row of the erased member")
            if table != "member_settings" && table != "episodes" {
                #expect(try counts.first?.decode("bob", as: Int.self) ?? 0 > 0, "\(table): the other member's rows stay")
            }
        }
        let audit = try await owner.query(
            "SELECT actor, action, target, details::text AS details FROM audit_log WHERE campus_id = \(north.id)")
        var erasures = 0
        for row in audit {
            let text = try [
                row.decode("actor", as: String.self), row.decode("target", as: String.self), row.decode("details", as: String.self),
            ].joined(separator: " ")
            #expect(!text.contains("ana@example.edu"), "the audit log still names her: \(text)")
            if try row.decode("action", as: String.self) == "user.erase" {
                erasures += 1
                #expect(try row.decode("target", as: String.self) == ana.id.rawValue.lowercasedText)
            }
        }
        #expect(erasures == 1 && audit.count > 1)
        // The day's counts name nobody and stay.
        #expect(
            try await owner.query("SELECT sum(submitted)::int8 AS n FROM daily_stats WHERE campus_id = \(north.id)").first?.decode(
                "n", as: Int.self) == 2)
        await owner.shutdown()
    }
}
