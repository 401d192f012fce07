import AttestPlugins
import AttestPluginsTesting
import AttestTestSupport
import Community
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

@Suite("Query strings")
struct QueryStringTests {
    /// A valid value of each query parameter the API document names.
    static let samples = [
        "from": "2026-11-20", "to": "2026-11-20", "date": "2026-11-20", "color": "red", "limit": "5", "cursor": "2026-11-21",
        "lat": "40.7", "lon": "-73.9", "region": "99001", "search": "alpha", "format": "json",
        "profile": "true", "unmatched": "true", "status": "pending",
    ]
    /// Where a route's parameter takes another form than `samples` gives.
    static let routeSamples = [
        "/v1/campuses/{campus}/admin/follow-ups": ["cursor": "r.1795341600000000.00000000-0000-0000-0000-000000000000"],
        "/v1/campuses/{campus}/me/journal": ["cursor": "2026-11-21.00000000-0000-0000-0000-000000000000"],
        "/v1/campuses/{campus}/me/episodes": ["cursor": "1795341600000000.00000000-0000-0000-0000-000000000000"],
    ]

    /// DESIGN §9, bad input: on every route of the API document that takes query parameters,
    /// the documented ones are all accepted, a parameter it does not take is a 422 naming it,
    /// and so is any parameter given twice or without a name; nothing is read or audited for a
    /// refused request. Routes added later are tried too, since the list comes from `/openapi.yaml`.
    @Test func everyRouteRefusesAnUnknownOrRepeatedParameter() async throws {
        let clock = try TestClock("2026-11-20T14:00:00Z")
        let (server, north) = try await AttestationTests.setUp(clock: clock)
        let (everyone, token) = try await server.user("all@example.edu", at: north, roles: [.screener, .healthOfficer, .admin])
        // A shared link, so that its view answers 200.
        let shareToken = try await JournalShareStore(client: server.pool).create(
            campus: north.id, user: everyone.id, actor: "test", from: LocalDate("2026-11-01")!, to: LocalDate("2026-11-20")!,
            seconds: 86_400,
            now: clock.read()
        ).token
        // An unsubscribe link, so that its page answers 200.
        let unsubscribeToken = UnsubscribeTokens(campusSecret: try await server.services.badges.keys.subjectKey(campus: north.id)).token(
            campus: north.id, user: everyone.id, channel: .email)
        // Community data, so that its routes answer 200 to their documented parameters.
        let owner = TestDatabase.client(database: server.database, role: nil)
        _ = try await CommunityStore(client: owner).replace(
            dataset: "testland",
            with: try CommunityDataset.parseCumulativeCSV(
                Data(CommunityDataTests.cumulativeCSV(end: LocalDate("2026-11-20")!).utf8),
                population: Data(CommunityDataTests.population.utf8)))
        await owner.shutdown()
        try await CampusPluginStore(client: server.pool).enable(
            campus: north, kind: .communityData, id: "imported", settings: .object(["dataset": .string("testland")]), actor: "test")

        var routes: [(template: String, parameters: [String])] = []
        for path in OpenAPIDocument.value["paths"]?.members ?? [] {
            guard let get = path.value["get"] else { continue }
            let query = (Self.items(path.value["parameters"]) + Self.items(get["parameters"]))
                .filter { $0["in"] == "query" }.compactMap { $0["name"]?.stringValue }
            if !query.isEmpty { routes.append((path.key, query)) }
        }
        #expect(
            Set(routes.map(\.template)).isSuperset(of: [
                "/v1/campuses/{campus}/stats", "/v1/campuses/{campus}/admin/dashboard", "/v1/campuses/{campus}/admin/follow-ups",
                "/v1/campuses/{campus}/me/attestations", "/v1/campuses/{campus}/testing-locations",
                "/v1/campuses/{campus}/community", "/v1/campuses/{campus}/community/regions",
            ]))

