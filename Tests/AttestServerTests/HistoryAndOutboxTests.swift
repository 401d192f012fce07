import AttestPlugins
import AttestPluginsTesting
import AttestPostgres
import AttestTestSupport
import Foundation
import Surveys
import Tenancy
import Testing

@testable import AttestAPI
@testable import AttestServer
@testable import AttestWeb

@Suite("History, outbox events and configured rules")
struct HistoryAndOutboxTests {
    static let historyPath = "/v1/campuses/{campus}/me/attestations"
    static let submitPath = "/v1/campuses/{campus}/attestations"

    @Test func historyIsNewestFirstAPageAtATimeAndOnlyOnesOwn() async throws {
        let clock = try TestClock("2026-11-10T14:00:00Z")
        let (server, campus) = try await AttestationTests.setUp(clock: clock)
        let (_, member) = try await server.user("m@example.edu", at: campus)
        let (_, other) = try await server.user("o@example.edu", at: campus)
        try await server.run { api in
            for day in 10...14 {
                try clock.set("2026-11-\(day)T14:00:00Z")
                let fever = day == 12
                let reply = try await api.send(
                    .post, "/v1/campuses/north/attestations", template: Self.submitPath, token: member,
                    json: AttestationTests.body(#"{"fever": \#(fever), "cough": false}"#))
                #expect(reply.status == 201)
            }
            var dates: [String] = [], cursor: String? = nil, pages = 0
            repeat {
                let query = "limit=2" + (cursor.map { "&cursor=\($0)" } ?? "")
                let page = try await api.send(
                    .get, "/v1/campuses/north/me/attestations?\(query)", template: Self.historyPath, token: member)
                #expect(page.status == 200)
                let items = try #require(page.json["items"] as? [[String: Any]])
                #expect(items.count <= 2)
                dates += items.compactMap { $0["date"] as? String }
                if let item = items.first(where: { $0["date"] as? String == "2026-11-12" }) {
                    #expect((item["badge"] as? [String: Any])?["color"] as? String == "yellow")
                    #expect((item["answers"] as? [String: Any])?["fever"] as? Bool == true)
                }
                cursor = page.json["nextCursor"] as? String
                pages += 1
            } while cursor != nil && pages < 10
            #expect(dates == ["2026-11-14", "2026-11-13", "2026-11-12", "2026-11-11", "2026-11-10"])
            #expect(pages == 3)

            let first = try await api.send(.get, "/v1/campuses/north/me/attestations", template: Self.historyPath, token: member)
            #expect((first.json["items"] as? [Any])?.count == 5)
            #expect(first.json["nextCursor"] is NSNull)

            let none = try await api.send(.get, "/v1/campuses/north/me/attestations", template: Self.historyPath, token: other)
            #expect((none.json["items"] as? [Any])?.isEmpty == true)

            for (query, field) in [("limit=0", "limit"), ("limit=101", "limit"), ("limit=x", "limit"), ("cursor=yesterday", "cursor")] {
                let bad = try await api.send(.get, "/v1/campuses/north/me/attestations?\(query)", template: Self.historyPath, token: member)
                #expect(bad.status == 422 && bad.problem.fields == [field], "\(query)")
            }
        }
    }

    @Test func eventsGoToTheOutboxWithTheAttestationForEachSubscribedSinkWithoutAnswers() async throws {
        let clock = try TestClock("2026-11-20T16:00:00Z")  // 11:00 in New York: late
        let (server, campus) = try await AttestationTests.setUp(clock: clock)
        let (redMember, red) = try await server.user("red@example.edu", at: campus)
        let (_, green) = try await server.user("green@example.edu", at: campus)
        @Sendable func outbox() async throws -> [(event: String, sink: String, id: UUID, payload: String)] {
            try await server.pool.query(
                "SELECT event, sink_id, id, payload::text AS payload FROM notification_outbox ORDER BY sink_id, event",
                campus: campus.id.rawValue
            ).map { (try $0.decode("event"), try $0.decode("sink_id"), try $0.decode("id"), try $0.decode("payload")) }
        }
        try await server.run { api in
            // No sink listens: nothing is written.
            let early = try await api.send(
                .post, "/v1/campuses/north/attestations", template: Self.submitPath, token: green,
                json: AttestationTests.body(AttestationTests.healthy))
            #expect(early.status == 201)
            #expect(try await outbox().isEmpty)

            try await CampusPluginStore(client: server.pool).enable(
                campus: campus, kind: .sink, id: "everything", settings: .object([:]), actor: "test")
            try await CampusPluginStore(client: server.pool).enable(
                campus: campus, kind: .sink, id: "red-only", settings: .object(["events": .array([.string("badge.red")])]), actor: "test")
            let reply = try await api.send(
                .post, "/v1/campuses/north/attestations", template: Self.submitPath, token: red,
                json: AttestationTests.body(#"{"fever": true, "cough": true, "temperature": 39.5}"#))
            #expect((reply.json["badge"] as? [String: Any])?["color"] as? String == "red")
            let rows = try await outbox()
            #expect(
                rows.map { "\($0.sink) \($0.event)" } == [
                    "everything attestation.late", "everything attestation.submitted", "everything badge.red", "red-only badge.red",
                ])
            // One event, one id, whichever sink receives it.
            #expect(rows[2].id == rows[3].id)
            for row in rows {
                #expect(!row.payload.contains("39.5") && !row.payload.contains("fever") && !row.payload.contains("@"), "\(row.payload)")
                let payload = try JSONSerialization.jsonObject(with: Data(row.payload.utf8)) as? [String: Any]
                #expect(payload?["userId"] as? String == redMember.id.description)
                #expect(payload?["attestationId"] as? String == reply.json["id"] as? String)
                #expect(payload?["date"] as? String == "2026-11-20")
                #expect(payload?["color"] as? String == "red")
                #expect(payload?["id"] as? String == row.id.uuidString.lowercased())
                // What a sink decodes: every field of the event.
                let event = try JSONDecoder().decode(AttestNotification.self, from: Data(row.payload.utf8))
                #expect(event.event.rawValue == row.event && event.campus == "north" && event.onTime == false)
                #expect(event.occurredAt == "2026-11-20T16:00:00Z")
                #expect(
                    event.links
                        == (row.event == "badge.red"
                            ? ["followUps": "/v1/campuses/north/admin/follow-ups?date=2026-11-20&color=red"] : [:]))
            }

            // A refused second submission announces nothing.
            let again = try await api.send(
                .post, "/v1/campuses/north/attestations", template: Self.submitPath, token: red,
                json: AttestationTests.body(AttestationTests.healthy))
            #expect(again.status == 409)
            #expect(try await outbox().count == 4)
        }
    }

    @Test func aCampusesEnabledRuleAndItsSettingsDecideTheBadge() async throws {
        let clock = try TestClock("2026-11-20T14:00:00Z")
        let (server, campus) = try await AttestationTests.setUp(clock: clock)
        let (_, member) = try await server.user("m@example.edu", at: campus)
        let settings = try JSONDecoder().decode(
            JSONValue.self,
            from: Data(
                #"""
                {"rules": [{"when": {"question": "cough", "equals": true}, "color": "red", "reason": "Coughing: stay home today"}],
                 "default": {"color": "green", "reason": "Fine"}}
                """#.utf8))
        try await CampusPluginStore(client: server.pool).enable(
            campus: campus, kind: .badgeRule, id: "standard", settings: settings, actor: "test")
        try await server.run { api in
            let reply = try await api.send(
                .post, "/v1/campuses/north/attestations", template: Self.submitPath, token: member,
                json: AttestationTests.body(#"{"fever": true, "cough": true}"#))
            let badge = reply.json["badge"] as? [String: Any]
            #expect(badge?["color"] as? String == "red")
            #expect(badge?["reason"] as? String == "Coughing: stay home today")
        }
    }
}
