import AttestTestSupport
import Foundation
import HTTPTypes
import Surveys
import Testing

@testable import AttestAPI
@testable import AttestServer
@testable import AttestWeb

@Suite("Survey")
struct SurveyTests {
    static let template = "/v1/campuses/{campus}/survey"

    @Test func membersGetTheActiveVersionInTheirLanguage() async throws {
        let server = try await TestServer.make()
        let campus = try await server.campus("survey-u")
        let (_, token) = try await server.user("m@example.edu", at: campus)
        try await server.run { api in
            let none = try await api.send(.get, "/v1/campuses/survey-u/survey", template: Self.template, token: token)
            #expect(none.status == 404)
            #expect(none.problem.detail.contains("attest survey publish"))

            let store = QuestionnaireStore(client: server.pool)
            _ = try await store.publish(campus: campus, draft: DemoQuestionnaire.draft, actor: "test")
            let second = try await store.publish(campus: campus, draft: DemoQuestionnaire.draft, actor: "test")
            #expect(second.version == 2)

            let english = try await api.send(.get, "/v1/campuses/survey-u/survey", template: Self.template, token: token)
            #expect(english.status == 200)
            #expect(english.json["version"] as? Int == 2)
            #expect(english.headers[.contentLanguage] == "en")
            let questions = english.json["questions"] as? [[String: Any]] ?? []
            #expect(questions.count == 14)
            #expect(questions.first?["prompt"] as? String == "Fever or chills?")

            let response = try await api.client.execute(
                uri: "/v1/campuses/survey-u/survey", method: .get,
                headers: [.authorization: "Bearer \(token)", .acceptLanguage: "es-MX,es;q=0.9,en;q=0.5"])
            #expect(response.headers[.contentLanguage] == "es")
            let spanish = String(buffer: response.body)
            #expect(spanish.contains("¿Fiebre o escalofríos?"))
            #expect(spanish.contains(#""title":"Control de salud diario""#))

            #expect(try await api.send(.get, "/v1/campuses/survey-u/survey", template: Self.template).status == 401)
        }
    }

    @Test func publishAndShowFromTheCLI() async throws {
        let database = try await TestDatabase.create()
        let environment: [String: String?] = ["DATABASE_URL": TestDatabase.url(database: database)]
        func attest(_ arguments: String...) async throws -> (status: Int32, stdout: String, stderr: String) {
            try await ChildProcess.run([ChildProcess.attestBinary] + arguments, environment: environment)
        }
        #expect(try await attest("campus", "create", "pub", "--name", "Pub", "--timezone", "UTC").status == 0)
        let directory = FileManager.default.temporaryDirectory.appending(path: "attest-survey-\(UUID().uuidString.prefix(6))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }

        let bad = directory.appending(path: "bad.json")
        try
            #"{"title": "x", "questions": [{"id": "a", "kind": "boolean", "prompt": "?"}, {"id": "a", "kind": "number", "prompt": "?", "min": 5, "max": 1}]}"#
            .write(to: bad, atomically: true, encoding: .utf8)
        let refused = try await attest("survey", "publish", "pub", bad.path)
        #expect(refused.status == 1)
        #expect(refused.stderr.split(separator: "\n").count == 1)
        #expect(
            refused.stderr.contains("questions[1].id: \"a\" is used twice")
                && refused.stderr.contains("questions[1].min: is greater than max"))
        #expect(try await attest("survey", "show", "pub").stderr.contains("has no survey yet"))

        let good = directory.appending(path: "good.json")
        try #"{"title": "Check", "questions": [{"id": "fever", "kind": "boolean", "prompt": "Fever?", "symptom": true}]}"#
            .write(to: good, atomically: true, encoding: .utf8)
        let published = try await attest("survey", "publish", "pub", good.path)
        #expect(published.status == 0 && published.stdout.contains("version 1"))
        #expect(try await attest("survey", "publish", "pub", good.path).stdout.contains("version 2"))
        let shown = try await attest("survey", "show", "pub", "--version", "1", "--json")
        #expect(shown.stdout.contains(#""version":1"#))
        #expect(try await attest("survey", "show", "pub", "--version", "9").stderr.contains("no survey version 9"))
        let audit = try await attest("audit", "pub")
        #expect(audit.stdout.components(separatedBy: "survey.publish").count == 3)
    }
}
