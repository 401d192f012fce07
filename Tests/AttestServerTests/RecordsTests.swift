import AttestPlugins
import AttestPluginsTesting
import AttestPostgres
import AttestTestSupport
import Foundation
import HTTPTypes
import Identity
import Surveys
import Tenancy
import Testing

@testable import Records

/// Health records (DESIGN §11): a laboratory's FHIR results through `POST …/lab/results`, the
/// badge they set within the request, corrections, the health officers' queue and isolations.
@Suite("Health records")
struct RecordsTests {
    static let lab = "/v1/campuses/{campus}/lab/results"
    static let badge = "/v1/campuses/{campus}/me/badge"
    static let records = "/v1/campuses/{campus}/me/records"
    static let unmatched = "/v1/campuses/{campus}/health/results"
    static let match = "/v1/campuses/{campus}/health/results/{id}/match"
    static let dismiss = "/v1/campuses/{campus}/health/results/{id}/dismiss"
    static let isolations = "/v1/campuses/{campus}/health/isolations"
    static let release = "/v1/campuses/{campus}/health/isolations/{id}/release"
    static let myExemptions = "/v1/campuses/{campus}/me/exemptions"
    static let exemptions = "/v1/campuses/{campus}/health/exemptions"
    static let exemption = "/v1/campuses/{campus}/health/exemptions/{id}"

    /// A FHIR R4 Observation of a SARS-CoV-2 PCR result.
    static func observation(
        specimen: String, email: String, detected: Bool, collected: String = "2026-11-20T09:30:00-05:00",
        issued: String = "2026-11-20T15:00:00Z", code: String = "94500-6"
    ) -> String {
        """
        {"resourceType": "Observation", "status": "final",
         "code": {"coding": [{"system": "http://loinc.org", "code": "\(code)"}]},
         "subject": {"identifier": {"system": "mailto", "value": "\(email)"}},
         "specimen": {"identifier": {"value": "\(specimen)"}},
         "effectiveDateTime": "\(collected)", "issued": "\(issued)",
         "valueCodeableConcept": {"coding": [{"system": "http://snomed.info/sct",
           "code": "\(detected ? LabResult.detectedCode : LabResult.notDetectedCode)"}]}}
        """
    }

