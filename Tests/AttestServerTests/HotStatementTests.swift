import AttestPlugins
import AttestPostgres
import AttestSchema
import AttestTestSupport
import Foundation
import Surveys
import Testing

@testable import AttestAPI
@testable import AttestServer
@testable import AttestWeb

/// Under Citus every statement of a request must name one campus, so the coordinator routes
/// it to the one node holding that campus's shards. The hot paths run against a live server
/// (sign-in, submissions, badges, the dashboard, follow-ups, the member's profile and history), and
/// `pg_stat_statements` (loaded by scripts/test's cluster) lists what PostgreSQL ran: every
/// statement that touches a tenant table must compare `campus_id` with a parameter, or be a
/// one-row insert whose `campus_id` is one. (The check reads the text: a statement with one
/// such comparison passes even if another part of it lacked one; the statements are reviewed
/// with that in mind.)
@Suite("Hot statements name one campus")
struct HotStatementTests {
    /// Whether `owner`'s database counts statements (`pg_stat_statements`, which
    /// scripts/test's cluster loads), creating the extension there; else records why and
    /// shuts `owner` down.
    static func countsStatements(_ owner: PostgresClient) async throws -> Bool {
        let preload: String = try await owner.query("SHOW shared_preload_libraries")[0].decode("shared_preload_libraries")
        guard preload.contains("pg_stat_statements") else {
            Issue.record("the test cluster does not load pg_stat_statements: run the suite with scripts/test")
            await owner.shutdown()
            return false
        }
        try await owner.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        return true
    }

    @Test func everyStatementOfTheHotPathsFiltersOnOneCampus() async throws {
        let (server, campus, provider) = try await SignInTests.setUp()
        defer { provider.stop() }
        let owner = TestDatabase.client(database: server.database, role: nil)
        guard try await Self.countsStatements(owner) else { return }
        _ = try await QuestionnaireStore(client: server.pool).publish(campus: campus, draft: AttestationTests.draft, actor: "test")
        var tokens: [String] = []
        for index in 0..<12 { tokens.append(try await server.user("m\(index)@example.edu", at: campus).token) }
        let members = tokens
        let (_, admin) = try await server.user("admin@example.edu", at: campus, roles: [.admin])
        let (_, officer) = try await server.user("officer@example.edu", at: campus, roles: [.healthOfficer])
        let database: Int = try await owner.query("SELECT oid::int AS oid FROM pg_database WHERE datname = current_database()")[0].decode(
            "oid")
        try await owner.query("SELECT pg_stat_statements_reset(0, \(database)::oid, 0)")

        try await server.run { api in
            let statuses = try await api.withConnections(members.count) { clients in
                try await withThrowingTaskGroup(of: Int.self) { group in
                    for (index, token) in members.enumerated() {
                        group.addTask {
                            try await clients[index].send(
                                .post, "/v1/campuses/north/attestations", template: AttestationTests.path, token: token,
                                json: AttestationTests.body(index % 3 == 0 ? #"{"fever": true, "cough": false}"# : AttestationTests.healthy)
                            ).status
                        }
                    }
                    return try await group.reduce(into: [Int]()) { $0.append($1) }
                }
            }
            #expect(statuses.allSatisfy { $0 == 201 }, "\(statuses)")
            // Sign-in: a new member onboarded, then the same member again.
            for name in ["Ana", "Ana María"] {
                let idToken = try await provider.sign(provider.claims(email: "ana@example.edu", subject: "ana-1", name: name), kid: "es-1")
                #expect(try await SignInTests.signIn(api, idToken).status == 201)
            }
            for token in members.prefix(4) {
                #expect(
                    try await api.send(.get, "/v1/campuses/north/me/badge", template: "/v1/campuses/{campus}/me/badge", token: token).status
                        == 200)
                #expect(try await api.send(.get, "/v1/campuses/north/me", template: "/v1/campuses/{campus}/me", token: token).status == 200)
                #expect(
                    try await api.send(
                        .get, "/v1/campuses/north/me/attestations", template: "/v1/campuses/{campus}/me/attestations", token: token
                    ).status == 200)
            }
            let today = LocalDate(Date(), in: campus.zone)
            #expect(
                try await api.send(
                    .get, "/v1/campuses/north/admin/dashboard?from=\(today.adding(days: -29))&to=\(today)",
                    template: "/v1/campuses/{campus}/admin/dashboard", token: admin
                ).status == 200)
            #expect(
                try await api.send(
                    .get, "/v1/campuses/north/admin/follow-ups?date=\(today)", template: "/v1/campuses/{campus}/admin/follow-ups",
                    token: officer
                ).status == 200)
        }

        let tenant = CitusLayout.distributedTables.joined(separator: "|")
        let touching = try NSRegularExpression(pattern: "\\b(FROM|JOIN|INTO|UPDATE)\\s+(\(tenant))\\b", options: [.caseInsensitive])
        let oneCampus = try NSRegularExpression(pattern: "campus_id\\s*=\\s*\\$[0-9]+", options: [])
        // A single-row insert whose campus_id is a parameter (then at most ON CONFLICT and
        // RETURNING, with no subquery): Citus routes it by that value.
        let oneRow = try NSRegularExpression(
            pattern: "^\\s*INSERT INTO \\w+ \\(campus_id,[^)]*\\)\\s*VALUES\\s*\\(\\$[0-9]+,[^()]*\\)", options: [.caseInsensitive])
        func isOneRowInsert(_ statement: String, _ range: NSRange) -> Bool {
            guard let head = oneRow.firstMatch(in: statement, range: range), let end = Range(head.range, in: statement)?.upperBound else {
                return false
            }
            let rest = statement[end...].lowercased()
            return !rest.contains("select") && !rest.contains("from")
        }
        let statements: [String] = try await owner.query(
            "SELECT query FROM pg_stat_statements WHERE dbid = \(database)::oid AND toplevel"
        ).map { try $0.decode("query") }
        await owner.shutdown()
        var checked = 0
        for statement in statements {
            let range = NSRange(statement.startIndex..., in: statement)
            guard touching.firstMatch(in: statement, range: range) != nil else { continue }
            checked += 1
            let routed = oneCampus.firstMatch(in: statement, range: range) != nil || isOneRowInsert(statement, range)
            #expect(routed, "a hot statement without campus_id = $n:\n\(statement)")
        }
        print("Hot statements checked for one campus: \(checked) of \(statements.count) run")
        #expect(checked >= 8, "only \(checked) statements touched tenant tables: \(statements)")
    }
}
