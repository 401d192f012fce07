import AttestPlugins
import AttestPluginsTesting
import AttestPostgres
import AttestTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import Journal
import Synchronization
import Tenancy
import Testing

@Suite("Episodes")
struct EpisodeTests {
    static let list = "/v1/campuses/{campus}/me/episodes"
    static let one = "/v1/campuses/{campus}/me/episodes/{id}"
    static let stop = "/v1/campuses/{campus}/me/episodes/{id}/stop"
    static let summary = "/v1/campuses/{campus}/me/episodes/summary"

    @Test func aMemberStartsStopsEditsAndDeletesEpisodesOneOpenAKind() async throws {
        let clock = try TestClock("2026-11-20T14:00:00Z")
        let server = try await TestServer.make(clock: clock.read)
        let north = try await server.campus("north")
        let (_, member) = try await server.user("m@example.edu", at: north)
        let (_, neighbour) = try await server.user("n@example.edu", at: north, roles: [.admin, .healthOfficer])
        _ = try await CampusStore(client: server.pool).set(
            slug: "north", key: "settings", value: #"{"episodeKinds": ["cluster-headache"]}"#, actor: "test")
        try await server.run { api in
            let started = try await api.send(
                .post, "/v1/campuses/north/me/episodes", template: Self.list, token: member,
                json: #"{"kind": "headache", "severity": 6, "notes": "left temple", "location": {"lat": 40.7536, "lon": -73.9832}}"#)
            #expect(started.status == 201, "\(started.body)")
            let id = try #require(started.json["id"] as? String)
            #expect(started.headers[.location] == "/v1/campuses/north/me/episodes/\(id)")
            #expect((started.json["location"] as? [String: Double]) == ["lat": 40.8, "lon": -74.0])  // a tenth of a degree, no finer
            #expect(started.json["stoppedAt"] is NSNull && started.json["context"] is NSNull && started.json["durationMinutes"] is NSNull)
            #expect(started.json["startedAt"] as? String == "2026-11-20T14:00:00Z")

            let again = try await api.send(
                .post, "/v1/campuses/north/me/episodes", template: Self.list, token: member, json: #"{"kind": "headache", "severity": 3}"#)
            #expect(again.status == 409 && again.problem.type == "/problems/episode-open" && again.problem.detail.contains(id))
            clock.advance(by: 1)
            let other = try await api.send(
                .post, "/v1/campuses/north/me/episodes", template: Self.list, token: member,
                json: #"{"kind": "cluster-headache", "severity": 9}"#)
            #expect(other.status == 201, "the campus's own kind: \(other.body)")

            clock.advance(by: 90 * 60)
            let stopped = try await api.send(.post, "/v1/campuses/north/me/episodes/\(id)/stop", template: Self.stop, token: member)
            #expect(stopped.status == 200 && stopped.json["durationMinutes"] as? Int == 90 && stopped.json["autoClosed"] as? Bool == false)
            let twice = try await api.send(
                .post, "/v1/campuses/north/me/episodes/\(id)/stop", template: Self.stop, token: member, json: "{}")
            #expect(twice.status == 409 && twice.problem.type == "/problems/episode-stopped")
            // Stopped, a new headache may start.
            let next = try await api.send(
                .post, "/v1/campuses/north/me/episodes", template: Self.list, token: member, json: #"{"kind": "headache", "severity": 2}"#)
            #expect(next.status == 201)

            let patched = try await api.send(
                .patch, "/v1/campuses/north/me/episodes/\(id)", template: Self.one, token: member,
                json: #"{"severity": 8, "notes": "worse in the afternoon", "stoppedAt": "2026-11-20T15:15:00Z"}"#)
            #expect(
                patched.status == 200 && patched.json["severity"] as? Int == 8 && patched.json["durationMinutes"] as? Int == 75,
                "\(patched.body)")
            #expect(
                patched.json["notes"] as? String == "worse in the afternoon"
                    && (patched.json["location"] as? [String: Double])?["lat"] == 40.8)
            for (body, field) in [
                (#"{"stoppedAt": "2026-11-20T13:00:00Z"}"#, "stoppedAt"), (#"{"stoppedAt": "2026-11-20T18:00:00Z"}"#, "stoppedAt"),
                (#"{"stoppedAt": null}"#, "stoppedAt"),
                (#"{"kind": "sneeze"}"#, "kind"), (#"{"location": {"lat": 1, "lon": 2}}"#, "location"),
            ] {
                let refused = try await api.send(
                    .patch, "/v1/campuses/north/me/episodes/\(id)", template: Self.one, token: member, json: body)
                #expect(refused.status == 422 && refused.problem.fields == [field], "\(body): \(refused.body)")
            }

            let starts: [(String, [String])] = [
                (#"{}"#, ["kind", "severity"]), (#"{"kind": "headache", "severity": 11}"#, ["severity"]),
                (#"{"kind": "headache", "severity": 2.5}"#, ["severity"]), (#"{"kind": "headache", "severity": "5"}"#, ["severity"]),
                (#"{"kind": "migraine", "severity": 1, "startedAt": "2026-11-21T00:00:00Z"}"#, ["startedAt"]),
                (#"{"kind": "migraine", "severity": 1, "startedAt": "yesterday"}"#, ["startedAt"]),
                (#"{"kind": "migraine", "severity": 1, "notes": "\#(String(repeating: "n", count: 2_001))"}"#, ["notes"]),
                (#"{"kind": "migraine", "severity": 1, "location": {"lat": 91, "lon": 0}}"#, ["location"]),
                (#"{"kind": "migraine", "severity": 1, "mood": "low"}"#, ["mood"]),
                (#"{"kind": "Migraine", "severity": 1}"#, ["kind"]),
            ]
            for (body, fields) in starts {
                let refused = try await api.send(.post, "/v1/campuses/north/me/episodes", template: Self.list, token: member, json: body)
                #expect(refused.status == 422 && refused.problem.fields.sorted() == fields, "\(body): \(refused.body)")
            }

            // Left open for more than 72 h: closed at 72 h, flagged.
            let migraine = try await api.send(
                .post, "/v1/campuses/north/me/episodes", template: Self.list, token: member, json: #"{"kind": "migraine", "severity": 5}"#)
            let migraineID = try #require(migraine.json["id"] as? String)
            clock.advance(by: 73 * 3600)
            let page = try await api.send(.get, "/v1/campuses/north/me/episodes?limit=10", template: Self.list, token: member)
            let items = try #require(page.json["items"] as? [[String: Any]])
            #expect(items.count == 4)
            let closed = try #require(items.first { $0["id"] as? String == migraineID })
            #expect(closed["autoClosed"] as? Bool == true && closed["durationMinutes"] as? Int == 72 * 60)
            #expect(items.filter { $0["autoClosed"] as? Bool == true }.count == 3)  // the cluster headache and the second headache too
            let paged = try await api.send(.get, "/v1/campuses/north/me/episodes?limit=3", template: Self.list, token: member)
            let cursor = try #require(paged.json["nextCursor"] as? String)
            let rest = try await api.send(
                .get, "/v1/campuses/north/me/episodes?limit=3&cursor=\(cursor)", template: Self.list, token: member)
            #expect((rest.json["items"] as? [[String: Any]])?.compactMap { $0["id"] as? String } == [id])

            // Only the member: an administrator and health officer of the campus finds nothing.
            #expect((try await api.send(.get, "/v1/campuses/north/me/episodes/\(id)", template: Self.one, token: neighbour)).status == 404)
            #expect(
                (try await api.send(.post, "/v1/campuses/north/me/episodes/\(migraineID)/stop", template: Self.stop, token: neighbour))
                    .status == 404)
            let theirs = try await api.send(.get, "/v1/campuses/north/me/episodes", template: Self.list, token: neighbour)
            #expect((theirs.json["items"] as? [[String: Any]])?.isEmpty == true)

            #expect((try await api.send(.delete, "/v1/campuses/north/me/episodes/\(id)", template: Self.one, token: member)).status == 204)
            #expect((try await api.send(.get, "/v1/campuses/north/me/episodes/\(id)", template: Self.one, token: member)).status == 404)
        }
    }

    /// A weather feed on loopback: what it answers for an hour, how long it waits, what it was asked.
    final class Weather: Sendable {
        let asked = Mutex<[String]>([])
        let status = Mutex(200)
        let delay = Mutex(Duration.zero)
        let answers: [String: String]

        init(answers: [String: String]) { self.answers = answers }
    }

    @Test func theWeatherAtTheStartAndADayEarlierComesFromTheCampusProviderAndItsFailuresFailNothing() async throws {
        let clock = try TestClock("2026-11-20T14:25:00Z")
        let server = try await TestServer.make(clock: clock.read)
        let north = try await server.campus("north")
        let (_, member) = try await server.user("m@example.edu", at: north)
        let weather = Weather(answers: [
            "2026-11-20T14:00:00Z": #"{"temperature": 20.5, "humidity": 50, "uvIndex": 2, "windSpeed": 3.5}"#,
            "2026-11-19T14:00:00Z": #"{"temperature": 10, "humidity": 70, "uvIndex": null, "airQuality": 5000}"#,
        ])
        let router = Router()
        router.get("weather") { request, _ -> Response in
            weather.asked.withLock { $0.append(request.uri.query ?? "") }
            let delay = weather.delay.withLock { $0 }
            if delay > .zero { try await Task.sleep(for: delay) }
            let time = request.uri.queryParameters.get("time") ?? ""
            let status = weather.status.withLock { $0 }
            return Response(status: .init(code: status), body: .init(byteBuffer: ByteBuffer(string: weather.answers[time] ?? "{}")))
        }
        let (port, task) = try await startLoopbackServer(router)
        defer { task.cancel() }
        try await CampusPluginStore(client: server.pool).enable(
            campus: north, kind: .context, id: "json-feed",
            settings: .object(["url": .string("http://127.0.0.1:\(port)/weather?lat={lat}&lon={lon}&time={time}")]), actor: "test")
        try await server.run { api in
            let started = try await api.send(
                .post, "/v1/campuses/north/me/episodes", template: Self.list, token: member,
                json: #"{"kind": "headache", "severity": 4, "location": {"lat": 40.7536, "lon": -73.9832}}"#)
            #expect(started.status == 201, "\(started.body)")
            let context = try #require(started.json["context"] as? [[String: Any]])
            #expect(
                context.map { "\($0["factor"] ?? "") \($0["value"] ?? "") \($0["unit"] ?? "")" } == [
                    "temperature 20.5 °C", "uvIndex 2 index", "humidity 50 %", "windSpeed 3.5 m/s",
                ])
            let baseline = try #require(started.json["baseline"] as? [[String: Any]])
            // An air quality of 5000 is not plausible: left out.
            #expect(baseline.map { "\($0["factor"] ?? "") \($0["value"] ?? "")" } == ["temperature 10", "humidity 70"])
            // The feed learns the place to a tenth of a degree, never the point given.
            #expect(
                Set(weather.asked.withLock { $0 }) == [
                    "lat=40.8&lon=-74.0&time=2026-11-20T14:00:00Z", "lat=40.8&lon=-74.0&time=2026-11-19T14:00:00Z",
                ])

            // Without a place, the feed is not asked.
            let count = weather.asked.withLock { $0.count }
            let noPlace = try await api.send(
                .post, "/v1/campuses/north/me/episodes", template: Self.list, token: member, json: #"{"kind": "migraine", "severity": 4}"#)
            #expect(noPlace.status == 201 && noPlace.json["context"] is NSNull && weather.asked.withLock { $0.count } == count)

            // A feed that fails, or is too slow: the episode is kept, without context.
            clock.advance(by: 3 * 3600)  // another hour: nothing kept for it
            weather.status.withLock { $0 = 500 }
            let down = try await api.send(
                .post, "/v1/campuses/north/me/episodes", template: Self.list, token: member,
                json: #"{"kind": "migraine", "severity": 1, "location": {"lat": 10, "lon": 10}}"#)
            #expect(down.status == 409)  // the migraine above is still open
            let stopped = try await api.send(
                .post, "/v1/campuses/north/me/episodes/\(try #require(noPlace.json["id"] as? String))/stop", template: Self.stop,
                token: member)
            #expect(stopped.status == 200)
            let failed = try await api.send(
                .post, "/v1/campuses/north/me/episodes", template: Self.list, token: member,
                json: #"{"kind": "migraine", "severity": 1, "location": {"lat": 10, "lon": 10}}"#)
            #expect(failed.status == 201 && failed.json["context"] is NSNull && failed.json["baseline"] is NSNull, "\(failed.body)")
            weather.status.withLock { $0 = 200 }
            weather.delay.withLock { $0 = .seconds(20) }
            let begun = ContinuousClock.now
            let slow = try await api.send(
                .post, "/v1/campuses/north/me/episodes", template: Self.list, token: member,
                json: #"{"kind": "headache", "severity": 1, "location": {"lat": 20, "lon": 20}}"#)
            #expect(slow.status == 409)  // the first headache is open too
            #expect(
                (try await api.send(
                    .post, "/v1/campuses/north/me/episodes/\(try #require(started.json["id"] as? String))/stop", template: Self.stop,
                    token: member)).status == 200)
            let late = try await api.send(
                .post, "/v1/campuses/north/me/episodes", template: Self.list, token: member,
                json: #"{"kind": "headache", "severity": 1, "location": {"lat": 20, "lon": 20}}"#)
            #expect(late.status == 201 && late.json["context"] is NSNull)
            // Neither answer waited for the feed's 20 s (the provider's deadline cut it short); the
            // margin is for a loaded machine, where three requests took 12 s.
            #expect(ContinuousClock.now - begun < .seconds(18))
        }
    }

    @Test func theSummaryAgreesWithHandComputedDurationsAndFactorAverages() async throws {
        let clock = try TestClock("2026-11-20T17:00:00Z")
        let server = try await TestServer.make(clock: clock.read)
        let north = try await server.campus("north")
        let (author, member) = try await server.user("m@example.edu", at: north)
        let store = server.services.episodes
        func at(_ text: String) throws -> Date { try Date(text, strategy: .iso8601) }
        let rows: [(String, String?, Double?, Double?)] = [
            ("2026-10-05T12:00:00Z", "2026-10-05T13:00:00Z", 20, 18),  // 60 min
            ("2026-10-20T12:00:00Z", "2026-10-20T14:00:00Z", 24, 18),  // 120 min
            ("2026-11-02T12:00:00Z", "2026-11-02T12:30:00Z", 10, 14),  // 30 min
            ("2026-11-19T12:00:00Z", nil, nil, nil),  // open, within 72 h
            ("2026-09-30T12:00:00Z", "2026-09-30T13:00:00Z", 99, 99),  // before the range
        ]
        for (index, row) in rows.enumerated() {
            let draft = EpisodeDraft(
                kind: index == 3 ? "migraine" : "headache", severity: 5, startedAt: try at(row.0), stoppedAt: try row.1.map(at))
            _ = try await store.start(
                campus: north.id, user: author.id, draft, context: row.2.map { EnvironmentFactors(temperature: $0) },
                baseline: row.3.map { EnvironmentFactors(temperature: $0, humidity: 40) }, now: clock.read())
        }
        try await server.run { api in
            let reply = try await api.send(
                .get, "/v1/campuses/north/me/episodes/summary?from=2026-10-01&to=2026-11-30", template: Self.summary, token: member)
            #expect(reply.status == 200, "\(reply.body)")
            let total = try #require(reply.json["total"] as? [String: Any])
            #expect(
                total["count"] as? Int == 4 && total["closed"] as? Int == 3 && total["totalMinutes"] as? Int == 210
                    && total["averageMinutes"] as? Double == 70)
            let factors = try #require(total["factors"] as? [[String: Any]])
            let temperature = try #require(factors.first { $0["factor"] as? String == "temperature" })
            #expect(
                temperature["during"] as? Double == 18 && temperature["baseline"] as? Double == 16.7
                    && temperature["unit"] as? String == "°C")
            let humidity = try #require(factors.first { $0["factor"] as? String == "humidity" })
            #expect(humidity["during"] is NSNull && humidity["baseline"] as? Double == 40)
            let months = try #require(reply.json["months"] as? [[String: Any]])
            #expect(months.compactMap { $0["month"] as? String } == ["2026-10", "2026-11"])
            #expect(months[0]["count"] as? Int == 2 && months[0]["averageMinutes"] as? Double == 90)
            #expect(months[1]["count"] as? Int == 2 && months[1]["closed"] as? Int == 1 && months[1]["totalMinutes"] as? Int == 30)
            let november = try #require(months[1]["factors"] as? [[String: Any]]).first { $0["factor"] as? String == "temperature" }
            #expect(november?["during"] as? Double == 10 && november?["baseline"] as? Double == 14)

            let empty = try await api.send(
                .get, "/v1/campuses/north/me/episodes/summary?from=2025-01-01&to=2025-01-31", template: Self.summary, token: member)
            #expect(
                (empty.json["total"] as? [String: Any])?["count"] as? Int == 0
                    && (empty.json["total"] as? [String: Any])?["averageMinutes"] is NSNull)
            for query in ["from=2026-11-30&to=2026-10-01", "from=2024-01-01&to=2026-01-02", "from=October"] {
                let bad = try await api.send(.get, "/v1/campuses/north/me/episodes/summary?\(query)", template: Self.summary, token: member)
                #expect(bad.status == 422, "\(query)")
            }
        }
    }
}
