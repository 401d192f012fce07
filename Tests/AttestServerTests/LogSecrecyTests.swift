import AttestPlugins
import AttestPluginsTesting
import AttestTestSupport
import BuiltinPlugins
import Foundation
import HTTPTypes
import Hummingbird
import Identity
import Journal
import Surveys
import Tenancy
import Testing

@testable import AttestAPI
@testable import AttestServer
@testable import AttestWeb

/// Logs carry no secret: every route the server registers (the API's and the pages') is
/// asked with tokens in the header, the cookie, the path and the query, with bodies holding
/// answers and words; then the captured log is searched for every session token, shared
/// link, email address, answer and journal word. None may be there.
@Suite("Logs carry no secret")
struct LogSecrecyTests {
    static let draft = QuestionnaireRules.Draft(
        title: "Check",
        questions: [
            Question(id: "fever", kind: .boolean, prompt: "Fever?", symptom: true),
            Question(id: "where", kind: .text, required: false, prompt: "Where were you?"),
        ])

    @Test func noRouteLogsATokenAnEmailAnAnswerOrAWord() async throws {
        let capture = LogCapture()
        let server = try await TestServer.make()
        let north = try await server.campus("north")
        _ = try await QuestionnaireStore(client: server.pool).publish(campus: north, draft: Self.draft, actor: "test")
        let provider = try await TestIdentityProvider.start()
        defer { provider.stop() }
        try await provider.addES256Key(kid: "es-1")
        try await OIDCIssuerStore(client: server.pool).add(
            campus: north, OIDCIssuer(issuer: provider.issuer, audiences: [provider.audience], jwksURL: provider.jwksURL), actor: "test")

        var tokens: [String] = [], emails: [String] = []
        for (email, roles) in [("member.secret@example.edu", []), ("officer.secret@example.edu", [Role.healthOfficer, .admin, .screener])]
            as [(String, [Role])]
        {
            let (_, token) = try await server.user(email, at: north, roles: roles)
            tokens.append(token)
            emails.append(email)
        }
        let (member, memberToken, officerToken) = (
            try await UserStore(client: server.pool).find(campus: north.id, email: emails[0]), tokens[0], tokens[1]
        )
        let memberID = try #require(member).id
        let words = ["JOURNALWORD7731", "EPISODENOTE4412", "ANSWERPLACE9920"]
        let entry = try await server.services.journal.create(
            campus: north.id, user: memberID, JournalDraft(date: north.localDate(at: Date()), title: words[0], text: words[0]), at: Date())
        let episode = try await server.services.episodes.start(
            campus: north.id, user: memberID, EpisodeDraft(kind: "headache", severity: 3, notes: words[1], startedAt: Date()), context: nil,
            baseline: nil, now: Date())
        let (share, shareToken) = try await JournalShareStore(client: server.pool).create(
            campus: north.id, user: memberID, actor: "test", from: north.localDate(at: Date()), to: north.localDate(at: Date()),
            seconds: 3_600,
            now: Date())
        tokens.append(shareToken)
        let refused = "refused.person@elsewhere.example", accepted = "new.person@example.edu"
        emails += [refused, accepted]
        let idTokens = [
            try await provider.sign(provider.claims(email: refused), kid: "es-1"),
            try await provider.sign(provider.claims(email: accepted), kid: "es-1"),
            try await provider.sign(provider.claims(email: "late.person@example.edu", expiresIn: -3_600), kid: "es-1"),
        ]
        emails.append("late.person@example.edu")
        tokens += idTokens

        let router = AttestServer.buildRouter(
            configuration: server.configuration, services: server.services, frontEnds: TestServer.frontEnds)
        let routes = router.routes.map { (method: $0.method, path: "\($0.path)") }
        #expect(routes.count > 60)
        let secrets = tokens + emails + words
        let memberEmail = emails[0]
        try await server.run(logger: capture.logger(level: .trace)) { api in
            // Some real work first, so that routes answer with data and not only refusals.
            let submitted = try await api.send(
                .post, "/v1/campuses/north/attestations", template: "/v1/campuses/{campus}/attestations", token: memberToken,
                json: #"{"surveyVersion": 1, "answers": {"fever": true, "where": "\#(words[2])"}}"#)
            #expect(submitted.status == 201, "\(submitted.body)")
            for idToken in idTokens {
                let reply = try await api.send(
                    .post, "/v1/campuses/north/sessions", template: "/v1/campuses/{campus}/sessions", json: #"{"idToken": "\#(idToken)"}"#)
                #expect(reply.status == 201 || reply.status == 401)
            }
            for route in routes {
                for token in [memberToken, officerToken] {
                    let path = route.path.split(separator: "/").map { segment -> String in
                        switch segment {
                        case ":campus", "{campus}": "north"
                        case ":token", "{token}": shareToken
                        case ":file", "{file}": "app.css"
                        case ":region", "{region}": "US"
                        case ":id", "{id}":
                            route.path.contains("episodes")
                                ? episode.id.lowercasedText
                                : route.path.contains("shares") || route.path.contains("links")
                                    ? share.id.lowercasedText : entry.id.lowercasedText
                        default: String(segment)
                        }
                    }.joined(separator: "/")
                    let query = "?token=\(shareToken)&email=\(memberEmail)&date=2026-11-20"
                    var headers: HTTPFields = [
                        .authorization: "Bearer \(token)", .cookie: "attest-north=\(token); attest-csrf=\(token)",
                        .contentType: "application/json",
                    ]
                    headers[HTTPField.Name("X-Forwarded-For")!] = memberEmail
                    let body = ByteBuffer(
                        string:
                            #"{"email": "\#(memberEmail)", "title": "\#(words[0])", "token": "\#(shareToken)", "answers": {"where": "\#(words[2])"}}"#
                    )
                    let status: Int
                    do {
                        status = try await api.client.execute(
                            uri: "/" + path + query, method: route.method, headers: headers,
                            body: [.post, .put, .patch].contains(route.method) ? body : nil
                        ).status.code
                    } catch {
                        Issue.record("\(route.method) \(route.path): \(error)")
                        throw error
                    }
                    #expect(status < 500, "\(route.method) \(route.path): \(status)")
                }
            }
            // A page with the share token in its path, and a path no route has.
            _ = try await api.client.execute(uri: "/v1/campuses/north/sharedd/\(shareToken)", method: .get, headers: [:], body: nil)
        }
        let lines = capture.lines
        #expect(lines.filter { $0.hasPrefix("request ") }.count >= routes.count * 2)
        for secret in secrets {
            let found = lines.filter { $0.contains(secret) }
            #expect(found.isEmpty, "the log holds \(secret.prefix(12))…: \(found.prefix(3))")
        }
        // The route templates are there instead.
        #expect(lines.contains { $0.contains("route=/v1/campuses/{campus}/shared/{token}") })
        #expect(lines.contains { $0.contains("route=unmatched") })
    }

    /// A URL shown in a log or an error has no user information, query or fragment.
    @Test func urlsAreShownWithoutTheirSecrets() async throws {
        let url = try #require(URL(string: "https://user:pa55@feed.example:8443/v1/sites.json?apikey=KEY123&x=1#frag"))
        #expect(url.forLogs == "https://feed.example:8443/v1/sites.json")
        // A feed that fails logs where it is, not its key.
        struct Failing: PluginHTTPClient {
            func send(_ request: PluginHTTPRequest) async throws -> PluginHTTPResponse { throw PluginHTTPError.timedOut }
        }
        let capture = LogCapture()
        let feed = try JSONFeedProvider(settings: .object(["url": .string(url.absoluteString)]))
        _ = try? await feed.locations(context: PluginContext(http: Failing(), logger: capture.logger()))
        #expect(capture.lines.contains { $0.contains("feed.example:8443/v1/sites.json") })
        #expect(!capture.lines.contains { $0.contains("KEY123") || $0.contains("pa55") }, "\(capture.lines)")
    }

    /// What a refused sign-in logs names the check, never the address.
    @Test func identityErrorsLogNoEmail() {
        let email = "someone.private@example.edu"
        for error in [
            IdentityError.invalidEmail(email), .emailDomainNotAllowed(email: email, allowed: ["example.org"]), .userExists(email),
            .userNotFound(email),
            .importFailed(line: 3, reason: "\(email) appears again"),
        ] {
            #expect(!error.logReason.contains(email) && error.description.contains(email))
        }
    }
}
