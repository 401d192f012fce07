import AttestPlugins
import AttestPluginsTesting
import AttestTestSupport
import Foundation
import Identity
import Surveys
import Tenancy
import Testing

@testable import AttestAPI
@testable import AttestServer
@testable import AttestWeb

@Suite("Privacy")
struct PrivacyTests {
    /// DESIGN §9 and the README: answers and tokens are never logged. Everything the server
    /// and its pool log at every level, through a day's traffic and its errors, is searched
    /// for the tokens and the answers given.
    @Test func nothingLoggedHoldsATokenOrAnAnswer() async throws {
        let capture = LogCapture()
        let logger = capture.logger(level: .trace)
        let database = try await TestDatabase.create()
        let pool = TestDatabase.client(database: database, maxConnections: 8, logger: logger)
        let clock = try TestClock("2026-11-20T14:00:00Z")
        let server = TestServer(
            database: database, pool: pool,
            services: AttestServices(
                database: pool, configuration: ServerConfiguration(), registry: .builtin, kek: TestServer.kek, logger: logger,
                clock: clock.read))
        let campus = try await server.campus("north")
        let draft = QuestionnaireRules.Draft(
            title: "Check",
            questions: [
                Question(id: "fever", kind: .boolean, prompt: "Fever?", symptom: true),
                Question(id: "temperature", kind: .number, required: false, prompt: "Temperature", min: 34, max: 43, unit: "°C"),
                Question(id: "note", kind: .text, required: false, prompt: "Anything else?", maxLength: 40),
            ])
        _ = try await QuestionnaireStore(client: pool).publish(campus: campus, draft: draft, actor: "test")
        let (_, member) = try await server.user("m@example.edu", at: campus)
        let (_, officer) = try await server.user("o@example.edu", at: campus, roles: [.healthOfficer, .screener])
        let unknown = String(repeating: "Q", count: 43)
        let path = "/v1/campuses/{campus}/attestations"

        try await server.run(logger: logger) { api in
            let submitted = try await api.send(
                .post, "/v1/campuses/north/attestations", template: path, token: member,
                json: #"{"surveyVersion": 1, "answers": {"fever": true, "temperature": 38.71, "note": "Sneezing-Zebra-41"}}"#)
            #expect(submitted.status == 201)
            let again = try await api.send(
                .post, "/v1/campuses/north/attestations", template: path, token: member,
                json: #"{"surveyVersion": 1, "answers": {"fever": false, "note": "Second-Giraffe-42"}}"#)
            #expect(again.status == 409)
            let invalid = try await api.send(
                .post, "/v1/campuses/north/attestations", template: path, token: officer,
                json: #"{"surveyVersion": 1, "answers": {"fever": "Purple-Walrus-43", "temperature": 99.13, "note": 7}}"#)
            #expect(invalid.status == 422)
            let stranger = try await api.send(.get, "/v1/campuses/north/me", template: "/v1/campuses/{campus}/me", token: unknown)
            #expect(stranger.status == 401)
            #expect(
                try await api.send(
                    .get, "/v1/campuses/north/me/attestations", template: "/v1/campuses/{campus}/me/attestations", token: member
                ).status == 200)
            let badge = try await api.send(.get, "/v1/campuses/north/me/badge", template: BadgeTests.badgePath, token: member)
            let token = try #require(badge.json["token"] as? String)
            #expect(try await BadgeTests.verify(api, token, as: officer).json["valid"] as? Bool == true)
            #expect(
                try await api.send(
                    .get, "/v1/campuses/north/admin/follow-ups?date=2026-11-20", template: "/v1/campuses/{campus}/admin/follow-ups",
                    token: officer
                ).status == 200)
            #expect(
                try await api.send(
                    .delete, "/v1/campuses/north/sessions/current", template: "/v1/campuses/{campus}/sessions/current", token: member
                ).status == 204)

            let lines = capture.lines
            // The search is only worth something if the traffic was logged.
            #expect(lines.filter { $0.hasPrefix("request ") }.count >= 9, "\(lines)")
            // Two decimals: a request's time is logged with one ("ms=438.7" once matched "38.7").
            for secret in [member, officer, unknown, token, "Sneezing-Zebra-41", "Second-Giraffe-42", "Purple-Walrus-43", "38.71", "99.13"]
            {
                let leaks = lines.filter { $0.contains(secret) }
                #expect(leaks.isEmpty, "logged: \(leaks)")
            }
        }
    }
}
