import AttestPlugins
import AttestPluginsTesting
import AttestPostgres
import AttestTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Identity
import Notifications
import Tenancy
import Testing

@testable import AttestAPI
@testable import AttestServer
@testable import AttestWeb
@testable import Surveys

/// Visitors (issue 65, DESIGN §12): a visit registered over the API, its code read from a real
/// SMTP server's inbox (aiosmtpd) and parsed by Python's `email` package, the guest's pass and
/// what it opens and does not, the GUEST badge and its `guest` claim at the door, the host told,
/// the limits, the lockout, erasure and the purge, the kiosk and the poster.
@Suite("Guests")
struct GuestTests {
    /// A campus open to guests whose codes go through a loopback SMTP server, with its host.
    struct Setup {
        let server: TestServer
        let smtp: SMTPTestServer
        let north: Campus
        let alice: User
        let screenerToken: String
    }

    /// A server and its campus, given to `body` with an SMTP test server stopped in the test's
    /// own flow, passed or failed (a task started by a `defer` may never run before the test
    /// process ends, leaving the server running).
    static func withSetUp(
        clock: TestClock? = nil, cap: Int? = nil, visitsPerAddress: Int = 10, _ body: (Setup) async throws -> Void
    ) async throws {
        try await SMTPTestServer.running("plain") { smtp in
            try await body(try await setUp(smtp: smtp, clock: clock, cap: cap, visitsPerAddress: visitsPerAddress))
        }
    }

    static func setUp(smtp: SMTPTestServer, clock: TestClock?, cap: Int?, visitsPerAddress: Int) async throws -> Setup {
        var now: @Sendable () -> Date = { Date() }
        if let clock { now = clock.read }
        let server = try await TestServer.make(
            clock: now,
            configuration: ServerConfiguration(
                rateLimits: RateLimits(guestVisitsPerAddress: visitsPerAddress), outbound: .init(allowedHosts: ["127.0.0.1"])))
        var north = try await server.campus("north")
        let alice = try await UserStore(client: server.pool).add(
            campus: north, email: "alice@example.edu", displayName: "Alice Member", actor: "test")
        _ = try await QuestionnaireStore(client: server.pool).publish(campus: north, draft: DemoQuestionnaire.draft, actor: "test")
        try await Self.sendCodes(of: north, to: smtp, server: server)
        north = try await CampusStore(client: server.pool).set(slug: "north", key: "guests", value: "on", actor: "test")
        if let cap {
            north = try await CampusStore(client: server.pool).set(slug: "north", key: "guest-daily-cap", value: "\(cap)", actor: "test")
        }
        let (_, screenerToken) = try await server.user("sam@example.edu", at: north, roles: [.screener])
        return Setup(server: server, smtp: smtp, north: north, alice: alice, screenerToken: screenerToken)
    }

    /// The campus's `email` channel, plain SMTP to the loopback server (allowed by name).
    static func sendCodes(of campus: Campus, to smtp: SMTPTestServer, server: TestServer) async throws {
        guard case .object(var settings) = EmailChannelTests.settings(smtp, security: "none") else { throw TestFailure("settings") }
        settings["host"] = .string("127.0.0.1")
        try await CampusPluginStore(client: server.pool).enable(
            campus: campus, kind: .sink, id: "email", settings: try MemberChannels.prepare(id: "email", settings: .object(settings)),
            actor: "test")
    }

