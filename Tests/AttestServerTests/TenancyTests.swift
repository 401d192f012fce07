import AttestPlugins
import AttestPluginsTesting
import AttestTestSupport
import Foundation
import HTTPTypes
import Identity
import Journal
import Notifications
import Surveys
import Tenancy
import Testing

@testable import AttestAPI
@testable import AttestServer
@testable import AttestWeb

@Suite("Tenancy")
struct TenancyTests {
    /// Every place the system's tz database names is a campus's zone: ICU's list of zones lacks
    /// some of the database's own names (Asia/Kolkata, India's), which were refused. What is
    /// not a place is still refused: abbreviations, offsets, `Etc/` zones, names of another case.
    @Test func everyPlaceOfTheTimeZoneDatabaseIsACampusZone() throws {
        for zone in ["Asia/Kolkata", "America/New_York", "America/Argentina/Buenos_Aires", "Europe/Kyiv", "UTC"] {
            #expect(CampusStore.isKnownTimeZone(zone), "\(zone)")
        }
        for zone in [
            "EST", "GMT+2", "+05:00", "Etc/GMT+5", "america/new_york", "America/New_York ", "Mars/Olympus", "Asia/", "/Kolkata",
            "Asia//Kolkata", "Asia/Kolkata/../x", "",
        ] {
            #expect(!CampusStore.isKnownTimeZone(zone), "\(zone)")
        }
        // The database's zones (its `Z` lines), as Debian's tzdata ships them.
        let table = try String(contentsOfFile: "/usr/share/zoneinfo/tzdata.zi", encoding: .utf8)
        let places = table.split(separator: "\n").compactMap { line -> String? in
            let fields = line.split(separator: " ")
            guard fields.count > 1, fields[0] == "Z", fields[1].contains("/"), !fields[1].hasPrefix("Etc/") else { return nil }
            return String(fields[1])
        }
        #expect(places.count > 300)
        #expect(places.filter { !CampusStore.isKnownTimeZone($0) } == [])
    }
    /// DESIGN §9 and issue 33's isolation matrix, generated from /openapi.yaml so a new route is in it:
    /// every campus route at north × {no token, south's token, an unknown slug, north's own
    /// token, north's own token carrying south's cursors and badge token}. Each answer is the
    /// documented one (401, 404, or what north's own request gets: never 401/403/404 and
    /// never a 5xx), and no body names anything of south: its slug, its people's addresses
    /// and ids, its attestations' ids.
    @Test func theIsolationMatrixHoldsForEveryRoute() async throws {
        let clock = try TestClock("2026-11-19T14:00:00Z")
        // Every route is tried with three tokens north does not know: more than one address's
        // allowance of unknown tokens (100 at once), which RateLimitTests tries on its own.
        var configuration = ServerConfiguration.loopback
        configuration.rateLimits.unknownTokensPerAddress = .init(burst: 1_000, perMinute: 6_000)
        let server = try await TestServer.make(clock: clock.read, configuration: configuration)
        let north = try await server.campus("north")
        _ = try await QuestionnaireStore(client: server.pool).publish(campus: north, draft: AttestationTests.draft, actor: "test")
        let south = try await server.campus("south")
        _ = try await QuestionnaireStore(client: server.pool).publish(campus: south, draft: AttestationTests.draft, actor: "test")
        let (_, staff) = try await server.user("n-staff@example.edu", at: north, roles: [.screener, .healthOfficer, .admin])
        let (southStaffUser, southStaff) = try await server.user(
            "s-staff@example.edu", at: south, roles: [.screener, .healthOfficer, .admin])
        let (southMemberUser, southMember) = try await server.user("s-member@example.edu", at: south)
        // Laboratories' tokens: a machine's, good for sending results at its own campus only.
        let northLab = try await RecordsTests.labToken(server, north), southLab = try await RecordsTests.labToken(server, south)
        let knownMarkers: Set<String> = [
            "south", "s-staff@example.edu", "s-member@example.edu", south.id.rawValue.uuidString.lowercased(),
            southStaffUser.id.rawValue.uuidString.lowercased(), southMemberUser.id.rawValue.uuidString.lowercased(),
        ]

        var documented: [(method: HTTPRequest.Method, template: String, secured: Bool)] = []
        for path in OpenAPIDocument.value["paths"]?.members ?? [] where path.key.hasPrefix("/v1/campuses/{campus}/") {
            for operation in path.value.members where operation.key != "parameters" {
                documented.append(
                    (try #require(HTTPRequest.Method(operation.key.uppercased())), path.key, operation.value["security"] != nil))
            }
        }
        let operations = documented
        #expect(operations.count >= 14)

        try await server.run { api in
            var southMarkers = knownMarkers
            // South's history: two days of submissions by two people, fevers for follow-ups,
            // so each list has a second page and so a cursor.
            for day in 0..<2 {
                if day == 1 { clock.advance(by: 86_400) }
                for token in [southStaff, southMember] {
                    let stored = try await api.send(
                        .post, "/v1/campuses/south/attestations", template: AttestationTests.path, token: token,
                        json: AttestationTests.body(#"{"fever": true, "cough": true}"#))
                    #expect(stored.status == 201)
                    if let id = stored.json["id"] as? String { southMarkers.insert(id.lowercased()) }
                }
            }
            let page = try await api.send(
                .get, "/v1/campuses/south/me/attestations?limit=1", template: "/v1/campuses/{campus}/me/attestations", token: southMember)
            let southHistoryCursor = try #require(page.json["nextCursor"] as? String, "\(page.body)")
            let followUps = try await api.send(
                .get, "/v1/campuses/south/admin/follow-ups?date=2026-11-20&limit=1", template: "/v1/campuses/{campus}/admin/follow-ups",
                token: southStaff)
            let southFollowUpCursor = try #require(followUps.json["nextCursor"] as? String, "\(followUps.body)")
            // South's member's journal entry, with a recording: its id is tried at north below.
            let southEntry = try await server.services.journal.create(
                campus: south.id, user: southMemberUser.id,
                JournalDraft(date: LocalDate("2026-11-20")!, title: "south-journal-marker", text: "south-journal-text"), at: clock.read())
            try await server.services.journal.putAudio(
                campus: south.id, user: southMemberUser.id, id: southEntry.id, type: .ogg, bytes: JournalTests.recording(.ogg))
            let southEntryID = southEntry.id.uuidString.lowercased()
            // And a link to it: its token opens nothing at north.
            let southShareToken = try await JournalShareStore(client: server.pool).create(
                campus: south.id, user: southMemberUser.id, actor: "test", from: LocalDate("2026-11-01")!, to: LocalDate("2026-11-30")!,
                seconds: 86_400, now: clock.read()
            ).token
            southMarkers.formUnion([southEntryID, "south-journal-marker", "south-journal-text"])
            // And a message's unsubscribe link: worth nothing at north.
            let southUnsubscribe = UnsubscribeTokens(campusSecret: try await server.services.badges.keys.subjectKey(campus: south.id))
                .token(
                    campus: south.id, user: southMemberUser.id, channel: .email)
            let badge = try await api.send(.get, "/v1/campuses/south/me/badge", template: BadgeTests.badgePath, token: southMember)
            let southBadge = try #require(badge.json["token"] as? String)
            // And a photo of it, for the door's scan.
            let southBadgePhoto = BadgeScanTests.png(try #require(QRCode.modules(southBadge)))
            // North's own: one submission, so its lists are not empty either.
            let own = try await api.send(
                .post, "/v1/campuses/north/attestations", template: AttestationTests.path, token: staff,
                json: AttestationTests.body(#"{"fever": true, "cough": false}"#))
            #expect(own.status == 201)

            var cells = 0
            func check(_ reply: APIClient.Reply, _ what: String, expected: (Int) -> Bool) {
                cells += 1
                #expect(expected(reply.status), "\(what): \(reply.status) \(reply.body.prefix(300))")
                let body = reply.body.lowercased()
                for marker in southMarkers where body.contains(marker) {
                    Issue.record("\(what) shows south's \(marker): \(reply.body.prefix(300))")
                }
            }
            for (method, template, secured) in operations {
                let atNorth = template.replacingOccurrences(of: "{campus}", with: "north").replacingOccurrences(
                    of: "{id}", with: southEntryID
                )
                .replacingOccurrences(of: "{token}", with: southShareToken)
                let unsubscribe = template.hasSuffix("/unsubscribe")
                let names = template.contains("{id}") || template.contains("{token}") || unsubscribe
                let query =
                    unsubscribe
                    ? "?token=\(southUnsubscribe)" : method == .get ? "?from=2026-11-20&to=2026-11-20&date=2026-11-20&limit=5" : ""
                var body: String?
                var photo: [UInt8]?
                var type = "application/json"
                if method == .patch { body = #"{"title": "taken over"}"# }
                if method == .put { body = #"{"journalKeepDays": null}"# }
                if method == .post {
                    if template.hasSuffix("/attestations") {
                        body = AttestationTests.body(AttestationTests.healthy)
                    } else if template.hasSuffix("/badges/verify") {
                        body = #"{"token": "\#(southBadge)"}"#
                    } else if template.hasSuffix("/badges/scan") {
                        (photo, type) = (southBadgePhoto, "image/png")
                    } else if template.hasSuffix("/lab/results") {
                        body = RecordsTests.observation(specimen: "S-south", email: "s-member@example.edu", detected: true)
                    } else {
                        body = #"{"idToken": "not.a.token"}"#
                    }
                }
                let name = "\(method) \(template)"
                // A laboratory's route opens with a laboratory's token only.
                let lab = template.hasSuffix("/lab/results")
                // No token, south's token, and elsewhere north's own laboratory's: 401 wherever a session is needed.
                let others: [(String, String?)] =
                    [("no token", nil), ("south's token", lab ? southLab : southStaff)] + (lab ? [] : [("north's lab token", northLab)])
                for (who, token) in others {
                    let reply = try await api.send(
                        method, atNorth + query, template: template, token: token, json: body, bytes: photo, contentType: type)
                    check(reply, "\(name) with \(who)") { secured ? $0 == 401 : $0 < 500 }
                }
                // An unknown campus: 404, whoever asks.
                let unknown = try await api.send(
                    method,
                    template.replacingOccurrences(of: "{campus}", with: "nowhere").replacingOccurrences(of: "{id}", with: southEntryID)
                        .replacingOccurrences(of: "{token}", with: southShareToken) + query,
                    template: template, token: staff, json: body, bytes: photo, contentType: type)
                check(unknown, "\(name) at an unknown campus") { $0 == 404 }
                // North's own staff: answered (signing in refuses the made-up ID token with 401;
                // signing out ends the session: it goes last).
                if template.hasSuffix("/sessions/current") { continue }
                if lab {
                    let staffReply = try await api.send(method, atNorth, template: template, token: staff, json: body)
                    check(staffReply, "\(name) with north's staff") { $0 == 401 }
                }
                let ownReply = try await api.send(
                    method, atNorth + query, template: template, token: lab ? northLab : staff, json: body, bytes: photo, contentType: type)
                let refusesMadeUpToken = template.hasSuffix("/sessions")
                check(ownReply, "\(name) with north's own token") {
                    // South's member's entry or episode is nobody's at north (a body that is wrong anyway is refused first).
                    if names { return $0 == 404 || $0 == 415 || $0 == 422 }
                    return refusesMadeUpToken ? (400..<500).contains($0) : $0 < 400 || $0 == 409 || $0 == 422
                }
            }
            // South's cursors and badge token, carried by north's own staff: positions and a
            // signature worth nothing here; nothing of south comes back.
            let carried: [(String, String, String?)] = [
                ("/v1/campuses/north/me/attestations?limit=1&cursor=\(southHistoryCursor)", "/v1/campuses/{campus}/me/attestations", nil),
                (
                    "/v1/campuses/north/admin/follow-ups?date=2026-11-20&limit=1&cursor=\(southFollowUpCursor)",
                    "/v1/campuses/{campus}/admin/follow-ups", nil
                ),
                ("/v1/campuses/north/badges/verify", "/v1/campuses/{campus}/badges/verify", #"{"token": "\#(southBadge)"}"#),
            ]
            for (path, template, body) in carried {
                let reply = try await api.send(body == nil ? .get : .post, path, template: template, token: staff, json: body)
                check(reply, "\(path) with south's cursor or badge") { $0 == 200 || $0 == 422 }
                if template.hasSuffix("/verify") { #expect(reply.json["valid"] as? Bool == false, "\(reply.body)") }
            }
            let scanned = try await api.send(
                .post, "/v1/campuses/north/badges/scan", template: BadgeScanTests.scanPath, token: staff, bytes: southBadgePhoto,
                contentType: "image/png")
            check(scanned, "a photo of south's badge scanned at north") { $0 == 200 }
            #expect(scanned.json["valid"] as? Bool == false, "\(scanned.body)")
            let signOut = try await api.send(
                .delete, "/v1/campuses/north/sessions/current", template: "/v1/campuses/{campus}/sessions/current", token: staff)
            check(signOut, "signing out at north") { $0 == 204 || $0 == 200 }
            #expect(cells >= operations.count * 4)

            // Nothing tried at north stored anything there but north's own, nor ended south's session.
            #expect(try await AttestationTests.count(server, north) == 1)
            let me = try await api.send(.get, "/v1/campuses/south/me", template: "/v1/campuses/{campus}/me", token: southStaff)
            #expect(me.status == 200)
            // One campus's published badge keys verify none of the other's badges.
            let northKeys = try await api.send(.get, "/v1/campuses/north/badge-keys", template: BadgeTests.keysPath)
            let southKeys = try await api.send(.get, "/v1/campuses/south/badge-keys", template: BadgeTests.keysPath)
            func keyIDs(_ reply: APIClient.Reply) -> Set<String> {
                Set(((reply.json["keys"] as? [[String: Any]]) ?? []).compactMap { $0["kid"] as? String })
            }
            #expect(!keyIDs(northKeys).isEmpty && !keyIDs(southKeys).isEmpty)
            #expect(keyIDs(northKeys).isDisjoint(with: keyIDs(southKeys)))
        }
    }
}
