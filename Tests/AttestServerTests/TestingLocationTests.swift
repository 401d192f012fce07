import AttestPlugins
import AttestPostgres
import AttestServer
import AttestTestSupport
import BuiltinPlugins
import Community
import Foundation
import Hummingbird
import Synchronization
import Tenancy
import Testing

/// A JSON feed of locations on loopback whose answer a test changes.
final class LocationFeed: Sendable {
    final class State: Sendable {
        let answer = Mutex<(status: Int, body: String)>((200, "[]"))
        let fetches = Mutex(0)
    }

    let port: Int
    let state: State
    private let task: Task<Void, any Error>

    private init(port: Int, state: State, task: Task<Void, any Error>) {
        self.port = port
        self.state = state
        self.task = task
    }

    static func start() async throws -> LocationFeed {
        let state = State()
        let router = Router()
        router.get("feed") { _, _ -> Response in
            state.fetches.withLock { $0 += 1 }
            let (status, body) = state.answer.withLock { $0 }
            return Response(
                status: .init(code: status), headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: body)))
        }
        let (port, task) = try await startLoopbackServer(router)
        return LocationFeed(port: port, state: state, task: task)
    }

    func stop() async {
        task.cancel()
        _ = try? await task.value
    }
}

@Suite("Testing locations")
struct TestingLocationTests {
    static let path = "/v1/campuses/{campus}/testing-locations"

    struct Broken: TestingLocationProvider {
        struct Failure: Error {}
        func locations(context: PluginContext) async throws -> ProvidedLocations { throw Failure() }
    }

    struct Slow: TestingLocationProvider {
        func locations(context: PluginContext) async throws -> ProvidedLocations {
            try await Task.sleep(for: .seconds(30))
            return ProvidedLocations(locations: [TestingLocation(name: "Too late", latitude: 0, longitude: 0)])
        }
    }

    @Test func providersMergeNearestFirstAndAFailingSlowOrDownFeedDoesNotFailTheRequest() async throws {
        var registry = PluginRegistry.builtin
        registry.registerTestingLocationProvider(id: "broken") { _ in Broken() }
        registry.registerTestingLocationProvider(id: "slow") { _ in Slow() }
        // Each provider gets the server's community data budget, here 8 s (2 s by default):
        // CI's busiest minute has taken longer than 2 s for a loopback feed.
        var configuration = ServerConfiguration.loopback
        configuration.communityDataBudget = .seconds(8)
        let server = try await TestServer.make(registry: registry, configuration: configuration)
        let campus = try await server.campus("north")
        let (_, member) = try await server.user("m@example.edu", at: campus)
        let feed = try await LocationFeed.start()
        feed.state.answer.withLock {
            $0 = (
                200,
                #"[{"name": "Feed Far", "lat": 41.0, "lon": -74.0}, {"name": "Feed Near", "lat": 40.75, "lon": -73.99, "hours": "24/7"}]"#
            )
        }
        _ = try await TestingLocationStore(client: server.pool).add(
            campus: campus,
            [
                TestingLocation(name: "Static Mid", latitude: 40.80, longitude: -73.96),
                TestingLocation(name: "Static Remote", latitude: 34.05, longitude: -118.24),
            ],
            actor: "test")
        let plugins = CampusPluginStore(client: server.pool)
        for (id, settings) in [
            ("static", JSONValue.null),
            ("json-feed", .object(["url": .string("http://127.0.0.1:\(feed.port)/feed"), "ttlSeconds": .number(40)])),
            ("broken", .null), ("slow", .null),
        ] {
            try await plugins.enable(campus: campus, kind: .testingLocations, id: id, settings: settings, actor: "test")
        }
        try await server.run { api in
            // Times Square: Feed Near, Static Mid, Feed Far, Static Remote.
            let asked = ContinuousClock.now
            let near = try await api.send(
                .get, "/v1/campuses/north/testing-locations?lat=40.758&lon=-73.9855", template: Self.path, token: member)
            let waited = ContinuousClock.now - asked
            #expect(near.status == 200)
            #expect(waited >= .seconds(8) && waited < .seconds(30), "the slow provider is cut off at the budget: \(waited)")
            let items = try #require(near.json["locations"] as? [[String: Any]])
            #expect(items.compactMap { $0["name"] as? String } == ["Feed Near", "Static Mid", "Feed Far", "Static Remote"])
            let distances = items.compactMap { $0["distanceKm"] as? Double }
            #expect(distances == distances.sorted() && distances.count == 4)
            #expect(abs(distances[3] - 3_937) < 15)  // New York to Los Angeles, great circle
            #expect(near.json["unavailable"] as? [String] == ["broken", "slow"])
            #expect(items.first?["provider"] as? String == "json-feed" && items.first?["hours"] as? String == "24/7")

            let byName = try await api.send(.get, "/v1/campuses/north/testing-locations?limit=2", template: Self.path, token: member)
            #expect((byName.json["locations"] as? [[String: Any]])?.compactMap { $0["name"] as? String } == ["Feed Far", "Feed Near"])

            // The feed goes down: after its TTL the last good copy is served, marked stale. (The
            // TTL is long enough for the two requests above, each waiting 8 s for `slow`, on a
            // loaded machine: with 6 s and 2 s waits, CI once saw the second request fetch again.)
            feed.state.answer.withLock { $0 = (500, "oops") }
            try await Task.sleep(until: asked + .seconds(50))
            let stale = try await api.send(.get, "/v1/campuses/north/testing-locations", template: Self.path, token: member)
            let fromFeed = ((stale.json["locations"] as? [[String: Any]]) ?? []).filter { $0["provider"] as? String == "json-feed" }
            #expect(fromFeed.count == 2 && fromFeed.allSatisfy { $0["stale"] as? Bool == true })
            #expect(feed.state.fetches.withLock { $0 } == 2)  // the second request was served from the cache

            for (query, field) in [
                ("lat=91&lon=0", "lat"), ("lat=10", "lon"), ("lat=abc&lon=1", "lat"), ("lat=1&lon=181", "lon"), ("limit=0", "limit"),
            ] {
                let bad = try await api.send(.get, "/v1/campuses/north/testing-locations?\(query)", template: Self.path, token: member)
                #expect(bad.status == 422 && bad.problem.fields == [field], "\(query)")
            }
        }
        await feed.stop()
    }