    static func register(
        _ api: APIClient, name: String = "Vera Visitor", email: String = "vera@visitor.example.org", host: String = "alice member",
        headers: HTTPFields = [:]
    )
        async throws -> APIClient.Reply
    {
        try await api.send(
            .post, "/v1/campuses/north/guests/visits", template: "/v1/campuses/{campus}/guests/visits",
            json: #"{"name": "\#(name)", "email": "\#(email)", "host": "\#(host)"}"#, headers: headers)
    }

    static func verify(_ api: APIClient, visit: String, code: String) async throws -> APIClient.Reply {
        try await api.send(
            .post, "/v1/campuses/north/guests/visits/\(visit)/verify", template: "/v1/campuses/{campus}/guests/visits/{id}/verify",
            json: #"{"code": "\#(code)"}"#)
    }

    /// The code of the last message to `address`, as Python's `email` package reads the message.
    static func code(_ smtp: SMTPTestServer, to address: String) async throws -> (code: String, read: EmailChannelTests.Read) {
        let messages = try smtp.received().filter { $0.to == [address] }
        let read = try #require(try await EmailChannelTests.read(Array(messages.suffix(1)), dkimRecord: nil).first)
        let digits = read.subject.prefix(6)
        #expect(digits.count == 6 && digits.allSatisfy(\.isNumber), "\(read.subject)")
        return (String(digits), read)
    }

    /// The guests' own questionnaire: one question, `fever`.
    static func publishGuestSurvey(_ server: TestServer, at campus: Campus) async throws {
        _ = try await QuestionnaireStore(client: server.pool).publish(
            campus: campus,
            draft: try QuestionnaireRules.parse(
                Data(
                    #"{"title": "Visitor check", "questions": [{"id": "fever", "kind": "boolean", "prompt": "Do you have a fever?", "symptom": true}]}"#
                        .utf8)), actor: "test", audience: .guest)
    }

    /// The claims of a badge token (its signature checked by the server, not here).
    static func claims(_ token: String) throws -> [String: Any] {
        let parts = token.split(separator: ".")
        let payload = try #require(Base64URLTestDecode(String(parts[1])))
        return try #require(try JSONSerialization.jsonObject(with: payload) as? [String: Any])
    }

    @Test func aVisitorChecksInWithTheEmailedCodeAndShowsAGuestBadgeAtTheDoor() async throws {
        try await Self.withSetUp { setup in
            let (server, north) = (setup.server, setup.north)
            try await Self.publishGuestSurvey(server, at: north)
            let (_, officerToken) = try await server.user("hana@example.edu", at: north, roles: [.healthOfficer])
            let south = try await server.campus("south")
            let (_, southScreener) = try await server.user("sue@example.edu", at: south, roles: [.screener])
            try await server.run { api in
                // A host nobody is: a 422 naming the field, nothing sent.
                let nobody = try await Self.register(api, host: "Zed Nobody")
                #expect(nobody.status == 422 && nobody.problem.fields == ["host"], "\(nobody.body)")
                // 150 letters each with a combining mark: 150 Characters, 300 code points (the column's measure).
                let marked = String(repeating: "e\u{301}", count: 150)
                let long = try await Self.register(api, name: marked)
                #expect(long.status == 422 && long.problem.fields == ["name"], "\(long.body)")
                let bad = try await Self.register(api, name: "", email: "not-an-address")
                #expect(bad.status == 422 && Set(bad.problem.fields) == ["name", "email"], "\(bad.body)")
                #expect(try setup.smtp.received().isEmpty)

                let created = try await Self.register(api)
                #expect(created.status == 201, "\(created.body)")
                let visit = try #require(created.json["id"] as? String)
                let (code, read) = try await Self.code(setup.smtp, to: "vera@visitor.example.org")
                #expect(read.defects.isEmpty && read.types.contains("text/plain") && read.types.contains("text/html"))
                #expect(read.text.contains("Alice Member's guest at North") && read.text.contains("/c/north/visit/erase?visit=\(visit)"))
                #expect(read.unsubscribe == nil, "a code is no list")
                // The code is stored only as a keyed hash.
                let stored = try await server.pool.query(
                    "SELECT code_hash, email FROM guest_visits WHERE campus_id = \(north.id)", campus: north.id.rawValue)
                #expect(try stored[0].decode("code_hash", as: Data?.self)?.count == 32)

                let wrong = try await Self.verify(api, visit: visit, code: code == "000000" ? "111111" : "000000")
                #expect(wrong.status == 422 && wrong.problem.fields == ["code"] && wrong.body.contains("4 tries left"), "\(wrong.body)")
                let pass = try await Self.verify(api, visit: visit, code: code)
                #expect(pass.status == 200, "\(pass.body)")
                let token = try #require(pass.json["token"] as? String)
                #expect(token.hasPrefix("guest.") && (pass.json["expiresAt"] as? String) != nil)
                let again = try await Self.verify(api, visit: visit, code: code)
                #expect(again.status == 409, "\(again.body)")

                // The pass opens the guests' survey, the submission and the badge; nothing else.
                let survey = try await api.send(.get, "/v1/campuses/north/survey", template: "/v1/campuses/{campus}/survey", token: token)
                #expect(survey.status == 200 && survey.json["title"] as? String == "Visitor check", "\(survey.body)")
                let version = try #require(survey.json["version"] as? Int)
                for (path, template) in [
                    ("/v1/campuses/north/me/attestations", "/v1/campuses/{campus}/me/attestations"),
                    ("/v1/campuses/north/me/journal", "/v1/campuses/{campus}/me/journal"),
                    ("/v1/campuses/north/me/records", "/v1/campuses/{campus}/me/records"),
                    ("/v1/campuses/north/me", "/v1/campuses/{campus}/me"),
                ] {
                    let refused = try await api.send(.get, path, template: template, token: token)
                    #expect(refused.status == 401, "\(path): \(refused.status) \(refused.body)")
                    // Told what the pass is for, not to sign in (it is a valid credential, of the wrong kind).
                    #expect(
                        refused.json["detail"] as? String == "A guest's pass opens the survey and the guest's badge, nothing else.",
                        "\(path)")
                    #expect(refused.headers[.wwwAuthenticate]?.contains("insufficient_scope") == true, "\(path)")
                }
                let asScreener = try await api.send(
                    .post, "/v1/campuses/north/badges/verify", template: "/v1/campuses/{campus}/badges/verify", token: token,
                    json: #"{"token": "x"}"#)
                #expect(asScreener.status == 401, "\(asScreener.body)")
                let elsewhere = try await api.send(
                    .get, "/v1/campuses/south/survey", template: "/v1/campuses/{campus}/survey", token: token)
                #expect(elsewhere.status == 401, "a pass from north is nothing at south: \(elsewhere.body)")

                let gray = try await api.send(.get, "/v1/campuses/north/me/badge", template: "/v1/campuses/{campus}/me/badge", token: token)
                #expect(gray.json["color"] as? String == "gray", "\(gray.body)")
                let missing = try await api.send(
                    .post, "/v1/campuses/north/attestations", template: "/v1/campuses/{campus}/attestations", token: token,
                    json: #"{"surveyVersion": \#(version), "answers": {}}"#)
                #expect(missing.status == 422 && missing.problem.fields == ["answers.fever"], "\(missing.body)")
                let answered = try await api.send(
                    .post, "/v1/campuses/north/attestations", template: "/v1/campuses/{campus}/attestations", token: token,
                    json: #"{"surveyVersion": \#(version), "answers": {"fever": true}}"#)
                #expect(answered.status == 201, "\(answered.body)")
                // One symptom: yellow under the standard rule.
                #expect(
                    (answered.json["badge"] as? [String: Any])?["color"] as? String == "yellow" && answered.json["id"] as? String == visit)
                let twice = try await api.send(
                    .post, "/v1/campuses/north/attestations", template: "/v1/campuses/{campus}/attestations", token: token,
                    json: #"{"surveyVersion": \#(version), "answers": {"fever": false}}"#)
                #expect(twice.status == 409, "\(twice.body)")

                let badge = try await api.send(
                    .get, "/v1/campuses/north/me/badge", template: "/v1/campuses/{campus}/me/badge", token: token)
                #expect(badge.json["color"] as? String == "yellow", "\(badge.body)")
                let badgeToken = try #require(badge.json["token"] as? String)
                let claims = try Self.claims(badgeToken)
                #expect(claims["guest"] as? String == "Alice Member" && claims.count == 7, "\(claims)")
                let door = try await api.send(
                    .post, "/v1/campuses/north/badges/verify", template: "/v1/campuses/{campus}/badges/verify", token: setup.screenerToken,
                    json: #"{"token": "\#(badgeToken)"}"#)
                #expect(
                    door.status == 200 && door.json["valid"] as? Bool == true && door.json["guest"] as? String == "Alice Member",
                    "\(door.body)"
                )
                let otherDoor = try await api.send(
                    .post, "/v1/campuses/south/badges/verify", template: "/v1/campuses/{campus}/badges/verify", token: southScreener,
                    json: #"{"token": "\#(badgeToken)"}"#)
                #expect(otherDoor.json["valid"] as? Bool == false, "\(otherDoor.body)")

                // The host hears of it through their own channel; health officers see the guest.
                let events = try await server.pool.query(
                    "SELECT payload FROM notification_outbox WHERE campus_id = \(north.id) AND event = 'guest.arrived'",
                    campus: north.id.rawValue)
                #expect(events.count == 1)
                _ = try await server.services.outbox.runOnce()
                // On the wall clock past the campus's reminder time, Alice's daily reminder goes out
                // in the same round: the guest's message is the one counted here.
                let toHost = try await EmailChannelTests.read(
                    try setup.smtp.received().filter { $0.to == ["alice@example.edu"] }, dkimRecord: nil
                ).filter { !$0.subject.hasPrefix("Reminder:") }
                #expect(toHost.count == 1 && toHost.first?.subject == "Your guest Vera Visitor checked in at North", "\(toHost)")
                #expect(toHost.first?.text.contains("Their guest badge is yellow") == true && toHost.first?.unsubscribe != nil)
                let guestsPath = "/v1/campuses/{campus}/health/guests"
                let day = try await api.send(.get, "/v1/campuses/north/health/guests", template: guestsPath, token: officerToken)
                #expect(day.status == 200, "\(day.body)")
                let counts = day.json["counts"] as? [String: Int]
                #expect(counts == ["green": 0, "yellow": 1, "red": 0], "\(day.body)")
                let followUps = day.json["followUps"] as? [[String: Any]] ?? []
                #expect(followUps.count == 1 && followUps.first?["name"] as? String == "Vera Visitor", "\(day.body)")
                #expect(
                    followUps.first?["host"] as? String == "Alice Member"
                        && followUps.first?["email"] as? String == "vera@visitor.example.org")
                let audited = try await server.pool.query(
                    "SELECT count(*) AS n FROM audit_log WHERE campus_id = \(north.id) AND action = 'guests.read'",
                    campus: north.id.rawValue)
                #expect(try audited[0].decode("n", as: Int.self) == 1)
                for refused in [setup.screenerToken, token] {
                    let answer = try await api.send(.get, "/v1/campuses/north/health/guests", template: guestsPath, token: refused)
                    #expect([401, 403].contains(answer.status), "\(answer.body)")
                }
            }
        }
    }

    @Test func fiveWrongCodesLockTheVisitAndACodeExpiresAfterTenMinutes() async throws {
        let clock = TestClock(Date())
        try await Self.withSetUp(clock: clock) { setup in
            try await setup.server.run { api in
                let visit = try #require(try await Self.register(api).json["id"] as? String)
                let (code, _) = try await Self.code(setup.smtp, to: "vera@visitor.example.org")
                let wrongCode = code == "123456" ? "654321" : "123456"
                for left in (1...4).reversed() {
                    let wrong = try await Self.verify(api, visit: visit, code: wrongCode)
                    #expect(wrong.status == 422 && wrong.body.contains("\(left) \(left == 1 ? "try" : "tries") left"), "\(wrong.body)")
                }
                let fifth = try await Self.verify(api, visit: visit, code: wrongCode)
                #expect(fifth.status == 403 && fifth.problem.type.hasSuffix("visit-locked"), "\(fifth.body)")
                let sixth = try await Self.verify(api, visit: visit, code: code)
                #expect(sixth.status == 403, "the right code after five wrong ones: \(sixth.body)")

                let late = try #require(try await Self.register(api, email: "late@visitor.example.org").json["id"] as? String)
                let (lateCode, _) = try await Self.code(setup.smtp, to: "late@visitor.example.org")
                clock.advance(by: 601)
                let expired = try await Self.verify(api, visit: late, code: lateCode)
                #expect(expired.status == 410, "\(expired.body)")
                let unknown = try await Self.verify(api, visit: UUID().uuidString, code: lateCode)
                #expect(unknown.status == 404, "\(unknown.body)")
            }
        }
    }

    @Test func signUpsAreLimitedPerEmailPerCampusDayAndPerAddress() async throws {
        try await Self.withSetUp(cap: 4) { setup in
            try await setup.server.run { api in
                for _ in 0..<3 { #expect(try await Self.register(api, email: "same@visitor.example.org").status == 201) }
                let fourth = try await Self.register(api, email: "same@visitor.example.org")
                #expect(fourth.status == 429 && fourth.problem.type.hasSuffix("guest-email-limit"), "\(fourth.body)")
                #expect(try await Self.register(api, email: "other@visitor.example.org").status == 201)
                let capped = try await Self.register(api, email: "fifth@visitor.example.org")
                #expect(capped.status == 429 && capped.problem.type.hasSuffix("guest-cap"), "\(capped.body)")
                #expect(capped.problem.detail.contains("Contact your host"), "\(capped.body)")
            }
        }
        // One address signing up 1,000 times: the first ten pass (then one a minute), the rest are
        // 429s. The bucket refills with real time: a loaded machine that takes more than a minute
        // over the thousand lets one more through a minute.
        try await Self.withSetUp { flood in
            _ = try await CampusStore(client: flood.server.pool).set(slug: "north", key: "guest-daily-cap", value: "100000", actor: "test")
            try await flood.server.run { api in
                var statuses: [Int: Int] = [:]
                let started = ContinuousClock.now
                for index in 0..<1_000 {
                    let reply = try await api.client.execute(
                        uri: "/v1/campuses/north/guests/visits", method: .post, headers: [.contentType: "application/json"],
                        body: ByteBuffer(
                            string: #"{"name": "V \#(index)", "email": "v\#(index)@visitor.example.org", "host": "alice@example.edu"}"#))
                    statuses[Int(reply.status.code), default: 0] += 1
                }
                let refilled = Int((ContinuousClock.now - started).components.seconds / 60)
                let created = statuses[201, default: 0]
                #expect((10...10 + refilled).contains(created) && statuses[429] == 1_000 - created, "\(statuses), \(refilled) refilled")
                #expect(try flood.smtp.received().count == created)
            }
        }
        // Behind a guest Wi-Fi's NAT an operator raises it (`serve --guest-visits-per-address 40`).
        try await Self.withSetUp(visitsPerAddress: 40) { wifi in
            try await wifi.server.run { api in
                var created = 0
                let started = ContinuousClock.now
                for index in 0..<41 where try await Self.register(api, email: "w\(index)@visitor.example.org").status == 201 {
                    created += 1
                }
                // Four a minute come back: one each 15 s the 41 took.
                let refilled = Int((ContinuousClock.now - started).components.seconds / 15)
                #expect((40...40 + refilled).contains(created), "\(created) of 41 created, \(refilled) refilled")
            }
        }
    }

    /// Registrations for one campus at once are taken one at a time, so the cap holds exactly;
    /// while another server registers, they wait for their turn in the process, one of them
    /// holding a connection, and the pool serves everything else.
    @Test func registrationsAtOnceWaitTheirTurnAndTheCapHoldsExactly() async throws {
        try await Self.withSetUp(cap: 10) { setup in
            let (server, campus) = (setup.server, setup.north)
            let lock = try await AnotherServersLock.take(
                "SELECT \(GuestStore.registrationLock(campus: campus.id))", on: server, campus: campus.id)
            let outcomes = try await withThrowingTaskGroup(of: String.self) { group in
                defer { lock.release() }
                for index in 0..<16 {
                    group.addTask {
                        do {
                            _ = try await server.services.guests.register(
                                campus: campus, name: "V \(index)", email: "v\(index)@visitor.example.org", host: "alice@example.edu",
                                now: Date())
                            return "registered"
                        } catch GuestError.dailyCapReached {
                            return "capped"
                        }
                    }
                }
                let waiting = try await AnotherServersLock.waiters(on: server)
                #expect(waiting == 1, "one registration waits for the lock with a connection; the others wait for their turn without")
                lock.release()
                return try await group.reduce(into: [String: Int]()) { $0[$1, default: 0] += 1 }
            }
            try await lock.end()
            #expect(outcomes == ["registered": 10, "capped": 6])
        }
    }

    @Test func aGuestErasesTheirVisitFromTheEmailAndVisitsArePurgedAfterRetention() async throws {
        try await Self.withSetUp { setup in
            let (server, north) = (setup.server, setup.north)
            try await server.run { api in
                let visit = try #require(try await Self.register(api).json["id"] as? String)
                let (code, read) = try await Self.code(setup.smtp, to: "vera@visitor.example.org")
                let link = try #require(
                    read.text.split(whereSeparator: \.isNewline).first { $0.contains("/visit/erase?") }.flatMap {
                        $0.split(separator: " ").last
                    })
                let query = try #require(URLComponents(string: String(link))?.queryItems)
                let token = try #require(query.first { $0.name == "token" }?.value)
                let web = WebClient(api.client)
                let page = try await web.get("/c/north/visit/erase?visit=\(visit)&token=\(token)")
                #expect(page.status == 200 && page.body.contains("Erase my visit"))
                let forged = try await web.post("/c/north/visit/erase", form: [("visit", visit), ("token", String(token.reversed()))])
                #expect(forged.status == 404)
                let erased = try await web.post("/c/north/visit/erase", form: [("visit", visit), ("token", token)])
                #expect(erased.status == 200 && erased.body.contains("Your visit is erased"), "\(erased.body.prefix(300))")
                #expect(try await Self.verify(api, visit: visit, code: code).status == 404)

                // Another visit, checked in, then the purge after the campus's retention (3 days here).
                _ = try await CampusStore(client: server.pool).set(slug: "north", key: "guest-retention-days", value: "3", actor: "test")
                // Asked in Spanish, the code's email is in Spanish.
                let second = try #require(
                    try await Self.register(api, email: "w@visitor.example.org", headers: [.acceptLanguage: "es-MX,es;q=0.9,en;q=0.5"])
                        .json[
                            "id"]
                        as? String)
                let (secondCode, spanish) = try await Self.code(setup.smtp, to: "w@visitor.example.org")
                #expect(spanish.subject == "\(secondCode) es su código de visita para North" && spanish.language == "es", "\(spanish)")
                #expect(spanish.text.contains("días después de la visita"), "\(spanish.text)")
                let pass = try #require(try await Self.verify(api, visit: second, code: secondCode).json["token"] as? String)
                let campus = try await CampusStore(client: server.pool).require(slug: "north")
                #expect(
                    try await GuestUpkeep(client: server.pool).run(campus: campus, now: Date().addingTimeInterval(3 * 86_400))[
                        "guests_purged"]
                        == 0)
                #expect(
                    try await GuestUpkeep(client: server.pool).run(campus: campus, now: Date().addingTimeInterval(4 * 86_400 + 3_600))[
                        "guests_purged"] == 1)
                let left = try await server.pool.query(
                    "SELECT count(*) AS n FROM guest_visits WHERE campus_id = \(north.id)", campus: north.id.rawValue)
                #expect(try left[0].decode("n", as: Int.self) == 0)
                let gone = try await api.send(.get, "/v1/campuses/north/me/badge", template: "/v1/campuses/{campus}/me/badge", token: pass)
                #expect(gone.status == 401)
                let audit = try await server.pool.query(
                    "SELECT count(*) AS n FROM audit_log WHERE campus_id = \(north.id) AND action = 'guest.erase'",
                    campus: north.id.rawValue)
                #expect(try audit[0].decode("n", as: Int.self) == 1)
            }
        }
    }

    @Test func aKioskChecksInVisitorsOnAScreenersWordAndTheAdminPrintsThePoster() async throws {
        try await Self.withSetUp { setup in
            let (server, north) = (setup.server, setup.north)
            let (_, adminToken) = try await server.user("ada@example.edu", at: north, roles: [.admin])
            let (_, memberToken) = try await server.user("mo@example.edu", at: north)
            try await server.run { api in
                let desk = WebClient(api.client)
                desk.cookies.withLock { $0["attest-north"] = setup.screenerToken }
                let kiosk = try await desk.get("/c/north/kiosk")
                #expect(
                    kiosk.status == 200 && kiosk.body.contains("autocomplete=\"off\"") && kiosk.body.contains("/static/kiosk."),
                    "\(kiosk.status)")
                let csrf = try #require(kiosk.csrf)
                let version = try #require(kiosk.field("surveyVersion"))
                var form: [(String, String)] = [
                    ("csrf", csrf), ("surveyVersion", version), ("name", "Kim Kiosk"), ("email", "kim@visitor.example.org"),
                    ("host", "Alice Member"),
                ]
                for question in DemoQuestionnaire.draft.questions {
                    switch question.kind {
                    case .boolean: form.append(("answers.\(question.id)", "no"))
                    case .number: form.append(("answers.\(question.id)", "36.8"))
                    case .choice: form.append(("answers.\(question.id)", question.options?.first ?? ""))
                    case .text: form.append(("answers.\(question.id)", "ok"))
                    }
                }
                let checkedIn = try await desk.post(
                    "/c/north/kiosk", form: form, headers: [.accept: "application/json", HTTPField.Name("X-CSRF-Token")!: csrf])
                #expect(checkedIn.status == 201, "\(checkedIn.body.prefix(400))")
                let json = try #require(try JSONSerialization.jsonObject(with: Data(checkedIn.body.utf8)) as? [String: Any])
                #expect(json["guestName"] as? String == "Kim Kiosk" && json["guestOf"] as? String == "Guest of Alice Member")
                #expect((json["qr"] as? String)?.hasPrefix("<svg") == true && json["color"] as? String == "green", "\(json)")
                #expect(!checkedIn.setCookies.contains { $0.contains("guest") }, "the kiosk gives the visitor no cookie")
                #expect(try setup.smtp.received().isEmpty, "no code is emailed at the kiosk")
                let vouched = try await server.pool.query(
                    "SELECT actor FROM audit_log WHERE campus_id = \(north.id) AND action = 'guest.vouch'", campus: north.id.rawValue)
                #expect(try vouched.map { try $0.decode("actor", as: String.self) } == ["user:sam@example.edu"])
                // A member is not a screener: the kiosk is refused.
                let member = WebClient(api.client)
                member.cookies.withLock { $0["attest-north"] = memberToken }
                #expect(try await member.get("/c/north/kiosk").status == 403)

                let admin = WebClient(api.client)
                admin.cookies.withLock { $0["attest-north"] = adminToken }
                let dashboard = try await admin.get("/c/north/admin")
                #expect(dashboard.body.contains("admin/poster.pdf") && dashboard.body.contains("Green 1"), "\(dashboard.status)")
                let pdf = try await admin.get("/c/north/admin/poster.pdf")
                #expect(pdf.status == 200 && pdf.headers[.contentType] == "application/pdf" && pdf.bytes.starts(with: Array("%PDF-".utf8)))
                let svg = try await admin.get("/c/north/admin/poster.svg")
                #expect(svg.status == 200 && svg.headers[.contentType] == "image/svg+xml")
                // Read by others: qpdf checks the PDF, poppler draws it and pyzbar reads its QR code;
                // Python's XML parser reads the SVG, whose code, drawn again from its path, reads the same.
                let link = server.services.origin + "/c/north/visit"
                let files = FileManager.default.temporaryDirectory.appending(path: "poster-\(UUID().uuidString.prefix(8))")
                try FileManager.default.createDirectory(at: files, withIntermediateDirectories: true)
                defer { try? FileManager.default.removeItem(at: files) }
                try pdf.bytes.write(to: files.appending(path: "poster.pdf"))
                try Data(svg.body.utf8).write(to: files.appending(path: "poster.svg"))
                let check = try await ChildProcess.run(["/usr/bin/qpdf", "--check", files.appending(path: "poster.pdf").path])
                #expect(check.status == 0, "qpdf: \(check.stdout) \(check.stderr)")
                let text = try await ExportTests.text(ofPDF: pdf.bytes)
                #expect(text.contains("Visiting today?") && text.contains(link) && text.contains("Page 1 of 1"), "\(text)")
                // In Spanish, its foot too.
                admin.cookies.withLock { $0["attest-lang"] = "es" }
                let spanish = try await ExportTests.text(ofPDF: try await admin.get("/c/north/admin/poster.pdf").bytes)
                #expect(
                    spanish.contains("Página 1 de 1") && !spanish.contains("Page 1") && !spanish.contains("Visiting today?"), "\(spanish)")
                admin.cookies.withLock { $0["attest-lang"] = nil }
                let read = try await ChildProcess.run(["/usr/bin/env", "python3", "-c", Self.posterOracle, files.path])
                #expect(read.status == 0, "\(read.stderr)")
                #expect(read.stdout.split(whereSeparator: \.isNewline).map(String.init) == [link, link], "\(read.stdout)")
                #expect(try await member.get("/c/north/admin/poster.pdf").status == 403)
            }
        }
    }

    /// A code the mail server will not take: the visit is forgotten and the visitor told why and
    /// what to do, through the API (the server's reply, `Retry-After` when a later try may work)
    /// and on the visit page in their language (the front desk when it will not).
    @Test func aCodeTheMailServerWillNotTakeLeavesNoVisitAndSaysWhatToDo() async throws {
        for (reply, later) in [("451 4.3.0 try again later", true), ("550 5.7.1 relaying denied", false)] {
            let smtp = try await SMTPTestServer.start("plain", rcptReply: reply)
            do {
                let setup = try await Self.setUp(smtp: smtp, clock: nil, cap: nil, visitsPerAddress: 10)
                try await setup.server.run { api in
                    let refused = try await Self.register(api)
                    #expect(refused.status == 503 && refused.problem.type.hasSuffix("/code-not-sent"), "\(refused.body)")
                    #expect(refused.problem.detail.contains(String(reply.prefix(9))), "the server's reply: \(refused.body)")
                    #expect(refused.headers[.retryAfter] == (later ? "60" : nil))
                    #expect(
                        refused.problem.detail.hasSuffix(
                            later ? "Try again in a minute, or ask the front desk." : "Ask the front desk to register you at the kiosk."))
                    let visitor = WebClient(api.client, acceptLanguage: "es")
                    let form = try await visitor.get("/c/north/visit")
                    let page = try await visitor.post(
                        "/c/north/visit",
                        form: [
                            ("csrf", try #require(form.csrf)), ("name", "Vera Visitor"), ("email", "vera@visitor.example.org"),
                            ("host", "Alice Member"),
                        ])
                    #expect(page.status == 503 && page.body.contains("No se pudo enviar su código"), "\(page.status)")
                    #expect(page.body.contains(later ? "Inténtelo de nuevo en un minuto" : "en el quiosco"))
                    #expect(!page.body.contains(String(reply.dropFirst(4))), "the mail server's words are not the visitor's")
                    #expect(page.headers[.retryAfter] == (later ? "60" : nil))
                    let kept = try await setup.server.pool.query(
                        "SELECT count(*)::int AS n FROM guest_visits WHERE campus_id = \(setup.north.id)", campus: setup.north.id.rawValue)
                    #expect(try kept[0].decode("n", as: Int.self) == 0, "no visit waits for a code nobody got")
                }
            } catch {
                await smtp.stop()
                throw error
            }
            await smtp.stop()
        }
    }

    /// The visit pages say each refusal in the visitor's language: a wrong code with the tries
    /// left, a locked visit, a campus's cap for the day, a campus that takes no guests online.
    @Test func theVisitPagesSayRefusalsInTheVisitorsLanguage() async throws {
        try await Self.withSetUp(cap: 1) { setup in
            try await setup.server.run { api in
                let visitor = WebClient(api.client, acceptLanguage: "es-MX,es;q=0.9")
                let start = try await visitor.get("/c/north/visit")
                let csrf = try #require(start.csrf)
                func register(_ email: String) async throws -> WebClient.Page {
                    try await visitor.post(
                        "/c/north/visit", form: [("csrf", csrf), ("name", "Vera Visitor"), ("email", email), ("host", "Alice Member")])
                }
                let registered = try await register("vera@visitor.example.org")
                let codePage = try await visitor.get(try #require(registered.location, "\(registered.status)"))
                let (code, _) = try await Self.code(setup.smtp, to: "vera@visitor.example.org")
                let visit = try #require(codePage.field("v"))
                let wrong = code == "000000" ? "111111" : "000000"
                func enter(_ code: String) async throws -> WebClient.Page {
                    try await visitor.post("/c/north/visit/code", form: [("csrf", csrf), ("v", visit), ("code", code)])
                }
                let first = try await enter(wrong)
                #expect(
                    first.status == 422 && first.body.contains("Ese no es el código que enviamos: le quedan 4 intentos."), "\(first.body)")
                for _ in 0..<3 { _ = try await enter(wrong) }
                let last = try await enter(wrong)
                #expect(last.body.contains("le queda 1 intento") || last.body.contains("bloqueada"), "\(last.body)")
                let locked = try await enter(code)
                #expect(locked.body.contains("esta visita está bloqueada") && !locked.body.contains("locked"), "\(locked.body)")
                let full = try await register("otra@visitor.example.org")
                #expect(full.status == 429 && full.body.contains("Comuníquese con su anfitrión."), "\(full.status) \(full.body)")
                _ = try await setup.server.campus("south")
                let closed = try await visitor.get("/c/south/visit")
                #expect(closed.status == 404 && closed.body.contains("no registra visitas en línea"), "\(closed.status)")
            }
        }
    }

    /// What a visitor or a front desk leaves out or gets wrong comes back as the form with each
    /// problem by its field, and nothing is stored: the visitor's own survey without its answer
    /// (script off), and the kiosk's form without a name, with an email that is not one and
    /// without the answer, for its script (JSON, each message with its field's label) and
    /// without it (the page, with what was typed).
    @Test func theVisitorsSurveyAndTheKioskSayWhatIsWrongAndStoreNothing() async throws {
        try await Self.withSetUp { setup in
            let (server, north) = (setup.server, setup.north)
            try await Self.publishGuestSurvey(server, at: north)
            @Sendable func visits() async throws -> [(name: String, color: String?)] {
                try await server.pool.query(
                    "SELECT name, color FROM guest_visits WHERE campus_id = \(north.id) ORDER BY created_at", campus: north.id.rawValue
                ).map { (try $0.decode("name"), try $0.decode("color")) }
            }
            try await server.run { api in
                let visitor = WebClient(api.client)
                let start = try await visitor.get("/c/north/visit")
                let csrf = try #require(start.csrf)
                let registered = try await visitor.post(
                    "/c/north/visit",
                    form: [("csrf", csrf), ("name", "Vera {1} Visitor"), ("email", "vera@visitor.example.org"), ("host", "Alice Member")])
                let codePage = try await visitor.get(try #require(registered.location, "\(registered.status)"))
                let (code, _) = try await Self.code(setup.smtp, to: "vera@visitor.example.org")
                let verified = try await visitor.post(
                    "/c/north/visit/code", form: [("csrf", csrf), ("v", try #require(codePage.field("v"))), ("code", code)])
                #expect(verified.location?.hasSuffix("/c/north/visit/today") == true, "\(verified.status) \(verified.body.prefix(300))")
                let survey = try await visitor.get("/c/north/visit/today")
                // A name is never read for a placeholder: "{1}" stays in it, the host's name is not put there.
                #expect(survey.body.contains("Vera {1} Visitor") && !survey.body.contains("Vera Alice Member Visitor"), "\(survey.body)")
                let version = try #require(survey.field("surveyVersion"))
                let unanswered = try await visitor.post(
                    "/c/north/visit/today", form: [("csrf", try #require(survey.csrf)), ("surveyVersion", version)])
                #expect(unanswered.status == 422, "\(unanswered.body.prefix(300))")
                #expect(unanswered.body.contains("class=\"error-summary\"") && unanswered.body.contains("href=\"#q-fever\""))
                #expect(try await visits().map(\.color) == [nil], "nothing answered is stored")
                let again = try await visitor.get("/c/north/visit/today")
                #expect(again.status == 200 && again.body.contains("name=\"answers.fever\""), "still the survey")

                let desk = WebClient(api.client)
                desk.cookies.withLock { $0["attest-north"] = setup.screenerToken }
                let kiosk = try await desk.get("/c/north/kiosk")
                let deskCSRF = try #require(kiosk.csrf)
                let wrong: [(String, String)] = [
                    ("csrf", deskCSRF), ("surveyVersion", try #require(kiosk.field("surveyVersion"))), ("name", "  "),
                    ("email", "kim at visitor"), ("host", "Alice Member"),
                ]
                let scripted = try await desk.post(
                    "/c/north/kiosk", form: wrong, headers: [.accept: "application/json", HTTPField.Name("X-CSRF-Token")!: deskCSRF])
                #expect(scripted.status == 422 && scripted.headers[.contentType] == "application/problem+json", "\(scripted.body)")
                let problem = try #require(try JSONSerialization.jsonObject(with: Data(scripted.body.utf8)) as? [String: Any])
                let errors = try #require(problem["errors"] as? [[String: String]])
                #expect(Set(errors.compactMap { $0["field"] }) == ["name", "email", "answers.fever"], "\(errors)")
                #expect(
                    errors.first { $0["field"] == "answers.fever" }?["message"]?.hasPrefix("Do you have a fever?: ") == true,
                    "each message says what it is about: \(errors)")
                let plain = try await desk.post("/c/north/kiosk", form: wrong)
                #expect(plain.status == 422, "\(plain.body.prefix(300))")
                for anchor in ["#visit-name", "#visit-email", "#q-fever"] {
                    #expect(plain.body.contains("href=\"\(anchor)\""), "\(anchor) in the summary")
                }
                #expect(
                    plain.body.contains("value=\"kim at visitor\"") && plain.body.contains("value=\"Alice Member\""),
                    "what was typed is kept to mend")
                #expect(plain.body.contains("id=\"visit-name-error\"") && plain.body.contains("id=\"visit-email-error\""))
                #expect(
                    plain.count("aria-invalid=\"true\"") == 2 && !plain.body.contains("id=\"visit-host-error\""), "the host was right")
                #expect(plain.body.contains("<title>Error: "), "the title says the page is an error")
                #expect(try await visits().count == 1, "the kiosk stored no visit")

                // Mended, without script: the guest's badge page for the desk's screen.
                let mended = try await desk.post(
                    "/c/north/kiosk",
                    form: Array(wrong.prefix(2)) + [
                        ("name", "Kim Kiosk"), ("email", "kim@visitor.example.org"), ("host", "Alice Member"), ("answers.fever", "no"),
                    ])
                #expect(mended.status == 200 && mended.body.contains("Kim Kiosk") && mended.body.contains("Guest of Alice Member"))
                #expect(try await visits().map(\.color) == [nil, "green"])
            }
        }
    }

    /// Prints the text of the QR code of the poster's PDF (drawn by poppler's pdftoppm) and of its
    /// SVG (parsed by Python's XML reader, its path's runs drawn again with PIL), each read by pyzbar.
    static let posterOracle = #"""
        import os, re, subprocess, sys, xml.etree.ElementTree as ET
        from PIL import Image, ImageDraw
        from pyzbar import pyzbar
        folder = sys.argv[1]
        subprocess.run(['/usr/bin/pdftoppm', '-r', '100', '-png', '-singlefile', os.path.join(folder, 'poster.pdf'),
                        os.path.join(folder, 'page')], check=True)
        page = Image.open(os.path.join(folder, 'page.png')).convert('L')
        print(pyzbar.decode(page)[0].data.decode())
        root = ET.parse(os.path.join(folder, 'poster.svg')).getroot()
        path = next(e for e in root.iter() if e.tag.endswith('path')).get('d')
        scale = 8
        image = Image.new('L', (200 * scale, 200 * scale), 255)
        draw = ImageDraw.Draw(image)
        for x, y, run in re.findall(r'M(\d+) (\d+)h(\d+)v1h-\d+z', path):
            x, y, run = int(x), int(y), int(run)
            draw.rectangle([x * scale, y * scale, (x + run) * scale - 1, (y + 1) * scale - 1], fill=0)
        print(pyzbar.decode(image)[0].data.decode())
        """#

    @Test func theCLIOpensACampusToGuestsAndPublishesTheGuestQuestionnaire() async throws {
        let cli = try await AdminCLITests.cli()
        #expect(try await cli.run("campus", "create", "north", "--name", "North", "--timezone", "UTC").status == 0)
        #expect(try await cli.run("campus", "set", "north", "guests", "on").status == 0)
        AdminCLITests.expectFailure(try await cli.run("campus", "set", "north", "guests", "maybe"), "on or off")
        AdminCLITests.expectFailure(try await cli.run("campus", "set", "north", "guest-daily-cap", "many"), "0 to 100000")
        #expect(try await cli.run("campus", "set", "north", "guest-retention-days", "7").status == 0)
        let file = FileManager.default.temporaryDirectory.appending(path: "guest-\(UUID().uuidString).json")
        try Data(#"{"title": "Visitors", "questions": [{"id": "fever", "kind": "boolean", "prompt": "Fever?"}]}"#.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let published = try await cli.run("survey", "publish", "north", "--guest", file.path)
        #expect(published.status == 0 && published.stdout.contains("guest survey"), "\(published.stderr)")
        let both = try await cli.run("survey", "publish", "north", file.path, "--guest", file.path)
        #expect(both.status != 0 && both.stderr.contains("give one of"), "\(both.stderr)")
        let client = TestDatabase.client(database: cli.database, role: nil)
        let campus = try await CampusStore(client: client).require(slug: "north")
        #expect(GuestPolicy(campus: campus).open && GuestPolicy(campus: campus).retentionDays == 7)
        let store = QuestionnaireStore(client: client)
        #expect(try await store.active(campus: campus.id) == nil, "a guests' questionnaire is not the members'")
        #expect(try await store.guests(campus: campus.id)?.title == "Visitors")
        await client.shutdown()
    }

    @Test func aBadgeTokensGuestClaimIsSignedAndReadStrictly() throws {
        let claims = BadgeClaims(campus: "north", sub: "abc", date: "2026-11-29", color: "green", iat: 1, exp: 2, guest: "Alice Member")
        #expect(
            claims.json == #"{"campus":"north","color":"green","date":"2026-11-29","exp":2,"guest":"Alice Member","iat":1,"sub":"abc"}"#)
        #expect(BadgeClaims(verifiedJSON: Data(claims.json.utf8)) == claims)
        // At a door, a guest's badge is counted apart from a member's.
        #expect(DoorVerdict(.valid(claims)).guest && DoorVerdict(.valid(claims)).verdict == "green")
        let member = BadgeClaims(campus: "north", sub: "abc", date: "2026-11-29", color: "green", iat: 1, exp: 2)
        #expect(!DoorVerdict(.valid(member)).guest)
        #expect(BadgeClaims(verifiedJSON: Data(member.json.utf8))?.guest == nil)
        for bad in [
            #"{"campus":"north","color":"green","date":"2026-11-29","exp":2,"guest":7,"iat":1,"sub":"abc"}"#,
            #"{"campus":"north","color":"green","date":"2026-11-29","exp":2,"guest":"","iat":1,"sub":"abc"}"#,
            #"{"campus":"north","color":"green","date":"2026-11-29","exp":2,"other":"x","iat":1,"sub":"abc"}"#,
        ] {
            #expect(BadgeClaims(verifiedJSON: Data(bad.utf8)) == nil, "\(bad)")
        }
    }
}

/// base64url without padding, for reading a token's claims in a test.
func Base64URLTestDecode(_ text: String) -> Data? {
    var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
    while base64.count % 4 != 0 { base64 += "=" }
    return Data(base64Encoded: base64)
}
