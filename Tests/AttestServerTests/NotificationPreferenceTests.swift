import AttestPlugins
import AttestPostgres
import AttestTestSupport
import Foundation
import Identity
import Notifications
import Tenancy
import Testing

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
