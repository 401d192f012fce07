import AttestPlugins
import AttestPostgres
import AttestTestSupport
import Foundation
import HTTPTypes
import Identity
import Notifications
import Tenancy
import Testing

@testable import AttestServer

/// Each member's notification preferences (issue 62): the API and the settings page, every
/// field checked and named, each member's own.
@Suite("Notification preferences")
struct NotificationPreferenceTests {
    static let path = "/v1/campuses/{campus}/me/notifications"

    @Test func quietHoursMaySpanMidnight() {
        let night = NotificationPreferences(quietHours: (22 * 60, 7 * 60))
        #expect(night.isQuiet(23 * 60 + 30) && night.isQuiet(0) && night.isQuiet(6 * 60 + 59))
        #expect(!night.isQuiet(7 * 60) && !night.isQuiet(21 * 60 + 59))
        let day = NotificationPreferences(quietHours: (9 * 60, 17 * 60))
        #expect(day.isQuiet(9 * 60) && !day.isQuiet(17 * 60) && !day.isQuiet(8 * 60))
        #expect(!NotificationPreferences().isQuiet(120))
    }

    @Test func membersSetTheirOwnAndEveryWrongFieldIsNamed() async throws {
        let server = try await TestServer.make()
        let north = try await server.campus("north")
        let (_, member) = try await server.user("m@example.edu", at: north)
        let (_, other) = try await server.user("o@example.edu", at: north, roles: [.admin])
        try await server.run { api in
            let defaults = try await api.send(.get, "/v1/campuses/north/me/notifications", template: Self.path, token: member)
            #expect(defaults.status == 200 && defaults.json["email"] as? Bool == true && defaults.json["push"] as? Bool == false)
            #expect(defaults.json["reminderTime"] is NSNull && defaults.json["quietHours"] is NSNull && defaults.json["language"] is NSNull)
            #expect(defaults.json["reminderWindow"] as? [String: String] == ["from": "00:00", "to": "10:00"])

            let chosen =
                #"{"email": false, "push": true, "reminderTime": "07:45", "quietHours": {"from": "22:00", "to": "07:00"}, "language": "es"}"#
            let kept = try await api.send(.put, "/v1/campuses/north/me/notifications", template: Self.path, token: member, json: chosen)
            #expect(kept.status == 200, "\(kept.body)")
            #expect(kept.json["reminderTime"] as? String == "07:45" && kept.json["language"] as? String == "es")
            #expect(kept.json["quietHours"] as? [String: String] == ["from": "22:00", "to": "07:00"])
            let again = try await api.send(.get, "/v1/campuses/north/me/notifications", template: Self.path, token: member)
            #expect(NSDictionary(dictionary: again.json) == NSDictionary(dictionary: kept.json))

            // Each member's own.
            let theirs = try await api.send(.get, "/v1/campuses/north/me/notifications", template: Self.path, token: other)
            #expect(theirs.json["email"] as? Bool == true && theirs.json["language"] is NSNull)

            for (body, fields) in [
                (#"{"reminderTime": "25:00"}"#, ["reminderTime"]), (#"{"reminderTime": "10:01"}"#, ["reminderTime"]),
                (#"{"reminderTime": "7:45"}"#, ["reminderTime"]), (#"{"quietHours": {"from": "22:00", "to": "22:00"}}"#, ["quietHours"]),
                (#"{"quietHours": "22-7"}"#, ["quietHours"]), (#"{"quietHours": {"from": "22:00"}}"#, ["quietHours"]),
                (#"{"language": "fr"}"#, ["language"]), (#"{"email": "yes", "push": 1}"#, ["email", "push"]),
                (#"{"sms": true}"#, ["sms"]),
            ] {
                let refused = try await api.send(
                    .put, "/v1/campuses/north/me/notifications", template: Self.path, token: member, json: body)
                #expect(refused.status == 422 && Set(refused.problem.fields) == Set(fields), "\(body): \(refused.body)")
            }
            let unchanged = try await api.send(.get, "/v1/campuses/north/me/notifications", template: Self.path, token: member)
            #expect(NSDictionary(dictionary: unchanged.json) == NSDictionary(dictionary: kept.json))  // nothing half-stored
        }
    }

    @Test func theSettingsPageKeepsAChoiceAndNamesEachWrongField() async throws {
        let (server, campus) = try await WebPageTests.setUp()
        try await server.run { api in
            let browser = WebClient(api.client)
            try await browser.demoSignIn(campus: "north", email: "ana@example.edu")
            let page = try await browser.get("/c/north/settings")
            #expect(
                page.status == 200 && page.body.contains("Notification settings") && page.body.contains("aria-current=\"page\">Settings"))
            #expect(page.body.contains("id=\"channel-email\" checked") && !page.body.contains("id=\"channel-push\" checked"))
            let csrf = try #require(page.csrf)
            let wrong = try await browser.post(
                "/c/north/settings", form: [("csrf", csrf), ("reminderTime", "11:30"), ("quietFrom", "22:00"), ("language", "fr")])
            #expect(wrong.status == 422)
            for text in ["Enter a time from 00:00 to 10:00", "Enter both times", "Choose English or Spanish"] {
                #expect(wrong.body.contains(text), "\(text)")
            }
            #expect(wrong.field("reminderTime") == "11:30")
            let saved = try await browser.post(
                "/c/north/settings",
                form: [
                    ("csrf", csrf), ("push", "on"), ("reminderTime", "08:15"), ("quietFrom", "21:00"), ("quietTo", "06:30"),
                    ("language", "es"),
                ])
            #expect(saved.status == 303 && saved.location == "/c/north/settings?saved=1")
            let ana = try #require(try await UserStore(client: server.pool).find(campus: campus.id, email: "ana@example.edu"))
            let kept = try await NotificationPreferenceStore(client: server.pool).preferences(campus: campus.id, user: ana.id)
            #expect(
                kept
                    == NotificationPreferences(
                        email: false, push: true, reminderMinute: 8 * 60 + 15, quietHours: (21 * 60, 6 * 60 + 30), language: "es"))
            let shown = try await browser.get("/c/north/settings?saved=1")
            #expect(
                shown.body.contains("Your settings were saved.") && shown.body.contains("value=\"08:15\"")
                    && shown.body.contains("<option value=\"es\" selected>"))
            let forged = try await browser.post("/c/north/settings", form: [("csrf", "forged"), ("email", "on")])
            #expect(forged.status == 403)
        }
    }
}

/// One-click unsubscribe links: a token per member and channel, signed with the campus's key.
@Suite("Unsubscribe links")
struct UnsubscribeTests {
    static let path = "/v1/campuses/{campus}/unsubscribe"

    @Test func aLinkStopsItsChannelForItsMemberOnlyAndIsWorthNothingElsewhere() async throws {
        let server = try await TestServer.make()
        let north = try await server.campus("north"), south = try await server.campus("south")
        let (ana, anaToken) = try await server.user("ana@example.edu", at: north)
        let (bob, _) = try await server.user("bob@example.edu", at: north)
        let (southAna, _) = try await server.user("ana@example.edu", at: south)
        let northTokens = UnsubscribeTokens(campusSecret: try await server.services.badges.keys.subjectKey(campus: north.id))
        let southTokens = UnsubscribeTokens(campusSecret: try await server.services.badges.keys.subjectKey(campus: south.id))
        let email = northTokens.token(campus: north.id, user: ana.id, channel: .email)
        #expect(email.count == 46 && email != northTokens.token(campus: north.id, user: ana.id, channel: .push))
        #expect(northTokens.read(email, campus: north.id)?.user == ana.id && northTokens.read(email, campus: north.id)?.channel == .email)
        let store = NotificationPreferenceStore(client: server.pool)
        try await store.set(
            campus: north, user: ana.id, NotificationPreferences(email: true, push: true, reminderMinute: 480), now: Date())
        try await server.run { api in
            // The page changes nothing.
            let page = try await api.send(.get, "/v1/campuses/north/unsubscribe?token=\(email)", template: Self.path)
            #expect(page.status == 200 && page.body.contains("Stop email?") && page.body.contains("name=\"List-Unsubscribe\""))
            #expect(page.headers[.cacheControl] == "private, no-store")
            #expect(try await store.preferences(campus: north.id, user: ana.id).email)

            // One click, as a mail client sends it: email off, push and the time kept, nobody else touched.
            let done = try await api.send(
                .post, "/v1/campuses/north/unsubscribe?token=\(email)", template: Self.path, json: "List-Unsubscribe=One-Click",
                contentType: "application/x-www-form-urlencoded")
            #expect(done.status == 200 && done.body.contains("no more email"), "\(done.body)")
            #expect(
                try await store.preferences(campus: north.id, user: ana.id)
                    == NotificationPreferences(email: false, push: true, reminderMinute: 480))
            #expect(try await store.preferences(campus: north.id, user: bob.id).email)
            let mine = try await api.send(
                .get, "/v1/campuses/north/me/notifications", template: NotificationPreferenceTests.path, token: anaToken)
            #expect(mine.json["email"] as? Bool == false)

            // Altered, another member's made up, another campus's, or at another campus: one 404.
            var altered = Array(email)
            altered[30] = altered[30] == "A" ? "B" : "A"
            let bobs =
                String(email.prefix(2)) + String(northTokens.token(campus: north.id, user: bob.id, channel: .email).dropFirst(2).prefix(22))
                + String(email.suffix(22))
            for (campus, token) in [
                ("north", String(altered)), ("north", bobs), ("south", email),
                ("north", southTokens.token(campus: south.id, user: southAna.id, channel: .email)),
                ("north", "not-a-token"),
            ] {
                let refused = try await api.send(.post, "/v1/campuses/\(campus)/unsubscribe?token=\(token)", template: Self.path)
                #expect(refused.status == 404, "\(campus) \(token): \(refused.status)")
            }
            #expect(try await store.preferences(campus: south.id, user: southAna.id).email)
            let extra = try await api.send(
                .post, "/v1/campuses/north/unsubscribe?token=\(email)", template: Self.path, json: "List-Unsubscribe=One-Click&x=1",
                contentType: "application/x-www-form-urlencoded")
            #expect(extra.status == 422 && extra.problem.fields == ["x"])
        }
    }

    @Test func itsPagesSpeakTheMembersLanguageAndARefusalToABrowserIsAPage() async throws {
        // Six unknown tokens an address, never refilled: the refusals below spend four, so the
        // slowing comes whatever the machine's speed.
        var configuration = ServerConfiguration.loopback
        configuration.rateLimits.unknownTokensPerAddress = .init(burst: 6, perMinute: 0)
        let server = try await TestServer.make(configuration: configuration)
        let north = try await server.campus("north")
        let (eva, _) = try await server.user("eva@example.edu", at: north)
        let (leo, _) = try await server.user("leo@example.edu", at: north)
        let tokens = UnsubscribeTokens(campusSecret: try await server.services.badges.keys.subjectKey(campus: north.id))
        try await NotificationPreferenceStore(client: server.pool).set(
            campus: north, user: eva.id, NotificationPreferences(email: true, language: "es"), now: Date())
        let evas = tokens.token(campus: north.id, user: eva.id, channel: .email)
        let leos = tokens.token(campus: north.id, user: leo.id, channel: .push)
        let browser: HTTPFields = [.accept: "text/html,application/xhtml+xml,*/*;q=0.8", .acceptLanguage: "en-US,en;q=0.9"]
        let form = "application/x-www-form-urlencoded"
        try await server.run { api in
            // Eva chose Spanish for her messages: her pages are Spanish whatever the browser asks.
            let ask = try await api.send(.get, "/v1/campuses/north/unsubscribe?token=\(evas)", template: Self.path, headers: browser)
            #expect(
                ask.status == 200 && ask.body.contains("<html lang=\"es\">") && ask.body.contains("¿Dejar de recibir correos?")
                    && ask.body.contains("<a href=\"/c/north/settings\">configuración</a>"), "\(ask.body)")
            let done = try await api.send(
                .post, "/v1/campuses/north/unsubscribe?token=\(evas)", template: Self.path, json: "List-Unsubscribe=One-Click",
                contentType: form, headers: browser)
            #expect(done.status == 200 && done.body.contains("Suscripción cancelada") && done.body.contains("no le enviará más correos"))

            // Leo chose none: the browser's language, else English.
            let spanish = try await api.send(
                .get, "/v1/campuses/north/unsubscribe?token=\(leos)", template: Self.path,
                headers: [.acceptLanguage: "es-MX,es;q=0.9,en;q=0.5"])
            #expect(spanish.body.contains("<html lang=\"es\">") && spanish.body.contains("¿Dejar de recibir notificaciones push?"))
            let english = try await api.send(.get, "/v1/campuses/north/unsubscribe?token=\(leos)", template: Self.path)
            #expect(
                english.body.contains("<html lang=\"en\">") && english.body.contains("Stop push notifications?")
                    && english.body.contains("<a href=\"/c/north/settings\">settings</a>"))

            // A link cut short: to a browser a page with the 404, in its language; to a script,
            // or a mail client's one click, problem+json as before.
            let cut = "/v1/campuses/north/unsubscribe?token=\(evas.dropLast(3))"
            let page = try await api.send(.get, cut, template: Self.path, headers: browser)
            #expect(
                page.status == 404 && page.headers[.contentType] == "text/html; charset=utf-8"
                    && page.body.contains("This link does not work") && page.body.contains("/c/north/settings"), "\(page.body)")
            var spanishBrowser = browser
            spanishBrowser[.acceptLanguage] = "es"
            let pageES = try await api.send(.post, cut, template: Self.path, headers: spanishBrowser)
            #expect(pageES.status == 404 && pageES.body.contains("Este enlace no funciona"))
            for (method, headers) in [(HTTPRequest.Method.get, [:] as HTTPFields), (.post, [.accept: "*/*"])] {
                let script = try await api.send(method, cut, template: Self.path, headers: headers)
                #expect(script.status == 404 && script.headers[.contentType] == "application/problem+json")
            }
            // A link whose campus is unknown (its slug mistyped): a page too, naming no campus.
            let nowhere = "/v1/campuses/nowher/unsubscribe?token=\(evas)"
            let lost = try await api.send(.get, nowhere, template: Self.path, headers: spanishBrowser)
            #expect(
                lost.status == 404 && lost.headers[.contentType] == "text/html; charset=utf-8" && lost.body.contains("<html lang=\"es\">")
                    && lost.body.contains("No corresponde a ningún campus de aquí") && !lost.body.contains("href="), "\(lost.body)")
            #expect(try await api.send(.post, nowhere, template: Self.path).headers[.contentType] == "application/problem+json")

            // An address trying link after link is slowed: the page says so, with Retry-After.
            var slowed: APIClient.Reply?
            for _ in 0..<6 where slowed == nil {
                let reply = try await api.send(.get, cut, template: Self.path, headers: browser)
                if reply.status == 429 { slowed = reply }
            }
            #expect(
                slowed?.body.contains("Too many tries") == true && slowed?.headers[.retryAfter] != nil
                    && slowed?.headers[.contentType] == "text/html; charset=utf-8")
        }
    }
}