    static func bundle(_ observations: [String]) -> String {
        #"{"resourceType": "Bundle", "type": "collection", "entry": ["#
            + observations.map { #"{"resource": \#($0)}"# }.joined(separator: ",") + "]}"
    }

    static func labToken(_ server: TestServer, _ campus: Campus, name: String = "state-lab") async throws -> String {
        try await MachineTokens(client: server.pool).issue(campus: campus, role: .lab, name: name, lifetime: nil, actor: "test").token
    }

    @Test func aPositiveResultTurnsTheBadgeRedWithinTheRequestAndItsCorrectionGivesTheAnswersColourBack() async throws {
        let clock = try TestClock("2026-11-20T16:00:00Z")
        let (server, campus) = try await AttestationTests.setUp(clock: clock)
        let (_, member) = try await server.user("alice@example.edu", at: campus)
        let (_, other) = try await server.user("bob@example.edu", at: campus)
        let lab = try await Self.labToken(server, campus)
        // As `serve` does every second: the campus's sign-in generation, which a record's change moves on.
        try await server.services.authGenerations.refresh()
        try await server.run { api in
            let submitted = try await api.send(
                .post, "/v1/campuses/north/attestations", template: BadgeTests.submitPath, token: member,
                json: AttestationTests.body(AttestationTests.healthy))
            #expect(submitted.status == 201)
            let green = try await api.send(.get, "/v1/campuses/north/me/badge", template: Self.badge, token: member)
            #expect(green.json["color"] as? String == "green")

            let positive = try await api.send(
                .post, "/v1/campuses/north/lab/results", template: Self.lab, token: lab,
                json: Self.observation(specimen: "S-1", email: "Alice@Example.edu", detected: true), contentType: "application/fhir+json")
            #expect(positive.status == 200, "\(positive.body)")
            #expect(positive.json["matched"] as? Int == 1 && positive.json["statusesChanged"] as? Int == 1)
            // The badge the member's very next read gets: red, the record named.
            let red = try await api.send(.get, "/v1/campuses/north/me/badge", template: Self.badge, token: member)
            #expect(red.json["color"] as? String == "red", "\(red.body)")
            #expect(red.json["reason"] as? String == "Isolation until 30 Nov", "collected 20 Nov, 10 days: \(red.body)")
            let claims = try BadgeTests.payload(of: try #require(red.json["token"] as? String))
            #expect(claims["color"] as? String == "red", "the signed token says red too, for the door")
            // Someone else's badge is untouched.
            let bobs = try await api.send(.get, "/v1/campuses/north/me/badge", template: Self.badge, token: other)
            #expect(bobs.json["color"] as? String == "gray")
            let record = try await api.send(.get, "/v1/campuses/north/me/records", template: Self.records, token: member)
            #expect(record.status == 200 && record.headers[.cacheControl] == "private, no-store")
            let tests = try #require(record.json["tests"] as? [[String: Any]])
            #expect(tests.count == 1 && tests.first?["result"] as? String == "detected" && tests.first?["testCode"] as? String == "94500-6")
            #expect((record.json["restriction"] as? [String: Any])?["until"] as? String == "2026-11-30")

            // The laboratory corrects the same specimen: not detected. The answers' colour again.
            let corrected = try await api.send(
                .post, "/v1/campuses/north/lab/results", template: Self.lab, token: lab,
                json: Self.bundle([Self.observation(specimen: "S-1", email: "alice@example.edu", detected: false)]))
            #expect(corrected.json["corrected"] as? Int == 1 && corrected.json["received"] as? Int == 1, "\(corrected.body)")
            let back = try await api.send(.get, "/v1/campuses/north/me/badge", template: Self.badge, token: member)
            #expect(back.json["color"] as? String == "green", "\(back.body)")
            let after = try await api.send(.get, "/v1/campuses/north/me/records", template: Self.records, token: member)
            #expect(after.json["restriction"] is NSNull)
            #expect((after.json["tests"] as? [[String: Any]])?.first?["result"] as? String == "not detected")
            // Sent again unchanged, it is no correction.
            let same = try await api.send(
                .post, "/v1/campuses/north/lab/results", template: Self.lab, token: lab,
                json: Self.observation(specimen: "S-1", email: "alice@example.edu", detected: false))
            #expect(same.json["corrected"] as? Int == 0 && same.json["statusesChanged"] as? Int == 0)
            let audit = try await AuditLog(client: server.pool).entries(campus: campus.id)
            let corrections = audit.filter { $0.action == "result.correct" }
            #expect(
                corrections.count == 1 && corrections.first?.details["was"] == "detected"
                    && corrections.first?.details["now"] == "not detected")
            #expect(corrections.first?.actor == "lab:state-lab" && corrections.first?.target == "specimen:S-1")
        }
    }

    @Test func aMemberInIsolationIsRedWithoutAnsweringAndSubmittingShowsTheIsolationToo() async throws {
        let clock = try TestClock("2026-11-20T16:00:00Z")
        let (server, campus) = try await AttestationTests.setUp(clock: clock)
        let (_, member) = try await server.user("alice@example.edu", at: campus)
        let lab = try await Self.labToken(server, campus)
        // As `serve` does every second: the campus's sign-in generation, which a record's change moves on.
        try await server.services.authGenerations.refresh()
        try await server.run { api in
            let sent = try await api.send(
                .post, "/v1/campuses/north/lab/results", template: Self.lab, token: lab,
                json: Self.observation(specimen: "S-9", email: "alice@example.edu", detected: true, collected: "2026-11-18"))
            #expect(sent.status == 200)
            let red = try await api.send(.get, "/v1/campuses/north/me/badge", template: Self.badge, token: member)
            #expect(red.json["color"] as? String == "red" && red.json["reason"] as? String == "Isolation until 28 Nov", "\(red.body)")
            let submitted = try await api.send(
                .post, "/v1/campuses/north/attestations", template: BadgeTests.submitPath, token: member,
                json: AttestationTests.body(AttestationTests.healthy))
            let shown = try #require(submitted.json["badge"] as? [String: Any])
            #expect(shown["color"] as? String == "red" && shown["reason"] as? String == "Isolation until 28 Nov", "\(submitted.body)")
            // After the isolation's last day, the answers decide again.
            clock.advance(by: 9 * 86_400)
            let later = try await api.send(.get, "/v1/campuses/north/me/badge", template: Self.badge, token: member)
            #expect(later.json["color"] as? String == "gray", "\(later.body)")
        }
    }

    @Test func badResourcesAreRefusedWholeNamingTheElement() async throws {
        let clock = try TestClock("2026-11-20T16:00:00Z")
        let (server, campus) = try await AttestationTests.setUp(clock: clock)
        _ = try await server.user("alice@example.edu", at: campus)
        let lab = try await Self.labToken(server, campus)
        let good = Self.observation(specimen: "S-1", email: "alice@example.edu", detected: true)
        let cases: [(String, [String])] = [
            (good.replacingOccurrences(of: "94500-6", with: "12345-6"), ["Observation.code"]),
            (good.replacingOccurrences(of: "http://loinc.org", with: "http://example.org"), ["Observation.code"]),
            (good.replacingOccurrences(of: LabResult.detectedCode, with: "10828004"), ["Observation.valueCodeableConcept"]),
            (good.replacingOccurrences(of: #""status": "final""#, with: #""status": "preliminary""#), ["Observation.status"]),
            (good.replacingOccurrences(of: "2026-11-20T15:00:00Z", with: "yesterday"), ["Observation.issued"]),
            (good.replacingOccurrences(of: "2026-11-20T09:30:00-05:00", with: "2026-11-20T09:30:00"), ["Observation.effectiveDateTime"]),
            // A year typed wrong (a positive result would isolate its member for decades), a
            // result issued two days ahead of the server's clock, one before its specimen.
            (
                good.replacingOccurrences(of: "2026-11-20T09:30:00-05:00", with: "2062-11-20T09:30:00-05:00"),
                ["Observation.effectiveDateTime", "Observation.issued"]
            ),
            (good.replacingOccurrences(of: "2026-11-20T15:00:00Z", with: "2026-11-22T15:00:00Z"), ["Observation.issued"]),
            (good.replacingOccurrences(of: "2026-11-20T15:00:00Z", with: "2026-11-18T15:00:00Z"), ["Observation.issued"]),
            (
                good.replacingOccurrences(of: #""system": "mailto""#, with: #""system": "urn:oid:1.2.3""#),
                ["Observation.subject.identifier.system"]
            ),
            (good.replacingOccurrences(of: "alice@example.edu", with: "alice"), ["Observation.subject.identifier.value"]),
            (
                good.replacingOccurrences(of: #""specimen": {"identifier": {"value": "S-1"}},"#, with: ""),
                ["Observation.specimen.identifier"]
            ),
            (#"{"resourceType": "Patient"}"#, ["resourceType"]),
            (#"{"resourceType": "Bundle", "entry": []}"#, ["Bundle.entry"]),
            (
                Self.bundle([good, good.replacingOccurrences(of: "94500-6", with: "1-1"), #"{"resourceType": "Patient"}"#]),
                ["Bundle.entry[1].resource.code", "Bundle.entry[2].resource.resourceType"]
            ),
        ]
        // As `serve` does every second: the campus's sign-in generation, which a record's change moves on.
        try await server.services.authGenerations.refresh()
        try await server.run { api in
            for (body, fields) in cases {
                let refused = try await api.send(.post, "/v1/campuses/north/lab/results", template: Self.lab, token: lab, json: body)
                #expect(refused.status == 422 && refused.problem.fields == fields, "\(fields): \(refused.body)")
            }
            let notJSON = try await api.send(.post, "/v1/campuses/north/lab/results", template: Self.lab, token: lab, json: "{")
            #expect(notJSON.status == 400)
            let xml = try await api.send(
                .post, "/v1/campuses/north/lab/results", template: Self.lab, token: lab, json: "<Observation/>",
                contentType: "application/fhir+xml")
            #expect(xml.status == 415)
            let stored: Int = try await server.pool.query("SELECT count(*) AS n FROM test_results", campus: campus.id.rawValue)[0].decode(
                "n")
            #expect(stored == 0, "a bundle with one bad observation stores none of them")
        }
    }

    @Test func aLabTokenSendsResultsAndOpensNothingElseAndNoOtherTokenSendsResults() async throws {
        let clock = try TestClock("2026-11-20T16:00:00Z")
        let (server, campus) = try await AttestationTests.setUp(clock: clock)
        let south = try await server.campus("south")
        let (_, member) = try await server.user("alice@example.edu", at: campus)
        let (_, officer) = try await server.user("ho@example.edu", at: campus, roles: [.healthOfficer, .admin])
        let lab = try await Self.labToken(server, campus)
        let southLab = try await Self.labToken(server, south)
        let body = Self.observation(specimen: "S-1", email: "alice@example.edu", detected: true)
        // As `serve` does every second: the campus's sign-in generation, which a record's change moves on.
        try await server.services.authGenerations.refresh()
        try await server.run { api in
            for path in ["/v1/campuses/north/me/badge", "/v1/campuses/north/me/records", "/v1/campuses/north/survey"] {
                let refused = try await api.send(.get, path, template: path.replacingOccurrences(of: "north", with: "{campus}"), token: lab)
                #expect(refused.status == 401, "\(path) with a lab token: \(refused.body)")
            }
            let list = try await api.send(.get, "/v1/campuses/north/health/results?unmatched=true", template: Self.unmatched, token: lab)
            #expect(list.status == 401)
            for token in [member, officer, southLab] {
                let refused = try await api.send(.post, "/v1/campuses/north/lab/results", template: Self.lab, token: token, json: body)
                #expect(refused.status == 401, "\(refused.body)")
            }
            // North's laboratory at south: unknown there.
            let elsewhere = try await api.send(.post, "/v1/campuses/south/lab/results", template: Self.lab, token: lab, json: body)
            #expect(elsewhere.status == 401)
            // Revoked by the operator's CLI: refused from the next request; south's laboratory of the same name untouched.
            let cli = AdminCLITests.CLI(database: server.database)
            let listed = try await cli.run("token", "list", "north")
            #expect(listed.stdout.hasPrefix("--lab state-lab: issued ") && listed.stdout.contains(", live until "), "\(listed)")
            let revoke = try await cli.run("token", "revoke", "north", "--lab", "state-lab")
            #expect(revoke.status == 0 && revoke.stdout.hasPrefix("Revoked 1 token of --lab state-lab at north"), "\(revoke)")
            let revoked = try await api.send(.post, "/v1/campuses/north/lab/results", template: Self.lab, token: lab, json: body)
            #expect(revoked.status == 401)
            let southBody = Self.observation(specimen: "S-9", email: "nobody@example.edu", detected: false)
            let southStill = try await api.send(
                .post, "/v1/campuses/south/lab/results", template: Self.lab, token: southLab, json: southBody)
            #expect(southStill.status == 200, "\(southStill.body)")
            AdminCLITests.expectFailure(
                try await cli.run("token", "revoke", "north", "--lab", "state-lab"), "no live token for --lab state-lab")
            let after = try await cli.run("token", "list", "north", "--json")
            let tokens = try #require(try JSONSerialization.jsonObject(with: Data(after.stdout.utf8)) as? [[String: Any]])
            #expect(tokens.count == 1 && tokens[0]["name"] as? String == "state-lab" && tokens[0]["revokedAt"] is String, "\(after.stdout)")
            let audited = try await AuditLog(client: server.pool).entries(campus: campus.id).filter { $0.action == "token.revoke" }
            #expect(audited.map(\.target) == ["lab:state-lab"], "one entry: the refused second revocation is not audited")
            // A member and a screener do not reach the health officers' routes.
            let asMember = try await api.send(
                .get, "/v1/campuses/north/health/isolations", template: Self.isolations, token: member)
            #expect(asMember.status == 403)
        }
    }

    @Test func unmatchedResultsWaitForAHealthOfficerWhoMatchesOrDismissesThem() async throws {
        let clock = try TestClock("2026-11-20T16:00:00Z")
        let (server, campus) = try await AttestationTests.setUp(clock: clock)
        let south = try await server.campus("south")
        let (_, member) = try await server.user("alice@example.edu", at: campus)
        let (_, officer) = try await server.user("ho@example.edu", at: campus, roles: [.healthOfficer])
        let (_, southOfficer) = try await server.user("ho@example.edu", at: south, roles: [.healthOfficer])
        let lab = try await Self.labToken(server, campus)
        // As `serve` does every second: the campus's sign-in generation, which a record's change moves on.
        try await server.services.authGenerations.refresh()
        try await server.run { api in
            let sent = try await api.send(
                .post, "/v1/campuses/north/lab/results", template: Self.lab, token: lab,
                json: Self.bundle([
                    Self.observation(specimen: "S-1", email: "alice.typo@example.edu", detected: true),
                    Self.observation(specimen: "S-2", email: "stranger@elsewhere.org", detected: false),
                ]))
            #expect(sent.json["unmatched"] as? Int == 2 && sent.json["matched"] as? Int == 0)
            let list = try await api.send(
                .get, "/v1/campuses/north/health/results?unmatched=true", template: Self.unmatched, token: officer)
            let items = try #require(list.json["items"] as? [[String: Any]])
            #expect(items.count == 2 && list.headers[.cacheControl] == "private, no-store")
            let typo = try #require(items.first { $0["specimenId"] as? String == "S-1" }?["id"] as? String)
            let stranger = try #require(items.first { $0["specimenId"] as? String == "S-2" }?["id"] as? String)
            // South's health officer sees none of north's queue and cannot act on it.
            let southList = try await api.send(
                .get, "/v1/campuses/south/health/results?unmatched=true", template: Self.unmatched, token: southOfficer)
            #expect((southList.json["items"] as? [Any])?.isEmpty == true)
            let southMatch = try await api.send(
                .post, "/v1/campuses/south/health/results/\(typo)/match", template: Self.match, token: southOfficer,
                json: #"{"email": "ho@example.edu"}"#)
            #expect(southMatch.status == 404)

            let nobody = try await api.send(
                .post, "/v1/campuses/north/health/results/\(typo)/match", template: Self.match, token: officer,
                json: #"{"email": "nobody@example.edu"}"#)
            #expect(nobody.status == 404 && nobody.problem.detail.contains("nobody@example.edu"))
            let matched = try await api.send(
                .post, "/v1/campuses/north/health/results/\(typo)/match", template: Self.match, token: officer,
                json: #"{"email": "alice@example.edu"}"#)
            #expect(matched.status == 204, "\(matched.body)")
            let red = try await api.send(.get, "/v1/campuses/north/me/badge", template: Self.badge, token: member)
            #expect(red.json["color"] as? String == "red")
            let twice = try await api.send(
                .post, "/v1/campuses/north/health/results/\(typo)/match", template: Self.match, token: officer,
                json: #"{"email": "alice@example.edu"}"#)
            #expect(twice.status == 409)
            let dismissed = try await api.send(
                .post, "/v1/campuses/north/health/results/\(stranger)/dismiss", template: Self.dismiss, token: officer)
            #expect(dismissed.status == 204)
            let empty = try await api.send(
                .get, "/v1/campuses/north/health/results?unmatched=true", template: Self.unmatched, token: officer)
            #expect((empty.json["items"] as? [Any])?.isEmpty == true)
            let noQuery = try await api.send(.get, "/v1/campuses/north/health/results", template: Self.unmatched, token: officer)
            #expect(noQuery.status == 422 && noQuery.problem.fields == ["unmatched"])
            let actions = try await AuditLog(client: server.pool).entries(campus: campus.id).map(\.action)
            for action in ["results.receive", "results.unmatched.read", "result.match", "result.dismiss"] {
                #expect(actions.contains(action), "\(action) audited: \(actions)")
            }
        }
    }

    @Test func healthOfficersStartListAndReleaseIsolationsAndQuarantines() async throws {
        let clock = try TestClock("2026-11-20T16:00:00Z")
        let (server, campus) = try await AttestationTests.setUp(clock: clock)
        let (_, member) = try await server.user("alice@example.edu", at: campus)
        let (_, contact) = try await server.user("bob@example.edu", at: campus)
        let (_, officer) = try await server.user("ho@example.edu", at: campus, roles: [.healthOfficer])
        let lab = try await Self.labToken(server, campus)
        // As `serve` does every second: the campus's sign-in generation, which a record's change moves on.
        try await server.services.authGenerations.refresh()
        try await server.run { api in
            let quarantine = try await api.send(
                .post, "/v1/campuses/north/health/isolations", template: Self.isolations, token: officer,
                json: #"{"email": "bob@example.edu", "kind": "quarantine"}"#)
            #expect(quarantine.status == 201 && quarantine.json["until"] as? String == "2026-11-27", "\(quarantine.body)")
            let red = try await api.send(.get, "/v1/campuses/north/me/badge", template: Self.badge, token: contact)
            #expect(red.json["color"] as? String == "red" && red.json["reason"] as? String == "Quarantine until 27 Nov")
            _ = try await api.send(
                .post, "/v1/campuses/north/lab/results", template: Self.lab, token: lab,
                json: Self.observation(specimen: "S-1", email: "alice@example.edu", detected: true))
            let list = try await api.send(.get, "/v1/campuses/north/health/isolations", template: Self.isolations, token: officer)
            let items = try #require(list.json["items"] as? [[String: Any]])
            #expect(items.map { $0["email"] as? String } == ["bob@example.edu", "alice@example.edu"], "soonest ending first: \(list.body)")
            #expect(items.map { $0["fromResult"] as? Bool } == [false, true])

            for (body, field) in [
                (#"{"email": "bob@example.edu", "kind": "curfew"}"#, "kind"),
                (#"{"email": "bob@example.edu", "kind": "isolation", "startsOn": "2026-11-20", "until": "2026-11-19"}"#, "until"),
                (#"{"email": "bob@example.edu", "kind": "isolation", "until": "2027-06-01"}"#, "until"),
                (#"{"kind": "isolation"}"#, "email"),
                // What Schemathesis sent (a NUL, which PostgreSQL's text cannot hold: it was a 500),
                // and what is no address either.
                (#"{"email": "\u0019\u0000\b\u008e", "kind": "isolation", "startsOn": "2026-11-10", "until": "2026-11-12"}"#, "email"),
                (#"{"email": "bob@exa\u0000mple.edu", "kind": "isolation"}"#, "email"),
                (#"{"email": "bob", "kind": "isolation"}"#, "email"),
            ] {
                let refused = try await api.send(
                    .post, "/v1/campuses/north/health/isolations", template: Self.isolations, token: officer, json: body)
                #expect(refused.status == 422 && refused.problem.fields == [field], "\(body): \(refused.body)")
            }
            let nobody = try await api.send(
                .post, "/v1/campuses/north/health/isolations", template: Self.isolations, token: officer,
                json: #"{"email": "nobody@example.edu", "kind": "isolation"}"#)
            #expect(nobody.status == 404)

            for item in items {
                let id = try #require(item["id"] as? String)
                let released = try await api.send(
                    .post, "/v1/campuses/north/health/isolations/\(id)/release", template: Self.release, token: officer)
                #expect(released.status == 204, "\(released.body)")
                let again = try await api.send(
                    .post, "/v1/campuses/north/health/isolations/\(id)/release", template: Self.release, token: officer)
                #expect(again.status == 404)
            }
            for token in [member, contact] {
                let gray = try await api.send(.get, "/v1/campuses/north/me/badge", template: Self.badge, token: token)
                #expect(gray.json["color"] as? String == "gray", "released: \(gray.body)")
            }
            let actions = try await AuditLog(client: server.pool).entries(campus: campus.id).map(\.action)
            for action in ["quarantine.start", "isolations.read", "quarantine.release", "isolation.release"] {
                #expect(actions.contains(action), "\(action) audited: \(actions)")
            }
        }
    }

    @Test func aMemberAsksForAnExemptionAHealthOfficerDecidesAndTheMemberSeesTheDecision() async throws {
        let clock = try TestClock("2026-11-20T16:00:00Z")
        let (server, campus) = try await AttestationTests.setUp(clock: clock)
        let south = try await server.campus("south")
        let (_, member) = try await server.user("alice@example.edu", at: campus)
        let (_, other) = try await server.user("bob@example.edu", at: campus)
        let (_, officer) = try await server.user("ho@example.edu", at: campus, roles: [.healthOfficer])
        let (_, southOfficer) = try await server.user("ho@example.edu", at: south, roles: [.healthOfficer])
        try await server.services.authGenerations.refresh()
        try await server.run { api in
            let asked = try await api.send(
                .post, "/v1/campuses/north/me/exemptions", template: Self.myExemptions, token: member,
                json: #"{"kind": "medical", "note": "allergic to a vaccine component; letter from Dr. Ortiz"}"#)
            #expect(asked.status == 201 && asked.json["status"] as? String == "pending" && asked.json["expires"] is NSNull, "\(asked.body)")
            let id = try #require(asked.json["id"] as? String)
            let again = try await api.send(
                .post, "/v1/campuses/north/me/exemptions", template: Self.myExemptions, token: member,
                json: #"{"kind": "other", "note": "again"}"#)
            #expect(again.status == 409)
            for (body, field) in [(#"{"kind": "vegan", "note": "x"}"#, "kind"), (#"{"kind": "other", "note": "  "}"#, "note")] {
                let refused = try await api.send(
                    .post, "/v1/campuses/north/me/exemptions", template: Self.myExemptions, token: other, json: body)
                #expect(refused.status == 422 && refused.problem.fields == [field], "\(refused.body)")
            }
            clock.advance(by: 60)
            let denied = try await api.send(
                .post, "/v1/campuses/north/me/exemptions", template: Self.myExemptions, token: other,
                json: #"{"kind": "religious", "note": "a letter from my congregation"}"#)
            let deniedID = try #require(denied.json["id"] as? String)

            let waiting = try await api.send(.get, "/v1/campuses/north/health/exemptions", template: Self.exemptions, token: officer)
            let items = try #require(waiting.json["items"] as? [[String: Any]])
            #expect(items.map { $0["email"] as? String } == ["alice@example.edu", "bob@example.edu"])
            #expect(items.first?["note"] as? String == "allergic to a vaccine component; letter from Dr. Ortiz")
            let asMember = try await api.send(.get, "/v1/campuses/north/health/exemptions", template: Self.exemptions, token: member)
            #expect(asMember.status == 403)
            let southList = try await api.send(.get, "/v1/campuses/south/health/exemptions", template: Self.exemptions, token: southOfficer)
            #expect((southList.json["items"] as? [Any])?.isEmpty == true)
            let southDecides = try await api.send(
                .patch, "/v1/campuses/south/health/exemptions/\(id)", template: Self.exemption, token: southOfficer,
                json: #"{"decision": "approved", "expires": "2027-06-30"}"#)
            #expect(southDecides.status == 404)

            for (body, field) in [
                (#"{"decision": "approved"}"#, "expires"), (#"{"decision": "maybe"}"#, "decision"),
                (#"{"decision": "approved", "expires": "2026-11-19"}"#, "expires"),
                (#"{"decision": "approved", "expires": "2030-01-01"}"#, "expires"),
            ] {
                let refused = try await api.send(
                    .patch, "/v1/campuses/north/health/exemptions/\(id)", template: Self.exemption, token: officer, json: body)
                #expect(refused.status == 422 && refused.problem.fields == [field], "\(body): \(refused.body)")
            }
            let approved = try await api.send(
                .patch, "/v1/campuses/north/health/exemptions/\(id)", template: Self.exemption, token: officer,
                json: #"{"decision": "approved", "expires": "2027-06-30", "reason": "letter received"}"#)
            #expect(approved.status == 204, "\(approved.body)")
            // Decided again: its last day moved (an earlier one, then back), the approval's words
            // kept when none are given.
            for expires in ["2027-03-31", "2027-06-30"] {
                let moved = try await api.send(
                    .patch, "/v1/campuses/north/health/exemptions/\(id)", template: Self.exemption, token: officer,
                    json: #"{"decision": "approved", "expires": "\#(expires)"}"#)
                #expect(moved.status == 204, "\(moved.body)")
                let record = try await api.send(.get, "/v1/campuses/north/me/records", template: Self.records, token: member)
                #expect((record.json["exemption"] as? [String: Any])?["expires"] as? String == expires, "\(record.body)")
            }
            let no = try await api.send(
                .patch, "/v1/campuses/north/health/exemptions/\(deniedID)", template: Self.exemption, token: officer,
                json: #"{"decision": "denied", "reason": "send the letter to the health office"}"#)
            #expect(no.status == 204)

            // Each member sees their decision, and the approved one is in their record.
            let mine = try await api.send(.get, "/v1/campuses/north/me/exemptions", template: Self.myExemptions, token: member)
            let decided = try #require((mine.json["items"] as? [[String: Any]])?.first)
            #expect(decided["status"] as? String == "approved" && decided["expires"] as? String == "2027-06-30")
            #expect(decided["reason"] as? String == "letter received" && decided["email"] == nil)
            let record = try await api.send(.get, "/v1/campuses/north/me/records", template: Self.records, token: member)
            #expect((record.json["exemption"] as? [String: Any])?["expires"] as? String == "2027-06-30", "\(record.body)")
            let bobs = try await api.send(.get, "/v1/campuses/north/me/exemptions", template: Self.myExemptions, token: other)
            #expect((bobs.json["items"] as? [[String: Any]])?.first?["status"] as? String == "denied")
            let bobsRecord = try await api.send(.get, "/v1/campuses/north/me/records", template: Self.records, token: other)
            #expect(bobsRecord.json["exemption"] is NSNull)
            // Ended by a health officer (approved in error): gone from the record at once, the
            // member sees it ended (not denied: they held it) with the reason, and so does the
            // health officers' list of ended ones; neither a denied nor an ended one is decided again.
            let ended = try await api.send(
                .patch, "/v1/campuses/north/health/exemptions/\(id)", template: Self.exemption, token: officer,
                json: #"{"decision": "denied", "reason": "approved in error: the letter was another person's"}"#)
            #expect(ended.status == 204, "\(ended.body)")
            let endedRecord = try await api.send(.get, "/v1/campuses/north/me/records", template: Self.records, token: member)
            #expect(endedRecord.json["exemption"] is NSNull, "\(endedRecord.body)")
            let mineAfter = try await api.send(.get, "/v1/campuses/north/me/exemptions", template: Self.myExemptions, token: member)
            let endedItem = try #require((mineAfter.json["items"] as? [[String: Any]])?.first)
            #expect(endedItem["status"] as? String == "ended" && (endedItem["reason"] as? String)?.hasPrefix("approved in error") == true)
            #expect(endedItem["expires"] is NSNull && endedItem["decidedAt"] is String, "\(mineAfter.body)")
            let endedList = try await api.send(
                .get, "/v1/campuses/north/health/exemptions?status=ended", template: Self.exemptions, token: officer)
            #expect(((endedList.json["items"] as? [[String: Any]]) ?? []).compactMap { $0["id"] as? String } == [id], "\(endedList.body)")
            let deniedList = try await api.send(
                .get, "/v1/campuses/north/health/exemptions?status=denied", template: Self.exemptions, token: officer)
            #expect(((deniedList.json["items"] as? [[String: Any]]) ?? []).compactMap { $0["id"] as? String } == [deniedID])
            for (decided, word) in [(id, "stays ended"), (deniedID, "stays denied")] {
                let again = try await api.send(
                    .patch, "/v1/campuses/north/health/exemptions/\(decided)", template: Self.exemption, token: officer,
                    json: #"{"decision": "approved", "expires": "2027-06-30"}"#)
                #expect(again.status == 409 && again.problem.detail.contains("\(word): the member may ask again"), "\(again.body)")
            }
            let changes = try await AuditLog(client: server.pool).entries(campus: campus.id).filter {
                $0.action == "exemption.change" || $0.action == "exemption.revoke"
            }
            #expect(
                changes.map { "\($0.action) \($0.details["was"] ?? "") \($0.details["expires"] ?? "")" } == [
                    "exemption.change 2027-06-30 2027-03-31", "exemption.change 2027-03-31 2027-06-30", "exemption.revoke 2027-06-30 ",
                ])

            let actions = try await AuditLog(client: server.pool).entries(campus: campus.id).map(\.action)
            for action in ["exemption.request", "exemptions.read", "exemption.approve", "exemption.deny"] {
                #expect(actions.contains(action), "\(action) audited: \(actions)")
            }
            // The note is sealed at rest.
            let stored: Data = try await server.pool.query(
                "SELECT note FROM exemptions WHERE campus_id = \(campus.id) LIMIT 1", campus: campus.id.rawValue)[0].decode("note")
            #expect(!String(decoding: stored, as: UTF8.self).contains("letter"))
        }
    }

    /// Deliveries for one member at once: each recomputes after the one before committed
    /// (the campus's records lock), so none leaves a status that misses another's result.
    /// While another server holds the campus's records, the sixteen wait in this process's
    /// turn: one of them holds a connection, and the pool still serves everything else.
    @Test func concurrentDeliveriesForOneMemberLeaveTheStatusTheWholeRecordGives() async throws {
        let clock = try TestClock("2026-11-20T16:00:00Z")
        let (server, campus) = try await AttestationTests.setUp(clock: clock)
        let alice = try await server.user("alice@example.edu", at: campus).user
        let records = HealthRecords(client: server.pool)
        let base = try #require(FHIRTime.parse("2026-11-01T12:00:00Z", zone: .gmt))
        let lock = try await AnotherServersLock.take(
            "SELECT \(HealthRecords.lock(campus: campus.id))", on: server, campus: campus.id)
        try await withThrowingTaskGroup(of: Void.self) { group in
            // Released before the group waits for its deliveries, however this ends.
            defer { lock.release() }
            for index in 0..<16 {
                group.addTask {
                    let collected = base.addingTimeInterval(Double(index) * 86_400)
                    _ = try await records.receive(
                        campus: campus,
                        results: [
                            LabResult(
                                specimenID: "C-\(index)", subject: "alice@example.edu", testCode: "94500-6", detected: index % 5 == 0,
                                collectedAt: collected, resultedAt: collected.addingTimeInterval(3600))
                        ], source: "test", actor: "test")
                }
            }
            let waiting = try await AnotherServersLock.waiters(on: server)
            #expect(waiting == 1, "one delivery waits for the lock with a connection; the others wait for their turn without")
            // A delivery cancelled while it waits for its turn leaves the line and stores nothing.
            let late = Task {
                try await records.receive(
                    campus: campus,
                    results: [
                        LabResult(
                            specimenID: "LATE", subject: "alice@example.edu", testCode: "94500-6", detected: true,
                            collectedAt: base, resultedAt: base)
                    ], source: "test", actor: "test")
            }
            // Cancelled once it waits in the line, behind the fifteen.
            let queued = ContinuousClock.now
            while HealthRecords.turns.waiting(for: campus.id) < 16, ContinuousClock.now - queued < .seconds(15) {
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(HealthRecords.turns.waiting(for: campus.id) == 16)
            late.cancel()
            await #expect(throws: CancellationError.self) { try await late.value }
            #expect(HealthRecords.turns.waiting(for: campus.id) == 15, "the cancelled delivery left the line")
            lock.release()
            try await group.waitForAll()
        }
        let stored: Int = try await server.pool.query(
            "SELECT count(*) AS n FROM test_results WHERE campus_id = \(campus.id)", campus: campus.id.rawValue)[0].decode("n")
        #expect(stored == 16)
        try await lock.end()
        let row = try await server.pool.query(
            "SELECT \(UserStore.health) FROM users u WHERE campus_id = \(campus.id) AND id = \(alice.id)", campus: campus.id.rawValue)
        let status = try #require(HealthStatus.stored(try row[0].decode("health", as: PostgresJSON?.self)))
        #expect(status.latestTest?.collected == base.addingTimeInterval(15 * 86_400), "the latest of all 16")
        #expect(status.restriction?.until == LocalDate("2026-11-26"), "the last positive (collected on the 16th) plus 10 days")
        #expect(try await records.recomputeAll(campus: campus) == 0)
        await server.pool.shutdown()
    }

    /// The campus's `isolationDays` sets a positive result's isolation; changing it and
    /// recomputing moves every status it touches, however many slices the members take.
    @Test func theCampusPolicySetsHowLongAnIsolationLasts() async throws {
        let clock = try TestClock("2026-11-20T16:00:00Z")
        let (server, campus) = try await AttestationTests.setUp(clock: clock)
        let members = ["alice@example.edu", "bob@example.edu", "carol@example.edu"]
        var ids: [UUID] = []
        for email in members { ids.append(try await server.user(email, at: campus).user.id.rawValue) }
        let records = HealthRecords(client: server.pool)
        let collected = try #require(FHIRTime.parse("2026-11-18T10:00:00-05:00", zone: .gmt))
        _ = try await records.receive(
            campus: campus,
            results: members.enumerated().map { index, email in
                LabResult(
                    specimenID: "P-\(index)", subject: email, testCode: "94500-6", detected: true, collectedAt: collected,
                    resultedAt: collected.addingTimeInterval(3600))
            }, source: "test", actor: "test")
        func until() async throws -> [LocalDate?] {
            let rows = try await server.pool.query(
                "SELECT u.id, \(UserStore.health) FROM users u WHERE campus_id = \(campus.id) AND id = ANY(\(ids))",
                campus: campus.id.rawValue)
            var byID: [UUID: LocalDate?] = [:]
            for row in rows {
                byID[try row.decode("id")] = HealthStatus.stored(try row.decode("health", as: PostgresJSON?.self))?.restriction?.until
            }
            return ids.map { byID[$0] ?? nil }
        }
        #expect(try await until() == Array(repeating: LocalDate("2026-11-28"), count: 3), "10 days by default")
        for ignored in [#"{"isolationDays": 61}"#, #"{"isolationDays": 2.5}"#, #"{"isolationDays": "5"}"#] {
            let changed = try await CampusStore(client: server.pool).set(slug: "north", key: "settings", value: ignored, actor: "test")
            #expect(RecordsPolicy(campus: changed) == RecordsPolicy(), "\(ignored) is no number of days: the defaults stand")
        }
        let shorter = try await CampusStore(client: server.pool).set(
            slug: "north", key: "settings", value: #"{"isolationDays": 5, "quarantineDays": 3}"#, actor: "test")
        #expect(RecordsPolicy(campus: shorter) == RecordsPolicy(isolationDays: 5, quarantineDays: 3))
        // Two members a read: the last slice holds one.
        #expect(try await records.recomputeAll(campus: shorter, slice: 2) == 3)
        #expect(try await until() == Array(repeating: LocalDate("2026-11-23"), count: 3))
        #expect(try await records.recomputeAll(campus: shorter, slice: 2) == 0)
        await server.pool.shutdown()
    }

    /// An operator's `attest campus set` of `isolationDays` or of the zone moves every kept
    /// status at once (the badge says "Isolation until …" from it), and says how many changed;
    /// a setting no status reads recomputes nothing.
    @Test func campusSetRecomputesTheStatusesThePolicyOrTheZoneMoves() async throws {
        let cli = try await AdminCLITests.cli()
        #expect(
            try await cli.run("campus", "create", "north", "--name", "North", "--timezone", "UTC", "--email-domain", "example.edu").status
                == 0)
        #expect(try await cli.run("user", "add", "north", "alice@example.edu").status == 0)
        let directory = FileManager.default.temporaryDirectory.appending(path: "attest-policy-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appending(path: "results.csv")
        // Collected at 09:30 UTC on the 20th: the 19th in Honolulu.
        try Data(
            "specimen_id,member,collected_at,resulted_at,test_code,result\nS-1,alice@example.edu,2026-11-20T09:30:00Z,2026-11-20T15:00:00Z,94500-6,detected\n"
                .utf8
        ).write(to: file)
        #expect(try await cli.run("results", "import", "north", file.path).status == 0)
        let owner = TestDatabase.client(database: cli.database, role: nil, maxConnections: 1)
        func until() async throws -> LocalDate? {
            let rows = try await owner.query("SELECT health FROM member_health")
            return HealthStatus.stored(try rows.first?.decode("health", as: PostgresJSON?.self))?.restriction?.until
        }
        #expect(try await until() == LocalDate("2026-11-30"))

        let shorter = try await cli.run("campus", "set", "north", "settings", #"{"isolationDays": 5}"#)
        #expect(shorter.status == 0 && shorter.stdout.contains("Health statuses recomputed: 1 changed."), "\(shorter)")
        #expect(try await until() == LocalDate("2026-11-25"))
        let zone = try await cli.run("campus", "set", "north", "timezone", "Pacific/Honolulu", "--json")
        #expect(zone.status == 0, "\(zone.stderr)")
        let object = try JSONSerialization.jsonObject(with: Data(zone.stdout.utf8)) as? [String: Any]
        #expect(object?["statusesChanged"] as? Int == 1)
        #expect(try await until() == LocalDate("2026-11-24"))
        // Given again, nothing moves; a setting no status reads recomputes nothing.
        let again = try await cli.run("campus", "set", "north", "settings", #"{"isolationDays": 5}"#)
        #expect(again.stdout.contains("Health statuses recomputed: 0 changed."), "\(again)")
        let other = try await cli.run("campus", "set", "north", "settings", #"{"quarantineDays": 3}"#)
        #expect(other.status == 0 && other.stdout == "Set settings of north.\n", "\(other)")
        await owner.shutdown()
    }

    /// The stored status is always the one the whole record gives: random histories of
    /// results, corrections, late results, matches, isolations and releases, replayed in
    /// random orders, each step checked against a model of the record kept here.
    @Test(arguments: 1...6) func theStoredStatusAlwaysEqualsTheStatusRecomputedFromTheWholeRecord(seed: UInt64) async throws {
        var random = SeededGenerator(seed: seed)
        let clock = try TestClock("2026-11-20T16:00:00Z")
        let (server, created) = try await AttestationTests.setUp(clock: clock)
        let records = HealthRecords(client: server.pool, kek: TestServer.kek)
        let emails = ["a@example.edu", "b@example.edu", "c@example.edu"]
        // Cards too: the example issuer trusted, names not compared (members are named by their email here).
        try await VaccinationTests.trustExampleIssuer(server, created)
        let campus = try await VaccinationTests.setIdentity("off", at: created.slug, server)
        var doses: [String: Set<SmartHealthCards.Dose>] = [:]
        var users: [String: UserID] = [:]
        for email in emails { users[email] = try await server.user(email, at: campus).user.id }
        let policy = RecordsPolicy()
        // The model: results by specimen (the subject they were sent with, whom they belong to),
        // isolations by id.
        struct Kept {
            var result: LabResult
            var owner: String?
            var released: Bool
            var dismissed: Bool
        }
        var kept: [String: Kept] = [:]
        var isolations: [UUID: (email: String, kind: HealthStatus.RestrictionKind, until: LocalDate, released: Bool)] = [:]
        var approved: [UUID: (email: String, exemption: HealthStatus.Exemption)] = [:]
        let base = try #require(FHIRTime.parse("2026-11-01T12:00:00Z", zone: .gmt))
        for _ in 0..<40 {
            switch Int.random(in: 0..<12, using: &random) {
            case 11:
                // A card of one or two doses, some the member presented before.
                let email = emails.randomElement(using: &random)!
                let given = (0..<Int.random(in: 1...2, using: &random)).map { _ in
                    (
                        ["207", "208", "212"].randomElement(using: &random)!,
                        "2021-0\(Int.random(in: 1...3, using: &random))-1\(Int.random(in: 0...2, using: &random))"
                    )
                }
                let user = try #require(try await UserStore(client: server.pool).find(campus: campus.id, email: email))
                _ = try await records.presentCards(
                    campus: campus, user: user, cards: [try Cards.jws(doses: given)], actor: "test", now: clock.read())
                for (cvx, day) in given { doses[email, default: []].insert(.init(cvx: cvx, date: LocalDate(day)!)) }
            case 0..<6:
                // A delivery of 1 to 4 results: new specimens, corrections, late results, subjects nobody has.
                var delivery: [LabResult] = []
                for _ in 0..<Int.random(in: 1...4, using: &random) {
                    let specimen = "S-\(Int.random(in: 1...8, using: &random))"
                    let subject = Bool.random(using: &random) ? "stranger@example.edu" : emails.randomElement(using: &random)!
                    let collected = base.addingTimeInterval(Double(Int.random(in: 0...25, using: &random)) * 86_400)
                    delivery.append(
                        LabResult(
                            specimenID: specimen, subject: subject, testCode: "94500-6", detected: Bool.random(using: &random),
                            collectedAt: collected,
                            resultedAt: collected.addingTimeInterval(Double(Int.random(in: 1...200, using: &random)) * 3600)))
                }
                _ = try await records.receive(campus: campus, results: delivery, source: "test", actor: "test")
                var last: [String: LabResult] = [:]
                for result in delivery where (last[result.specimenID]?.resultedAt ?? .distantPast) <= result.resultedAt {
                    last[result.specimenID] = result
                }
                for (specimen, result) in last {
                    let earlier = kept[specimen]
                    let owner: String? =
                        emails.contains(result.subject)
                        ? result.subject : (earlier?.result.subject == result.subject ? earlier?.owner : nil)
                    kept[specimen] = Kept(result: result, owner: owner, released: earlier?.released ?? false, dismissed: false)
                }
            case 6:
                // A health officer matches a waiting result.
                guard let (specimen, waiting) = kept.first(where: { $0.value.owner == nil && !$0.value.dismissed }) else { continue }
                let email = emails.randomElement(using: &random)!
                let id: UUID = try await server.pool.query(
                    "SELECT id FROM test_results WHERE campus_id = \(campus.id) AND specimen_id = \(specimen)", campus: campus.id.rawValue)[
                        0
                    ]
                    .decode("id")
                try await records.match(campus: campus, result: id, email: email, actor: "test")
                kept[specimen] = Kept(result: waiting.result, owner: email, released: waiting.released, dismissed: false)
            case 10 where !approved.isEmpty && Bool.random(using: &random):
                // An approved exemption decided again: its last day moved, or ended.
                let id = approved.keys.sorted().randomElement(using: &random)!
                let approve = Bool.random(using: &random)
                let expires = campus.localDate(at: clock.read()).adding(days: Int.random(in: 0...300, using: &random))
                try await records.decideExemption(
                    campus: campus, id: id, approve: approve, expires: expires, reason: "", actor: "test", now: clock.read())
                approved[id] = approve ? (approved[id]!.email, .init(kind: approved[id]!.exemption.kind, expires: expires)) : nil
            case 10:
                // An exemption asked for and decided: approved until a day, or denied.
                let email = emails.randomElement(using: &random)!
                let kind = HealthStatus.ExemptionKind.allCases.randomElement(using: &random)!
                let asked = try await records.requestExemption(
                    campus: campus, user: users[email]!, kind: kind, note: "n", actor: "test", now: clock.read())
                let approve = Bool.random(using: &random)
                let expires = campus.localDate(at: clock.read()).adding(days: Int.random(in: 0...300, using: &random))
                try await records.decideExemption(
                    campus: campus, id: asked.id, approve: approve, expires: expires, reason: "", actor: "test", now: clock.read())
                if approve { approved[asked.id] = (email, .init(kind: kind, expires: expires)) }
            case 7:
                let email = emails.randomElement(using: &random)!
                let kind: HealthStatus.RestrictionKind = Bool.random(using: &random) ? .isolation : .quarantine
                let start = LocalDate(base, in: campus.zone).adding(days: Int.random(in: 0...20, using: &random))
                let until = start.adding(days: Int.random(in: 0...12, using: &random))
                let made = try await records.start(
                    campus: campus, email: email, kind: kind, startsOn: start, until: until, actor: "test", now: clock.read())
                isolations[made.id] = (email, kind, until, false)
            default:
                // A release: of an isolation by hand, or of a positive result's.
                if Bool.random(using: &random), let (id, isolation) = isolations.first(where: { !$0.value.released }) {
                    try await records.release(campus: campus, id: id, actor: "test")
                    isolations[id] = (isolation.email, isolation.kind, isolation.until, true)
                } else if let (specimen, found) = kept.first(where: {
                    $0.value.owner != nil && $0.value.result.detected && !$0.value.released
                }) {
                    let id: UUID = try await server.pool.query(
                        "SELECT id FROM test_results WHERE campus_id = \(campus.id) AND specimen_id = \(specimen)",
                        campus: campus.id.rawValue)[
                            0
                        ].decode("id")
                    try await records.release(campus: campus, id: id, actor: "test")
                    kept[specimen] = Kept(result: found.result, owner: found.owner, released: true, dismissed: false)
                }
            }
            // Each member's stored status against the model's, computed here from scratch.
            for email in emails {
                let mine = kept.values.filter { $0.owner == email }
                var expected: HealthStatus? = nil
                let handIsolations = isolations.values.filter { $0.email == email && !$0.released }
                let exemptions = approved.values.filter { $0.email == email }.map(\.exemption)
                let given = doses[email] ?? []
                if !mine.isEmpty || !handIsolations.isEmpty || !exemptions.isEmpty || !given.isEmpty {
                    var status = HealthStatus()
                    if let latest = mine.map(\.result).sorted(by: {
                        ($0.collectedAt, $0.resultedAt, $0.specimenID) > ($1.collectedAt, $1.resultedAt, $1.specimenID)
                    }).first {
                        status.latestTest = .init(
                            code: latest.testCode, detected: latest.detected, collected: latest.collectedAt, resulted: latest.resultedAt)
                    }
                    var ends: [(LocalDate, Int, HealthStatus.RestrictionKind)] = handIsolations.map {
                        ($0.until, $0.kind == .isolation ? 1 : 0, $0.kind)
                    }
                    for kept in mine where kept.result.detected && !kept.released {
                        ends.append((LocalDate(kept.result.collectedAt, in: campus.zone).adding(days: policy.isolationDays), 1, .isolation))
                    }
                    if let last = ends.sorted(by: { ($0.0, $0.1) > ($1.0, $1.1) }).first {
                        status.restriction = .init(kind: last.2, until: last.0)
                    }
                    status.exemption = exemptions.sorted { ($0.expires, $0.kind.rawValue) > ($1.expires, $1.kind.rawValue) }.first
                    if let last = given.map(\.date).max() {
                        // Complete on the first single-dose vaccine's day or the second day with a dose.
                        let days = Set(given.map(\.date)).sorted()
                        let single = given.filter { $0.cvx == "212" }.map(\.date).min()
                        let second = days.count >= 2 ? days[1] : nil
                        let completed = [single, second].compactMap { $0 }.min()
                        status.vaccination = .init(doses: days.count, lastDose: last, completed: completed)
                    }
                    expected = status
                }
                let row = try await server.pool.query(
                    "SELECT \(UserStore.health) FROM users u WHERE campus_id = \(campus.id) AND id = \(users[email]!)",
                    campus: campus.id.rawValue)
                let stored = HealthStatus.stored(try row[0].decode("health", as: PostgresJSON?.self))
                #expect(stored == expected, "seed \(seed), \(email)")
            }
        }
        // And recomputing everything from scratch changes nothing.
        #expect(try await records.recomputeAll(campus: campus) == 0)
        await server.pool.shutdown()
    }

    /// A laboratory may name a member by the campus's own id (a student number) instead of
    /// their email: in FHIR under the campus's `memberIdSystem`, in a CSV as a `member` without `@`.
    @Test func resultsNamingTheCampusIdMatchTheMemberWithIt() async throws {
        let clock = try TestClock("2026-11-20T16:00:00Z")
        let (server, _) = try await AttestationTests.setUp(clock: clock)
        let system = "https://id.example.edu/student"
        let campus = try await CampusStore(client: server.pool).set(
            slug: "north", key: "settings", value: #"{"memberIdSystem": "\#(system)"}"#, actor: "test")
        let users = UserStore(client: server.pool)
        let alice = try await users.add(
            campus: campus, email: "alice@example.edu", displayName: "Alice", memberID: "2026-0042", actor: "test")
        await #expect(throws: IdentityError.memberIDTaken("2026-0042")) {
            try await users.add(campus: campus, email: "bob@example.edu", displayName: "Bob", memberID: "2026-0042", actor: "test")
        }
        let lab = try await Self.labToken(server, campus)
        @Sendable func observation(specimen: String, system: String, value: String) -> String {
            Self.observation(specimen: specimen, email: "x@example.edu", detected: true)
                .replacingOccurrences(
                    of: #""system": "mailto", "value": "x@example.edu""#, with: #""system": "\#(system)", "value": "\#(value)""#)
        }
        try await server.run { api in
            let sent = try await api.send(
                .post, "/v1/campuses/north/lab/results", template: Self.lab, token: lab,
                json: Self.bundle([
                    observation(specimen: "ID-1", system: system, value: "2026-0042"),
                    observation(specimen: "ID-2", system: system, value: "2026-9999"),
                ]), contentType: "application/fhir+json")
            #expect(sent.status == 200, "\(sent.body)")
            #expect(sent.json["matched"] as? Int == 1 && sent.json["unmatched"] as? Int == 1)
            let other = try await api.send(
                .post, "/v1/campuses/north/lab/results", template: Self.lab, token: lab,
                json: observation(specimen: "ID-3", system: "https://id.other.edu", value: "2026-0042"),
                contentType: "application/fhir+json")
            #expect(other.status == 422 && other.problem.fields == ["Observation.subject.identifier.system"])
            #expect(other.body.contains(system), "the refusal names the campus's system: \(other.body)")
            try await Self.checkCampusIDResults(server, campus, alice)
        }
    }

    static func checkCampusIDResults(_ server: TestServer, _ campus: Campus, _ alice: User) async throws {
        let owner = try await server.pool.query(
            "SELECT specimen_id, user_id, subject FROM test_results WHERE campus_id = \(campus.id) ORDER BY specimen_id",
            campus: campus.id.rawValue)
        #expect(try owner.map { try $0.decode("subject", as: String.self) } == ["id:2026-0042", "id:2026-9999"])
        #expect(try owner[0].decode("user_id", as: UUID?.self) == alice.id.rawValue && owner[1].decode("user_id", as: UUID?.self) == nil)
        // A CSV's member without an @ is a campus id.
        let (rows, problems) = ResultsCSV.parse(
            Data(
                "specimen_id,member,collected_at,resulted_at,test_code,result\nC-1,2026-0042,2026-11-19,2026-11-20,94500-6,negative\nC-2,a b,2026-11-19,2026-11-20,94500-6,negative\n"
                    .utf8),
            zone: campus.zone, now: Date())
        #expect(rows.isEmpty && problems.map(\.field) == ["line 3: member"])
        let good = ResultsCSV.parse(
            Data(
                "specimen_id,member,collected_at,resulted_at,test_code,result\nC-1,2026-0042,2026-11-19,2026-11-20,94500-6,negative\n".utf8),
            zone: campus.zone, now: Date())
        #expect(good.results.map(\.subject) == ["id:2026-0042"])
        let receipt = try await HealthRecords(client: server.pool).receive(
            campus: campus, results: good.results, source: "import", actor: "test")
        #expect(receipt.matched == 1)
        // Erasing a member forgets the results still waiting under their campus id too.
        #expect(
            try await HealthRecords(client: server.pool).forgetWaiting(campus: campus, subject: "nobody@example.edu", memberID: "2026-9999")
                == 1)
    }

    /// Retention: what can no longer weigh on a badge and is older than the campus's
    /// retention goes; each member's latest test, an isolation that may still hold, pending
    /// exemptions and vaccination doses stay, and no status changes but by that.
    @Test func theDailyUpkeepPurgesHealthRecordsPastRetentionButNeverWhatSetsAStatus() async throws {
        let clock = try TestClock("2026-11-20T16:00:00Z")
        let (server, created) = try await AttestationTests.setUp(clock: clock)
        let campus = try await CampusStore(client: server.pool).set(slug: "north", key: "retention-days", value: "30", actor: "test")
        let alice = try await server.user("alice@example.edu", at: campus).user
        let bob = try await server.user("bob@example.edu", at: campus).user
        let records = HealthRecords(client: server.pool, kek: TestServer.kek)
        func result(_ specimen: String, _ subject: String, _ day: String, detected: Bool = false) throws -> LabResult {
            let collected = try #require(FHIRTime.parse(day + "T10:00:00Z", zone: .gmt))
            return LabResult(
                specimenID: specimen, subject: subject, testCode: "94500-6", detected: detected, collectedAt: collected,
                resultedAt: collected.addingTimeInterval(3600))
        }
        _ = try await records.receive(
            campus: campus,
            results: [
                try result("A-old", "alice@example.edu", "2026-06-01"),
                try result("A-old-positive", "alice@example.edu", "2026-07-01", detected: true),
                try result("A-recent", "alice@example.edu", "2026-09-01"), try result("A-latest", "alice@example.edu", "2026-11-10"),
                try result("B-only", "bob@example.edu", "2026-05-01"), try result("X-waiting", "nobody@example.edu", "2026-11-01"),
                try result("X-new", "nobody2@example.edu", "2026-11-19"),
            ], source: "test", actor: "test")
        _ = try await records.start(
            campus: campus, email: "bob@example.edu", kind: .quarantine, startsOn: LocalDate("2026-09-20"), until: LocalDate("2026-10-01"),
            actor: "test", now: clock.read())
        _ = try await records.start(
            campus: campus, email: "bob@example.edu", kind: .quarantine, startsOn: LocalDate("2026-11-18"), until: LocalDate("2026-11-25"),
            actor: "test", now: clock.read())
        let denied = try await records.requestExemption(
            campus: campus, user: alice.id, kind: .other, note: "n", actor: "test", now: clock.read())
        try await records.decideExemption(
            campus: campus, id: denied.id, approve: false, expires: nil, reason: "", actor: "test", now: clock.read())
        let ended = try await records.requestExemption(
            campus: campus, user: alice.id, kind: .medical, note: "n", actor: "test", now: clock.read())
        try await records.decideExemption(
            campus: campus, id: ended.id, approve: true, expires: LocalDate("2027-01-31"), reason: "", actor: "test", now: clock.read())
        try await records.decideExemption(
            campus: campus, id: ended.id, approve: false, expires: nil, reason: "", actor: "test", now: clock.read())
        let pending = try await records.requestExemption(
            campus: campus, user: bob.id, kind: .medical, note: "n", actor: "test", now: clock.read())
        // As if the waiting result, the denial and the ending were old.
        try await server.pool.query(
            "UPDATE test_results SET received_at = '2026-10-01T00:00:00Z' WHERE campus_id = \(campus.id) AND specimen_id = 'X-waiting'",
            campus: campus.id.rawValue)
        try await server.pool.query(
            "UPDATE exemptions SET decided_at = '2026-09-01T00:00:00Z' WHERE campus_id = \(campus.id) AND id IN (\(denied.id), \(ended.id))",
            campus: campus.id.rawValue)
        try await VaccinationTests.trustExampleIssuer(server, campus)
        let open = try await VaccinationTests.setIdentity("off", at: "north", server)
        _ = try await records.presentCards(campus: open, user: alice, cards: [try Cards.jws()], actor: "test", now: clock.read())
        func statuses() async throws -> [HealthStatus?] {
            try await server.pool.query(
                "SELECT \(UserStore.health) FROM users u WHERE campus_id = \(campus.id) ORDER BY email", campus: campus.id.rawValue
            ).map { HealthStatus.stored(try $0.decode("health", as: PostgresJSON?.self)) }
        }
        let before = try await statuses()

        let counts = try await RecordsUpkeep(records: records).run(campus: open, now: clock.read())
        #expect(counts == ["test_results_purged": 3, "isolations_purged": 1, "exemptions_purged": 2], "\(counts)")
        let left = try await server.pool.query(
            "SELECT specimen_id FROM test_results WHERE campus_id = \(campus.id) ORDER BY specimen_id", campus: campus.id.rawValue)
        #expect(try left.map { try $0.decode("specimen_id", as: String.self) } == ["A-latest", "A-recent", "B-only", "X-new"])
        let exemptions = try await records.exemptions(campus: campus, user: bob.id)
        #expect(exemptions.map(\.id) == [pending.id])
        #expect(try await records.exemptions(campus: campus, user: alice.id).isEmpty)
        let doses = try await records.doses(campus: campus, user: alice.id)
        #expect(doses.count == 2)
        // Alice's old positive result isolated her until 11 Jul: gone, her status keeps what still counts.
        let after = try await statuses()
        #expect(after[0]?.latestTest == before[0]?.latestTest && after[0]?.vaccination == before[0]?.vaccination)
        #expect(after[0]?.restriction == nil && before[0]?.restriction?.until == LocalDate("2026-07-11"))
        #expect(after[1] == before[1], "Bob's quarantine in force and his only test stay")
        #expect(try await records.recomputeAll(campus: open) == 0)
        #expect(try await RecordsUpkeep(records: records).run(campus: open, now: clock.read()).values.reduce(0, +) == 0)
        _ = created
        await server.pool.shutdown()
    }

    /// A rule whose `decide` is slow: the badge it would weigh.
    struct SlowDecide: BadgeRule {
        var version: String { "slow-decide-1" }
        func evaluate(_ input: BadgeRuleInput) throws -> BadgeDecision {
            BadgeDecision(color: .green, reason: "answers", validUntil: input.endOfDay)
        }
        func decide(_ input: HealthInput) -> BadgeDecision? {
            Thread.sleep(forTimeInterval: 0.5)
            return BadgeDecision(color: .green, reason: "slow", validUntil: input.endOfDay)
        }
    }

    /// `decide` runs within the rule budget, as `evaluate` does: past it the badge is the
    /// platform's default (red while an isolation lasts), counted as an overrun.
    @Test func aSlowDecideGivesThePlatformsDefaultWithinTheBudget() async throws {
        var registry = PluginRegistry.builtin
        registry.registerBadgeRule(id: "slow-decide") { _, _ in SlowDecide() }
        let clock = try TestClock("2026-11-20T16:00:00Z")
        let (server, campus) = try await AttestationTests.setUp(clock: clock, registry: registry)
        try await server.pool.query(
            "INSERT INTO campus_plugins (campus_id, kind, plugin_id) VALUES (\(campus.id), 'badge-rule', 'slow-decide')",
            campus: campus.id.rawValue)
        let (_, member) = try await server.user("alice@example.edu", at: campus)
        _ = try await HealthRecords(client: server.pool).start(
            campus: campus, email: "alice@example.edu", kind: .quarantine, startsOn: nil, until: LocalDate("2026-11-25"), actor: "test",
            now: clock.read())
        try await server.run { api in
            // Red and the platform's reason, not the rule's late green: the budget answered.
            let badge = try await api.send(.get, "/v1/campuses/north/me/badge", template: Self.badge, token: member)
            #expect(
                badge.json["color"] as? String == "red" && badge.json["reason"] as? String == "Quarantine until 25 Nov", "\(badge.body)")
            let metrics = try await api.send(.get, "/metrics", template: "/metrics").body
            #expect(metric(metrics, #"attest_badge_rule_failures_total{reason="overran"}"#) == 1)
        }
    }

    @Test func resultsCSVIsReadStrictlyAndNamesEachProblemByLineAndColumn() throws {
        let zone = try #require(TimeZone(identifier: "America/New_York"))
        let good = """
            specimen_id,member,collected_at,resulted_at,test_code,result
            S-1,Alice@Example.edu,2021-05-01T09:30:00-04:00,2021-05-02T08:00:00Z,94500-6,not detected
            "S-2, second",bob@example.edu,2021-05-01,2021-05-02T08:00:00.250Z,94558-4,POSITIVE\r
            S-3,carol@example.edu,2021-05-01T09:30:00Z,2021-05-02T08:00:00+02:00,95209-3,260373001

            """
        // The server's clock: S-1's result 8 hours ahead of it is inside the day's leeway.
        let now = Date(timeIntervalSince1970: 1_619_913_600)  // 2021-05-02T00:00:00Z
        let (results, problems) = ResultsCSV.parse(Data(good.utf8), zone: zone, now: now)
        #expect(problems.isEmpty, "\(problems)")
        // A spreadsheet's "CSV UTF-8" starts with a byte order mark: the same file.
        let marked = ResultsCSV.parse(Data(("\u{FEFF}" + good).utf8), zone: zone, now: now)
        #expect(marked.problems.isEmpty && marked.results == results, "\(marked.problems)")
        #expect(results.map(\.specimenID) == ["S-1", "S-2, second", "S-3"])
        #expect(results.map(\.subject) == ["alice@example.edu", "bob@example.edu", "carol@example.edu"])
        #expect(results.map(\.detected) == [false, true, true])
        #expect(results[0].collectedAt == Date(timeIntervalSince1970: 1_619_875_800))
        #expect(results[1].collectedAt == Date(timeIntervalSince1970: 1_619_841_600), "a date alone: midnight in the campus's zone")
        #expect(results[1].resultedAt == Date(timeIntervalSince1970: 1_619_942_400.25))
        #expect(results[2].resultedAt == Date(timeIntervalSince1970: 1_619_935_200))

        let bad = """
            specimen_id,member,collected_at,resulted_at,test_code,result
            S-1,alice smith,2021-02-30,2021-05-02T08:00:00Z,94500-6,maybe
            S-2,bob@example.edu,2021-05-01
            S-3,carol@example.edu,2021-05-01T09:30,2021-05-02T25:00:00Z,1-1,detected
            S-4,dan@example.edu,2012-05-01,2012-05-02,94500-6,detected
            S-5,eve@example.edu,2021-05-04T00:00:01Z,2021-05-04T00:00:01Z,94500-6,detected
            S-6,fay@example.edu,2021-05-01T09:30:00Z,2021-04-29T09:30:00Z,94500-6,detected
            """
        let refused = ResultsCSV.parse(Data(bad.utf8), zone: zone, now: now)
        #expect(refused.results.isEmpty)
        #expect(
            refused.problems.map(\.field) == [
                "line 2: member", "line 2: collected_at", "line 2: result", "line 3", "line 4: collected_at", "line 4: resulted_at",
                "line 4: test_code", "line 6: collected_at", "line 6: resulted_at", "line 7: resulted_at",
            ])
        let messages = refused.problems.map(\.message)
        #expect(messages.dropFirst(7).first?.contains("is in the future") == true, "\(messages)")
        #expect(messages.dropFirst(9).first?.contains("before the specimen") == true, "\(messages)")
        #expect(ResultsCSV.parse(Data("a,b\n".utf8), zone: zone, now: now).problems.map(\.field) == ["line 1"])
        let semicolons = ResultsCSV.parse(
            Data(
                "specimen_id;member;collected_at;resulted_at;test_code;result\nS-1;a@example.edu;2021-05-01;2021-05-01;94500-6;detected\n"
                    .utf8),
            zone: zone, now: now)
        #expect(semicolons.problems.map(\.field) == ["line 1", "line 2"])
        #expect(
            semicolons.problems.allSatisfy {
                $0.message.hasSuffix("(the line is separated by semicolons: save the file as CSV separated by commas)")
            })
        #expect(ResultsCSV.parse(Data(), zone: zone, now: now).problems.map(\.field) == ["file"])
        #expect(ResultsCSV.parse(Data("\"unclosed".utf8), zone: zone, now: now).problems.first?.field == "line 1")
    }

    @Test func attestResultsImportStoresAFileAllOrNoneAndTokenIssueMakesALabToken() async throws {
        let cli = try await AdminCLITests.cli()
        #expect(
            try await cli.run("campus", "create", "north", "--name", "North", "--timezone", "UTC", "--email-domain", "example.edu").status
                == 0)
        #expect(try await cli.run("user", "add", "north", "alice@example.edu").status == 0)
        let directory = FileManager.default.temporaryDirectory.appending(path: "attest-results-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appending(path: "results.csv")
        try Data(
            """
            specimen_id,member,collected_at,resulted_at,test_code,result
            S-1,alice@example.edu,2026-11-20T09:30:00Z,2026-11-20T15:00:00Z,94500-6,detected
            S-2,stranger@example.org,2026-11-20,2026-11-20T15:00:00Z,94500-6,not detected

            """.utf8
        ).write(to: file)
        let imported = try await cli.run("results", "import", "north", file.path, "--json")
        #expect(imported.status == 0, "\(imported.stderr)")
        let outcome = try JSONSerialization.jsonObject(with: Data(imported.stdout.utf8)) as? [String: Int]
        #expect(outcome == ["received": 2, "matched": 1, "unmatched": 1, "corrected": 0, "statusesChanged": 1])

        try Data("specimen_id,member,collected_at,resulted_at,test_code,result\nS-1,alice@example.edu,x,y,94500-6,detected\n".utf8)
            .write(to: file)
        let refused = try await cli.run("results", "import", "north", file.path)
        #expect(refused.status == 1 && refused.stderr.contains("line 2: collected_at") && refused.stderr.contains("nothing was stored"))

        // Erasing a member takes their results with them, those still waiting under their email too.
        #expect(try await cli.run("user", "add", "north", "stranger@example.edu").status == 0)
        try Data(
            "specimen_id,member,collected_at,resulted_at,test_code,result\nS-3,carol@example.edu,2026-11-20,2026-11-21,94500-6,detected\n"
                .utf8
        ).write(to: file)
        #expect(try await cli.run("results", "import", "north", file.path).status == 0)
        #expect(try await cli.run("user", "add", "north", "carol@example.edu").status == 0)
        let owner = TestDatabase.client(database: cli.database, role: nil, maxConnections: 1)
        func specimens() async throws -> [String] {
            try await owner.query("SELECT specimen_id FROM test_results ORDER BY specimen_id").map { try $0.decode("specimen_id") }
        }
        #expect(try await specimens() == ["S-1", "S-2", "S-3"])
        #expect(try await cli.run("user", "erase", "north", "alice@example.edu", "--yes").status == 0)
        let erased = try await cli.run("user", "erase", "north", "carol@example.edu", "--yes")
        #expect(erased.status == 0 && erased.stdout.contains("1 unmatched test results"), "\(erased.stdout)")
        #expect(try await specimens() == ["S-2"])
        await owner.shutdown()

        let token = try await cli.run("token", "issue", "north", "--lab", "county-lab")
        #expect(token.status == 0 && SessionStore.isWellFormed(token.stdout.trimmingCharacters(in: .whitespacesAndNewlines)))
        let unnamed = try await cli.run("token", "issue", "north", "--lab", " ")
        #expect(unnamed.status != 0 && unnamed.stderr.contains("--lab names the laboratory"), "\(unnamed.stderr)")
        let neither = try await cli.run("token", "issue", "north")
        #expect(neither.status != 0 && neither.stderr.contains("or --lab <name>"), "\(neither.stderr)")
    }
}