        let found = routes
        try await server.run { api in
            for (template, parameters) in found {
                let path = template.replacingOccurrences(of: "{campus}", with: "north").replacingOccurrences(
                    of: "{token}", with: shareToken)
                var pairs: [String] = []
                for name in parameters {
                    let value = try #require(
                        template.hasSuffix("/unsubscribe") ? unsubscribeToken : Self.routeSamples[template]?[name] ?? Self.samples[name],
                        "no sample value for \(template)'s \(name)")
                    pairs.append("\(name)=\(value)")
                }
                let base = path + "?" + pairs.joined(separator: "&")
                let accepted = try await api.send(.get, base, template: template, token: token)
                #expect(accepted.status == 200, "\(base): \(accepted.body)")

                // Empty segments hold no parameter.
                let empty = try await api.send(.get, path + "?&" + pairs.joined(separator: "&&") + "&", template: template, token: token)
                #expect(empty.status == 200, "\(template) with empty segments: \(empty.body)")

                let audited = try await Self.auditCount(server, north)
                let unknown = try await api.send(.get, base + "&colour=red", template: template, token: token)
                #expect(unknown.status == 422 && unknown.problem.fields == ["colour"], "\(template): \(unknown.body)")
                #expect(unknown.problem.detail.contains(QueryParameters.list(parameters)), "\(unknown.problem.detail)")
                for (name, pair) in zip(parameters, pairs) {
                    let repeated = try await api.send(.get, base + "&" + pair, template: template, token: token)
                    #expect(repeated.status == 422 && repeated.problem.fields == [name], "\(template), \(name) twice: \(repeated.body)")
                    #expect(repeated.problem.detail.contains("more than once"), "\(repeated.problem.detail)")
                }
                // Both faults at once: each parameter is named once, in the order it came.
                let all = try await api.send(.get, base + "&" + pairs[0] + "&x=1&x=2&" + pairs[0], template: template, token: token)
                #expect(all.status == 422 && all.problem.fields == [parameters[0], "x"], "\(template): \(all.body)")
                // A value without a name is named by what was sent.
                let nameless = try await api.send(.get, base + "&=2026-11-20", template: template, token: token)
                #expect(nameless.status == 422 && nameless.problem.fields == ["=2026-11-20"], "\(template): \(nameless.body)")
                #expect(nameless.problem.detail.contains("=2026-11-20: is a parameter without a name"), "\(nameless.problem.detail)")
                #expect(try await Self.auditCount(server, north) == audited, "\(template): a refused request was audited")
            }
        }
    }

    @Test func theProblemsNameTheParametersInPlainWords() {
        #expect(QueryParameters.list(["date"]) == "date")
        #expect(QueryParameters.list(["from", "to"]) == "from and to")
        #expect(QueryParameters.list(["lat", "lon", "limit"]) == "lat, lon and limit")
    }

    static func items(_ value: OpenAPIValue?) -> [OpenAPIValue] {
        if case .array(let items)? = value { return items }
        return []
    }

    static func auditCount(_ server: TestServer, _ campus: Campus) async throws -> Int {
        try await AuditLog(client: server.pool).entries(campus: campus.id).count
    }

    /// Thousands of stray parameters get a short answer: the first problems and a count of the
    /// rest, not a response a hundred times the request's size.
    @Test func aFloodOfStrayParametersGetsAShortAnswer() async throws {
        let clock = try TestClock("2026-11-20T14:00:00Z")
        let (server, north) = try await AttestationTests.setUp(clock: clock)
        let (_, token) = try await server.user("m@example.edu", at: north)
        try await server.run { api in
            let flood = (0..<3_000).map { "p\($0)=1" }.joined(separator: "&")
            let reply = try await api.send(
                .get, "/v1/campuses/north/stats?from=2026-11-20&to=2026-11-20&" + flood, template: "/v1/campuses/{campus}/stats",
                token: token)
            #expect(reply.status == 422)
            #expect(reply.problem.fields.count == Problem.maxFieldErrors + 1)
            #expect(reply.problem.fields.last == "(more)")
            #expect(reply.problem.detail.contains("and 2980 more problems"))
            #expect(reply.body.utf8.count < 8_000, "\(reply.body.utf8.count) bytes")
        }
    }
}
