import AttestPlugins
import AttestPostgres
import AttestTestSupport
import Foundation
import HTTPTypes
import Identity
import Records
import Tenancy
import Testing

@testable import AttestWeb

/// The health-record pages over HTTP: the member's `/c/{campus}/records` and the health
/// officers' `/c/{campus}/health`, each action a form posted back with its CSRF token.
@Suite("Health-record pages")
struct RecordsPageTests {
    @Test func aMemberAsksForAnExemptionAndAHealthOfficerMatchesApprovesAndReleasesOnTheirPage() async throws {
        // A positive result for Ana collected yesterday (her isolation runs on past today,
        // whatever day the test runs), and one nobody matches.
        let yesterday = LocalDate(Date().addingTimeInterval(-86_400), in: .gmt)
        try await Self.withResults([
            RecordsTests.observation(
                specimen: "S-1", email: "ana@example.edu", detected: true, collected: "\(yesterday)",
                issued: "\(yesterday)T23:00:00Z"),
            RecordsTests.observation(specimen: "S-2", email: "ana.typo@example.edu", detected: false),
        ]) { server, campus, api in
            let ana = WebClient(api.client)
            try await ana.demoSignIn(campus: "north", email: "ana@example.edu")
            let record = try await ana.get("/c/north/records")
            #expect(record.status == 200, "\(record.body)")
            #expect(record.body.contains("Isolation until") && record.body.contains("Detected (positive)"))
            #expect(record.body.contains("SARS-CoV-2 RNA Resp Ql NAA+probe"))
            let csrf = try #require(record.csrf)
            // A note without words is refused, and nothing is asked.
            let empty = try await ana.post("/c/north/records/exemptions", form: [("csrf", csrf), ("kind", "medical"), ("note", "  ")])
            #expect(empty.status == 422 && empty.body.contains("Write a note of 1 to 2,000 characters."))
            let asked = try await ana.post(
                "/c/north/records/exemptions", form: [("csrf", csrf), ("kind", "medical"), ("note", "a letter from my doctor")])
            #expect(asked.status == 303 && asked.location == "/c/north/records?asked=1")
            let waiting = try await ana.get("/c/north/records?asked=1")
            #expect(waiting.body.contains("Medical exemption: waiting for the health office."))
            #expect(!waiting.body.contains("name=\"note\""), "one request waits at a time: no form until it is decided")
            let forged = try await ana.post("/c/north/records/exemptions", form: [("csrf", "x"), ("kind", "other"), ("note", "n")])
            #expect(forged.status == 403)

            // Ana is no health officer.
            #expect(try await ana.get("/c/north/health").status == 403)

            let hana = WebClient(api.client)
            try await hana.demoSignIn(campus: "north", email: "hana@example.edu")
            let office = try await hana.get("/c/north/health")
            #expect(office.status == 200 && office.body.contains("ana.typo@example.edu") && office.body.contains("a letter from my doctor"))
            // The approval's date field takes today to two years ahead, as the server does.
            let today = campus.localDate(at: Date())
            // Last days from today, so that the test holds whatever day it runs.
            let (longer, shorter) = (today.adding(days: 200), today.adding(days: 60))
            #expect(office.body.contains("name=\"expires\" min=\"\(today)\" max=\"\(today.adding(days: 731))\" required"))
            #expect(office.body.contains("ana@example.edu") && office.body.contains("A positive result"), "Ana's isolation listed")
            let token = try #require(office.csrf)
            let ids = RecordsPageTests.ids(in: office.body)
            let result = try #require(ids.first { office.body.contains("health/results/\($0)/match") })
            let exemption = try #require(ids.first { office.body.contains("health/exemptions/\($0)\"") })
            let isolation = try #require(ids.first { office.body.contains("health/isolations/\($0)/release") })

            let nobody = try await hana.post(
                "/c/north/health/results/\(result)/match", form: [("csrf", token), ("email", "zed@example.edu")])
            #expect(nobody.status == 422 && nobody.body.contains("No member of this campus has the email zed@example.edu: check it."))
            let matched = try await hana.post(
                "/c/north/health/results/\(result)/match", form: [("csrf", token), ("email", "ana@example.edu")])
            #expect(matched.status == 303 && matched.location == "/c/north/health?done=1")
            // Text the database cannot hold (a NUL, as a form may carry it), in a form whose
            // reader checks no such thing: refused, not a server error, and nothing decided.
            for (path, form) in [
                ("/c/north/health/exemptions/\(exemption)", [("csrf", token), ("decision", "denied"), ("reason", "no\u{0}pe")]),
                ("/c/north/health/isolations", [("csrf", token), ("email", "sam\u{0}@example.edu"), ("kind", "quarantine")]),
            ] {
                let refused = try await hana.post(path, form: form)
                #expect(refused.status == 422, "\(path): \(refused.status) \(refused.body.prefix(300))")
            }
            // A last day in the past (a browser's date field takes one): said in the page's language.
            let past = try await hana.post(
                "/c/north/health/exemptions/\(exemption)", form: [("csrf", token), ("decision", "approved"), ("expires", "2020-01-31")],
                headers: [.acceptLanguage: "es"])
            #expect(
                past.status == 422 && past.body.contains("Indique un último día de la exención entre hoy y dentro de dos años."),
                "\(past.body.prefix(600))")
            let approved = try await hana.post(
                "/c/north/health/exemptions/\(exemption)", form: [("csrf", token), ("decision", "approved"), ("expires", "\(longer)")])
            #expect(approved.status == 303)
            let released = try await hana.post("/c/north/health/isolations/\(isolation)/release", form: [("csrf", token)])
            #expect(released.status == 303)
            let started = try await hana.post(
                "/c/north/health/isolations", form: [("csrf", token), ("email", "sam@example.edu"), ("kind", "quarantine"), ("until", "")])
            #expect(started.status == 303)
            let after = try await hana.get("/c/north/health")
            #expect(after.body.contains("Every result found its member.") && after.body.contains("No request is waiting."))
            #expect(after.body.contains("sam@example.edu") && !after.body.contains("A positive result"))

            let later = try await ana.get("/c/north/records")
            #expect(!later.body.contains("Isolation until"), "released")
            #expect(later.body.contains("Medical exemption: approved until"))
            // In Spanish the kind sits inside the sentence, in lower case.
            let spanish = try await ana.get("/c/north/records", headers: [.acceptLanguage: "es"])
            #expect(spanish.body.contains("Exención médica: aprobada hasta el"), "\(spanish.body)")
            #expect(later.body.contains("Not detected (negative)"), "the matched result is hers now")
            let actions = try await AuditLog(client: server.pool).entries(campus: campus.id).map(\.action)
            for action in [
                "exemption.request", "results.unmatched.read", "exemptions.read", "isolations.read", "result.match",
                "exemption.approve", "isolation.release", "quarantine.start",
            ] {
                #expect(actions.contains(action), "\(action) audited")
            }

            // The exemption in force: listed with its note left sealed (the list shows none),
            // its last day moved, then ended from the same page.
            let inForce = try await HealthRecords(client: server.pool, kek: TestServer.kek).exemptions(
                campus: campus, status: .approved, inForceOn: campus.localDate(at: Date()), actor: "test")
            #expect(inForce.map(\.id.lowercasedText) == [exemption] && inForce.map(\.note) == [""])
            #expect(
                after.body.contains("Exemptions in force")
                    && after.body.contains("id=\"until-\(exemption)\" name=\"expires\" value=\"\(longer)\""))
            let moved = try await hana.post(
                "/c/north/health/exemptions/\(exemption)", form: [("csrf", token), ("decision", "approved"), ("expires", "\(shorter)")])
            #expect(moved.status == 303)
            let movedForAna = try await ana.get("/c/north/records").body
            #expect(
                movedForAna.contains("Medical exemption: approved until \(WebFormat.date(shorter, campus: campus, language: "en"))."),
                "\(movedForAna)")
            let ended = try await hana.post(
                "/c/north/health/exemptions/\(exemption)", form: [("csrf", token), ("decision", "denied"), ("reason", "approved in error")])
            #expect(ended.status == 303)
            let none = try await hana.get("/c/north/health")
            #expect(none.body.contains("No exemption is in force.") && !none.body.contains("until-\(exemption)"))
            let endedForAna = try await ana.get("/c/north/records")
            #expect(endedForAna.body.contains("Medical exemption: ended on ") && endedForAna.body.contains("approved in error"))
            // Sent again from a page left open: an ended exemption stays ended, said in the page's words.
            let again = try await hana.post(
                "/c/north/health/exemptions/\(exemption)", form: [("csrf", token), ("decision", "approved"), ("expires", "\(longer)")])
            #expect(again.status == 409 && again.body.contains("That was dealt with already"), "\(again.body.prefix(400))")
        }
    }

    /// What the pages refuse, each by its field, and what a health officer sets aside: a second
    /// request while one waits (asked from a page left open), a card form sent empty, a
    /// restriction of no kind or with no date, a result dismissed (and one nobody has).
    @Test func thePagesSayWhatTheyRefuseAndAResultIsDismissed() async throws {
        try await Self.withResults([RecordsTests.observation(specimen: "S-9", email: "nobody@example.edu", detected: false)]) {
            server, campus, api in
            let ana = WebClient(api.client)
            try await ana.demoSignIn(campus: "north", email: "ana@example.edu")
            let record = try await ana.get("/c/north/records")
            let csrf = try #require(record.csrf)
            let ask: [(String, String)] = [("csrf", csrf), ("kind", "religious"), ("note", "my community's practice")]
            #expect(try await ana.post("/c/north/records/exemptions", form: ask).status == 303)
            let again = try await ana.post("/c/north/records/exemptions", form: ask)
            #expect(again.status == 409 && again.body.contains("You have a request waiting already"), "\(again.status)")
            let noCard = try await ana.post("/c/north/records/vaccinations", form: [("csrf", csrf), ("shc", " \r\n ")])
            #expect(noCard.status == 422 && noCard.body.contains("text or choose a file."), "\(noCard.status)")
            #expect(noCard.body.contains("href=\"#shc-text\""), "the summary leads to the field")
            let exemptions = try await server.pool.query(
                "SELECT count(*)::int AS n FROM exemptions WHERE campus_id = \(campus.id)", campus: campus.id.rawValue)
            #expect(try exemptions[0].decode("n", as: Int.self) == 1, "one request, not two")

            let hana = WebClient(api.client)
            try await hana.demoSignIn(campus: "north", email: "hana@example.edu")
            let office = try await hana.get("/c/north/health")
            let token = try #require(office.csrf)
            let result = try #require(RecordsPageTests.ids(in: office.body).first { office.body.contains("health/results/\($0)/dismiss") })
            let noKind = try await hana.post(
                "/c/north/health/isolations", form: [("csrf", token), ("email", "sam@example.edu"), ("kind", "holiday")])
            #expect(noKind.status == 422 && noKind.body.contains("Choose isolation or quarantine."), "\(noKind.status)")
            let noDate = try await hana.post(
                "/c/north/health/isolations",
                form: [("csrf", token), ("email", "sam@example.edu"), ("kind", "quarantine"), ("until", "next week")])
            #expect(noDate.status == 422 && noDate.body.contains("Give the last day as a date."), "\(noDate.status)")
            // The form comes back as typed, the problem by its field.
            #expect(noDate.body.contains(#"id="isolation-email" name="email" value="sam@example.edu" required>"#))
            #expect(noDate.body.contains(#"<option value="quarantine" selected>"#))
            #expect(
                noDate.body.contains(
                    #"name="until" value="next week" aria-describedby="isolation-until-hint isolation-until-error" aria-invalid="true" autofocus>"#
                ))
            // In Spanish, what Records refuses in the page's words, by the field it concerns.
            let spanish: HTTPFields = [.acceptLanguage: "es"]
            let nobody = try await hana.post(
                "/c/north/health/isolations", form: [("csrf", token), ("email", "zed@example.edu"), ("kind", "isolation")],
                headers: spanish)
            #expect(
                nobody.status == 422 && nobody.body.contains("Ningún miembro de este campus tiene el correo zed@example.edu: compruébelo."))
            #expect(nobody.body.contains(#"value="zed@example.edu" required aria-invalid="true" aria-describedby="isolation-email-error""#))
            let tooLong = try await hana.post(
                "/c/north/health/isolations",
                form: [("csrf", token), ("email", "sam@example.edu"), ("kind", "isolation"), ("until", "2099-01-01")],
                headers: spanish)
            #expect(tooLong.status == 422 && tooLong.body.contains("Indique un último día entre hoy y 60 días después."), "\(tooLong.body)")
            #expect(!tooLong.body.contains("startsOn") && !tooLong.body.contains("is more than"))
            let restrictions = try await server.pool.query(
                "SELECT count(*)::int AS n FROM isolations WHERE campus_id = \(campus.id)", campus: campus.id.rawValue)
            #expect(try restrictions[0].decode("n", as: Int.self) == 0, "nothing started")
            let dismissed = try await hana.post("/c/north/health/results/\(result)/dismiss", form: [("csrf", token)])
            #expect(dismissed.status == 303 && dismissed.location == "/c/north/health?done=1")
            let after = try await hana.get("/c/north/health?done=1")
            #expect(after.body.contains("Every result found its member.") && !after.body.contains("nobody@example.edu"))
            let unknown = try await hana.post("/c/north/health/results/\(UUID().uuidString.lowercased())/dismiss", form: [("csrf", token)])
            #expect(unknown.status == 404 && unknown.body.contains("That record is not here any more"), "\(unknown.status)")
            #expect(!unknown.body.contains("GET …"), "the API's words stay in the API")
            // Dismissed again from a page left open: said plainly, in the page's language.
            let twice = try await hana.post("/c/north/health/results/\(result)/dismiss", form: [("csrf", token)], headers: spanish)
            #expect(twice.status == 409 && twice.body.contains("Eso ya se atendió"), "\(twice.status)")
            let actions = try await AuditLog(client: server.pool).entries(campus: campus.id).map(\.action)
            #expect(actions.filter { $0 == "result.dismiss" }.count == 1)
        }
    }

    /// The pages' campus with `observations` sent by a laboratory through the FHIR route, then
    /// `body` with the server running.
    static func withResults(
        _ observations: [String], _ body: @escaping @Sendable (TestServer, Campus, APIClient) async throws -> Void
    ) async throws {
        let (server, campus) = try await WebPageTests.setUp()
        let lab = try await RecordsTests.labToken(server, campus)
        try await server.services.authGenerations.refresh()
        try await server.run { api in
            let sent = try await api.send(
                .post, "/v1/campuses/north/lab/results", template: RecordsTests.lab, token: lab, json: RecordsTests.bundle(observations))
            #expect(sent.status == 200, "\(sent.body)")
            try await body(server, campus, api)
        }
    }

    /// The UUIDs a page names, in order.
    static func ids(in body: String) -> [String] {
        let pattern = try? NSRegularExpression(pattern: "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
        let range = NSRange(body.startIndex..., in: body)
        var seen: [String] = []
        for match in pattern?.matches(in: body, range: range) ?? [] {
            guard let found = Range(match.range, in: body) else { continue }
            let id = String(body[found])
            if !seen.contains(id) { seen.append(id) }
        }
        return seen
    }
}
