import AttestPostgres
import AttestTestSupport
import Foundation
import HTTPTypes
import Identity
import Journal
import Testing

/// A session an operator minted (`attest token issue`) does what the member's role allows,
/// but never opens the member's private data: the journal, episodes, exports, links and
/// keeping, the places followed, the health profile and the health records, as routes or as pages.
@Suite("Operator-issued sessions")
struct OperatorSessionTests {
    static let privateRoutes: [(HTTPRequest.Method, String, String)] = [
        (.get, "me/journal", "/v1/campuses/{campus}/me/journal"), (.post, "me/journal", "/v1/campuses/{campus}/me/journal"),
        (.get, "me/episodes", "/v1/campuses/{campus}/me/episodes"),
        (.get, "me/episodes/summary", "/v1/campuses/{campus}/me/episodes/summary"),
        (.get, "me/export", "/v1/campuses/{campus}/me/export"), (.get, "me/shares", "/v1/campuses/{campus}/me/shares"),
        (.post, "me/shares", "/v1/campuses/{campus}/me/shares"), (.get, "me/privacy", "/v1/campuses/{campus}/me/privacy"),
        (.put, "me/privacy", "/v1/campuses/{campus}/me/privacy"), (.get, "me/places", "/v1/campuses/{campus}/me/places"),
        (.put, "me/places", "/v1/campuses/{campus}/me/places"), (.get, "me/profile", "/v1/campuses/{campus}/me/profile"),
        (.put, "me/profile", "/v1/campuses/{campus}/me/profile"), (.get, "me/records", "/v1/campuses/{campus}/me/records"),
        (.get, "me/exemptions", "/v1/campuses/{campus}/me/exemptions"),
        (.post, "me/exemptions", "/v1/campuses/{campus}/me/exemptions"),
    ]

    @Test func anOperatorsSessionOpensNoPrivateRouteOrPage() async throws {
        let server = try await TestServer.make()
        let north = try await server.campus("north")
        let (member, own) = try await server.user("m@example.edu", at: north)
        let minted = try await SessionStore(client: server.pool).issue(campus: north, user: member.id, byOperator: true).token
        try await server.run { api in
            for (method, path, template) in Self.privateRoutes {
                let json: String? =
                    method == .get
                    ? nil : #"{"title": "x", "journalKeepDays": null, "expiresIn": 3600, "from": "2026-11-01", "to": "2026-11-02"}"#
                let refused = try await api.send(method, "/v1/campuses/north/\(path)", template: template, token: minted, json: json)
                #expect(
                    refused.status == 403 && refused.problem.type.hasSuffix("/operator-session"), "\(method) \(path): \(refused.status)")
                #expect(refused.problem.detail.contains("attest token issue"))
                let allowed = try await api.send(.get, "/v1/campuses/north/\(path)", template: template, token: own)
                #expect(allowed.status == 200, "\(path) with the member's own session: \(allowed.status)")
            }
            // What the role allows still works: the member's badge and profile.
            #expect(try await api.send(.get, "/v1/campuses/north/me", template: "/v1/campuses/{campus}/me", token: minted).status == 200)
            #expect(
                try await api.send(.get, "/v1/campuses/north/me/badge", template: "/v1/campuses/{campus}/me/badge", token: minted).status
                    == 200)
            // The pages too: a cookie holding the minted session.
            for page in ["journal", "episodes", "sharing", "records"] {
                let response = try await api.client.execute(
                    uri: "/c/north/\(page)", method: .get, headers: [.cookie: "attest-north=\(minted)"], body: nil)
                #expect(response.status == .forbidden, "/c/north/\(page)")
                #expect(String(buffer: response.body).contains("made by an operator"))
                let mine = try await api.client.execute(
                    uri: "/c/north/\(page)", method: .get, headers: [.cookie: "attest-north=\(own)"], body: nil)
                #expect(mine.status == .ok, "/c/north/\(page) as the member")
            }
        }
    }

    /// `attest token issue` marks what it mints.
    @Test func theCLIsTokensAreMarked() async throws {
        let database = try await TestDatabase.create()
        let url = TestDatabase.url(database: database)
        #expect(
            try await ChildProcess.run(
                [ChildProcess.attestBinary, "campus", "create", "north", "--name", "North", "--timezone", "UTC"],
                environment: ["DATABASE_URL": url]
            ).status == 0)
        let issued = try await ChildProcess.run(
            [ChildProcess.attestBinary, "token", "issue", "north", "t@example.edu", "--create"], environment: ["DATABASE_URL": url])
        #expect(issued.status == 0, "\(issued.stderr)")
        let token = issued.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let owner = TestDatabase.client(database: database, role: nil, maxConnections: 1)
        let rows = try await owner.query("SELECT by_operator FROM sessions WHERE token_hash = sha256(\(Data(token.utf8)))")
        #expect(try rows.first?.decode("by_operator", as: Bool.self) == true)
        await owner.shutdown()
    }
}