    @Test func aCampusWithNoProviderEnabledServesItsOwnLocations() async throws {
        let server = try await TestServer.make()
        let campus = try await server.campus("north")
        let (_, member) = try await server.user("m@example.edu", at: campus)
        _ = try await TestingLocationStore(client: server.pool).add(
            campus: campus, [TestingLocation(name: "Clinic", latitude: 1, longitude: 2)], actor: "test")
        try await server.run { api in
            let reply = try await api.send(.get, "/v1/campuses/north/testing-locations", template: Self.path, token: member)
            #expect((reply.json["locations"] as? [[String: Any]])?.compactMap { $0["name"] as? String } == ["Clinic"])
            #expect((reply.json["unavailable"] as? [String]) == [])
        }
    }

    @Test func importsNameTheirBadLineAndAcceptCSVOrJSON() throws {
        let csv = """
            name,address,lat,lon,hours
            Clinic,"1 Main St, Springfield",40.1,-73.2,9-5
            Lab,,91,0,
            """
        #expect(throws: TestingLocationStore.ImportError.self) { try TestingLocationStore.parse(Data(csv.utf8)) }
        /// What parsing `text` throws, as text: the parser must refuse it.
        func refusal(_ text: String) -> String {
            let error = #expect(throws: TestingLocationFileError.self) { try TestingLocationStore.parse(Data(text.utf8)) }
            return error.map { "\($0)" } ?? ""
        }
        #expect(refusal(csv).contains("line 3: lat must be between -90 and 90"))
        let good = try TestingLocationStore.parse(Data("name,lat,lon,address\nClinic,40.1,-73.2,\"1 Main St, Springfield\"\n".utf8))
        #expect(good == [TestingLocation(name: "Clinic", address: "1 Main St, Springfield", latitude: 40.1, longitude: -73.2)])
        #expect(refusal("name,address\nX,Y\n").contains("needs a lat column"))
        // As a spreadsheet in a Spanish locale saves "CSV": semicolons, said so.
        #expect(
            refusal("name;lat;lon\nClinic;40,1;-73,2\n").contains(
                "needs a name column (name,address,lat,lon,hours,phone,url,notes) (the line is separated by semicolons: save the file as CSV separated by commas)"
            ))
        #expect(!refusal("name,address\nX;Y,Z\n").contains("semicolons"))
        #expect(refusal("name,lat,lon\nX,north,1\n").contains("line 2: lat and lon must be numbers"))
        let json = try TestingLocationStore.parse(Data(#"[{"name": "A", "lat": 1, "lon": 2, "phone": "555"}]"#.utf8))
        #expect(json.first?.phone == "555")
        #expect(refusal(#"[{"name": "A", "lat": 1, "lon": 2}, {"name": "B"}]"#).contains("line 2"))
        // A link a page will show must be a web address, never javascript: or data:.
        #expect(refusal("name,lat,lon,url\nX,1,2,javascript:alert(1)\n").contains("line 2: url must be an http or https address"))
        #expect(
            refusal(#"[{"name": "A", "lat": 1, "lon": 2, "url": "data:text/html,x"}]"#).contains("url must be an http or https address"))
        #expect(try TestingLocationStore.parse(Data("name,lat,lon,url\nX,1,2,https://clinic.example.org/a?b=c\n".utf8)).count == 1)
    }

    @Test func aJSONFeedMustBeHTTPS() {
        for url in ["http://feeds.example.org/locations.json", "ftp://feeds.example.org/x", "javascript:alert(1)", "/relative"] {
            #expect(throws: PluginSettingsError.self, "\(url)") { try JSONFeedProvider(settings: .object(["url": .string(url)])) }
        }
        #expect(throws: Never.self) {
            try JSONFeedProvider(settings: .object(["url": .string("https://feeds.example.org/locations.json")]))
        }
    }
}
