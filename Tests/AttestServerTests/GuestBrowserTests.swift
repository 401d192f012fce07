import AttestPlugins
import AttestPostgres
import AttestTestSupport
import Foundation
import Hummingbird
import Identity
import Notifications
import Surveys
import Tenancy
import Testing

@testable import AttestAPI
@testable import AttestServer
@testable import AttestWeb

/// Visitors in a real browser (issue 65): Debian's Chromium driven by Python's selenium
/// (`Tests/Browser/guest_test.py`) against a live server whose campus sends visitors' codes to
/// a loopback SMTP server (aiosmtpd), then the purge after the guest retention. Screenshots go
/// to `.build/screenshots/`.
@Suite("Guests in Chromium")
struct GuestBrowserTests {
    @Test func visitorsCheckInAndTheKioskClearsItselfInChromium() async throws {
        for tool in ["/usr/bin/chromium", "/usr/bin/chromedriver"] where !FileManager.default.isExecutableFile(atPath: tool) {
            Issue.record("\(tool) is missing: scripts/install-deps installs Debian's chromium and chromium-driver")
            return
        }
        let (server, base, serving) = try await BrowserTests.liveServer(outbox: true)
        defer { serving.cancel() }

        try await SMTPTestServer.running("plain") { smtp in
            let north = try await server.campus("north")
            _ = try await UserStore(client: server.pool).add(
                campus: north, email: "alice@example.edu", displayName: "Alice Member", actor: "test")
            let (_, screenerToken) = try await server.user("sam@example.edu", at: north, roles: [.screener])
            let questionnaires = QuestionnaireStore(client: server.pool)
            _ = try await questionnaires.publish(campus: north, draft: DemoQuestionnaire.draft, actor: "test")
            _ = try await questionnaires.publish(
                campus: north,
                draft: try QuestionnaireRules.parse(
                    Data(
                        #"""
                        {"title": "Visitor check", "titleTranslations": {"es": "Control de visitas"},
                         "questions": [{"id": "fever", "kind": "boolean", "prompt": "Do you have a fever?", "symptom": true,
                                        "translations": {"es": "¿Tiene fiebre?"}}]}
                        """#.utf8)), actor: "test", audience: .guest)
            try await GuestTests.sendCodes(of: north, to: smtp, server: server)
            _ = try await CampusStore(client: server.pool).set(slug: "north", key: "guests", value: "on", actor: "test")

            let screenshots = BrowserTests.root.appending(path: ".build/screenshots").path
            try FileManager.default.createDirectory(atPath: screenshots, withIntermediateDirectories: true)
            let config: [String: Any] = [
                "base": base, "campus": "north", "screenerToken": screenerToken, "smtpDir": smtp.directory.path, "screenshots": screenshots,
            ]
            let configPath = FileManager.default.temporaryDirectory.appending(path: "attest-guests-\(UUID().uuidString.prefix(8)).json")
                .path
            try JSONSerialization.data(withJSONObject: config).write(to: URL(fileURLWithPath: configPath))
            defer { try? FileManager.default.removeItem(atPath: configPath) }
            let script = BrowserTests.root.appending(path: "Tests/Browser/guest_test.py").path
            let result = try await ChildProcess.run(["/usr/bin/env", "python3", script, configPath], timeout: .seconds(600))
            print(result.stderr)
            #expect(result.status == 0, "the browser checks failed:\n\(result.stderr.suffix(6_000))")

            // The visitors' records are gone after the guest retention (14 days), and not before.
            let count: @Sendable () async throws -> Int = {
                try await server.pool.query(
                    "SELECT count(*) AS n FROM guest_visits WHERE campus_id = \(north.id)", campus: north.id.rawValue)[
                        0
                    ]
                    .decode("n")
            }
            let visits = try await count()
            #expect(visits >= 4, "the visits the browser made: \(visits)")
            let campus = try await CampusStore(client: server.pool).require(slug: "north")
            #expect(
                try await GuestUpkeep(client: server.pool).run(campus: campus, now: Date().addingTimeInterval(14 * 86_400))["guests_purged"]
                    == 0)
            #expect(
                try await GuestUpkeep(client: server.pool).run(campus: campus, now: Date().addingTimeInterval(15 * 86_400 + 3_600))[
                    "guests_purged"] == visits)
            #expect(try await count() == 0)
            await server.pool.shutdown()
        }
    }
}
