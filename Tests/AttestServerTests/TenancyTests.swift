@testable import AttestHTTP
import AttestTestSupport
import Foundation
import HTTPTypes
import Identity
import Surveys
import Tenancy
import Testing
import AttestPluginsTesting

@Suite("Tenancy")
struct TenancyTests {
    /// DESIGN §9: every campus route of the API document, tried with another campus's token
    /// (one holding every role) and with a slug no campus has. Routes added later are tried
    /// too, since the list comes from `/openapi.yaml`.
    @Test func everyCampusRouteRefusesAnotherCampusesTokenAndAnUnknownSlug() async throws {
        let clock = try TestClock("2026-11-20T14:00:00Z")
        let (server, north) = try await AttestationTests.setUp(clock: clock)
        let south = try await server.campus("south")
        _ = try await QuestionnaireStore(client: server.pool).publish(campus: south, draft: AttestationTests.draft, actor: "test")
        let (_, member) = try await server.user("n@example.edu", at: north)
        let (_, outsider) = try await server.user("s@example.edu", at: south, roles: [.screener, .healthOfficer, .admin])

        var documented: [(method: HTTPRequest.Method, template: String, secured: Bool)] = []
        for path in OpenAPIDocument.value["paths"]?.members ?? [] where path.key.hasPrefix("/v1/campuses/{campus}/") {
            for operation in path.value.members where operation.key != "parameters" {
                let method = try #require(HTTPRequest.Method(operation.key.uppercased()))
                documented.append((method, path.key, operation.value["security"] != nil))
            }
        }
        let operations = documented
        #expect(operations.count >= 13)
        #expect(operations.filter(\.secured).count >= 11)

        try await server.run { api in
            // Something at each campus to leak: a submission each, and south's badge.
            for (campus, token) in [("north", member), ("south", outsider)] {
                let submitted = try await api.send(
                    .post, "/v1/campuses/\(campus)/attestations", template: AttestationTests.path, token: token,
                    json: AttestationTests.body(AttestationTests.healthy))
                #expect(submitted.status == 201)
            }
            let badge = try await api.send(.get, "/v1/campuses/south/me/badge", template: BadgeTests.badgePath, token: outsider)
            let southBadge = try #require(badge.json["token"] as? String)

            for (method, template, secured) in operations {
                // A request each handler would accept from the right person.
                let query = method == .get ? "?from=2026-11-20&to=2026-11-20&date=2026-11-20&color=red" : ""
                var body: String?
                if method == .post {
                    if template.hasSuffix("/attestations") {
                        body = AttestationTests.body(AttestationTests.healthy)
                    } else if template.hasSuffix("/badges/verify") {
                        body = #"{"token": "\#(southBadge)"}"#
                    } else {
                        body = #"{"idToken": "not.a.token"}"#
                    }
                }
                if secured {
                    let path = template.replacingOccurrences(of: "{campus}", with: "north") + query
                    let reply = try await api.send(method, path, template: template, token: outsider, json: body)
                    #expect(reply.status == 401, "\(method) \(template) with south's token")
                    #expect(!reply.body.contains("example.edu"), "\(method) \(template): \(reply.body)")
                }
                let unknown = template.replacingOccurrences(of: "{campus}", with: "nowhere") + query
                let missing = try await api.send(method, unknown, template: template, token: outsider, json: body)
                #expect(missing.status == 404, "\(method) \(template) at an unknown campus")
            }

            // The attempts stored nothing at north, and signing out there did not end the
            // session at south.
            #expect(try await AttestationTests.count(server, north) == 1)
            let me = try await api.send(.get, "/v1/campuses/south/me", template: "/v1/campuses/{campus}/me", token: outsider)
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
