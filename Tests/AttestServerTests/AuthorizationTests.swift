import AttestPluginsTesting
import AttestTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import Identity
import Tenancy
import Testing

@testable import AttestAPI
@testable import AttestServer
@testable import AttestWeb

@Suite("Authentication and roles")
struct AuthorizationTests {
    @Test func missingMalformedUnknownAndExpiredTokensAre401() async throws {
        let server = try await TestServer.make()
        let campus = try await server.campus("west")
        let (user, _) = try await server.user("w@example.edu", at: campus)
        let expired = try await SessionStore(client: server.pool).issue(campus: campus, user: user.id, lifetime: 1)
        try await Task.sleep(for: .milliseconds(1100))
        try await server.run { api in
            for header in [
                nil, "Basic dXNlcjpwYXNz", "Bearer", "Bearer short", "Bearer " + String(repeating: "A", count: 43),
                "Bearer " + expired.token,
            ] {
                var headers: [String: String] = [:]
                if let header { headers["Authorization"] = header }
                let reply = try await api.client.execute(
                    uri: "/v1/campuses/west/me", method: .get, headers: .init(headers.map { .init(name: .init($0.key)!, value: $0.value) }))
                #expect(reply.status == .unauthorized, "\(header ?? "no header")")
                #expect(reply.headers[.wwwAuthenticate]?.hasPrefix("Bearer realm=\"campus-attest\"") == true)
                #expect(reply.headers[.contentType] == "application/problem+json")
            }
        }
    }

    @Test func roleChecksAnswer403WithTheRoleNeeded() async throws {
        let server = try await TestServer.make()
        let campus = try await server.campus("east")
        let (_, member) = try await server.user("m@example.edu", at: campus)
        let (_, screener) = try await server.user("s@example.edu", at: campus, roles: [.screener])
        let (_, officer) = try await server.user("h@example.edu", at: campus, roles: [.healthOfficer])
        let (_, admin) = try await server.user("a@example.edu", at: campus, roles: [.admin])
        let services = server.services
        let directory = server.services.campuses
        try await server.run(extraRoutes: { router in
            // Probe routes for the mechanism the role-guarded routes of later issues use.
            let group = router.group("probe/:campus").add(middleware: CampusMiddleware(directory: directory))
            group.group("admin").add(middleware: AuthenticationMiddleware(services: services, roles: [.admin])).get { _, _ in "ok" }
            group.group("door").add(middleware: AuthenticationMiddleware(services: services, roles: [.screener, .admin])).get { _, _ in "ok"
            }
            group.group("follow-up").add(middleware: AuthenticationMiddleware(services: services, roles: [.healthOfficer])).get { _, _ in
                "ok"
            }
        }) { api in
            let expectations: [(String, String, Int)] = [
                ("admin", member, 403), ("admin", screener, 403), ("admin", officer, 403), ("admin", admin, 200),
                ("door", member, 403), ("door", screener, 200), ("door", officer, 403), ("door", admin, 200),
                ("follow-up", member, 403), ("follow-up", screener, 403), ("follow-up", admin, 403), ("follow-up", officer, 200),
            ]
            for (path, token, status) in expectations {
                let reply = try await api.client.execute(
                    uri: "/probe/east/\(path)", method: .get, headers: [.authorization: "Bearer \(token)"])
                #expect(Int(reply.status.code) == status, "\(path)")
                if status == 403 {
                    #expect(String(buffer: reply.body).contains("ask a campus administrator"))
                }
            }
        }
    }

    @Test func aRevokedRoleStopsWorkingWithinTheCacheBound() async throws {
        let server = try await TestServer.make()
        let campus = try await server.campus("south")
        let (_, token) = try await server.user("r@example.edu", at: campus, roles: [.admin])
        let sessions = SessionStore(client: server.pool, cacheTTL: .milliseconds(200))
        let before = try await sessions.authenticate(campus: campus.id, token: token)
        #expect(before?.user.roles.contains(.admin) == true)
        try await UserStore(client: server.pool).revoke(campus: campus, email: "r@example.edu", role: .admin, actor: "test")
        try await Task.sleep(for: .milliseconds(300))
        let after = try await sessions.authenticate(campus: campus.id, token: token)
        #expect(after?.user.roles == [.member])
        await server.pool.shutdown()
    }
}

@Suite("OpenAPI document")
struct OpenAPITests {
    @Test func everyRegisteredRouteIsDescribedAndEveryDescribedRouteExists() async throws {
        let server = try await TestServer.make()
        let router = AttestServer.buildRouter(
            configuration: ServerConfiguration(), services: server.services, frontEnds: TestServer.frontEnds)
        // The web pages (`/c/…`) and their static files are HTML for people, not the API; the
        // SCIM service follows RFC 7644 and describes itself (Schemas, ResourceTypes), its
        // section of docs/api.md says what it supports, and scim2-tester checks it.
        let registered = Set(
            router.routes.map { "\($0.method.rawValue.lowercased()) \(OpenAPIValidator.templatePath("\($0.path)"))" }
                .filter { !$0.contains(" /c/") && !$0.contains(" /static/") && !$0.contains(" /scim/v2/") })
        var documented: Set<String> = []
        for path in OpenAPIDocument.value["paths"]?.members ?? [] {
            for operation in path.value.members where operation.key != "parameters" {
                documented.insert("\(operation.key) \(path.key)")
            }
        }
        #expect(registered == documented)
        await server.pool.shutdown()
    }

    @Test func theServedYAMLIsTheDocument() async throws {
        let server = try await TestServer.make()
        try await server.run { api in
            let reply = try await api.send(.get, "/openapi.yaml", template: "/openapi.yaml")
            #expect(reply.status == 200)
            #expect(reply.body == OpenAPIDocument.yaml)
            // The file as libyaml reads it: an OpenAPI 3.1 document whose every $ref resolves.
            let document = try OpenAPIValue(yaml: reply.body)
            #expect(document == OpenAPIDocument.value)
            #expect(document["openapi"] == "3.1.0")
            #expect((document["paths"]?.members.count ?? 0) >= 30)
            #expect(document["paths"]?["/v1/campuses/{campus}/me"]?["get"] != nil)
            var references: [String] = []
            func collect(_ value: OpenAPIValue) {
                switch value {
                case .object(let members):
                    for member in members {
                        if member.key == "$ref", let target = member.value.stringValue {
                            references.append(target)
                        } else {
                            collect(member.value)
                        }
                    }
                case .array(let items): items.forEach(collect)
                default: break
                }
            }
            collect(document)
            #expect(references.count > 100)
            #expect(references.filter { OpenAPIValidator.resolve($0) == nil }.isEmpty)
        }
    }

    /// A documented path asked with a method it does not answer: 405 with `Allow` naming
    /// exactly the documented methods (and HEAD beside GET), as problem+json; an unknown path
    /// stays 404.
    @Test func aPathAskedWithAnotherMethodIs405WithAllow() async throws {
        let server = try await TestServer.make()
        var expected: [(uri: String, allow: String)] = []
        for path in OpenAPIDocument.value["paths"]?.members ?? [] {
            var methods = Set(path.value.members.map(\.key).filter { $0 != "parameters" }.map { $0.uppercased() })
            if methods.contains("GET") { methods.insert("HEAD") }
            let uri = path.key.replacingOccurrences(of: #"\{[^}]+\}"#, with: "x", options: .regularExpression)
            expected.append((uri, methods.sorted().joined(separator: ", ")))
        }
        #expect(expected.count >= 15)
        let cases = expected
        try await server.run { api in
            for (uri, allow) in cases {
                for method in [HTTPRequest.Method("TRACE")!, allow.contains("POST") ? .put : .post] {
                    let response = try await api.client.execute(uri: uri, method: method, headers: [:], body: nil)
                    #expect(response.status.code == 405, "\(method) \(uri): \(response.status.code)")
                    #expect(response.headers[.allow] == allow, "\(method) \(uri)")
                    #expect(response.headers[.contentType] == "application/problem+json")
                    #expect(String(buffer: response.body).contains("/problems/method-not-allowed"))
                }
            }
            let unknown = try await api.client.execute(uri: "/v1/nowhere", method: HTTPRequest.Method("TRACE")!, headers: [:], body: nil)
            #expect(unknown.status.code == 404)
        }
    }
}

/// What the server refuses, the document says: each request below is refused with a 4xx
/// problem naming its field, and the document's schema for that field excludes it too (so a
/// client generated from /openapi.yaml, or a fuzzer reading it, does not send it expecting success).
@Suite("The document states what the server enforces")
struct DocumentedConstraintsTests {
    /// The parameter `name` of an operation (not a shared `$ref` one).
    static func parameterObject(_ path: String, _ method: String, _ name: String) -> OpenAPIValue? {
        guard case .array(let parameters)? = OpenAPIDocument.value["paths"]?[path]?[method]?["parameters"] else { return nil }
        return parameters.first { $0["name"]?.stringValue == name }
    }

    static func parameter(_ path: String, _ method: String, _ name: String) -> OpenAPIValue? {
        parameterObject(path, method, name)?["schema"]
    }

    /// Every `{id}` in a path is one the server gave out, a UUID: the document says so
    /// (`format: uuid`), and the server answers any other with a 404 problem before it reads a
    /// body. Five of them were documented as any string, and Schemathesis gave up generating
    /// ids for two ("too many generated examples are filtered out").
    @Test func everyIdInAPathIsAUUIDAndAnyOtherIsA404() async throws {
        var operations: [(path: String, method: String)] = []
        for path in OpenAPIDocument.value["paths"]?.members ?? [] where path.key.contains("{id}") {
            var parameters: [OpenAPIValue] = []
            if case .array(let shared)? = path.value["parameters"] { parameters += shared }
            for operation in path.value.members where ["get", "post", "put", "patch", "delete"].contains(operation.key) {
                if case .array(let own)? = operation.value["parameters"] { parameters += own }
                operations.append((path.key, operation.key))
            }
            let id = try #require(parameters.first { $0["name"]?.stringValue == "id" }, "\(path.key) documents no id")
            #expect(id["schema"]?["format"] == "uuid", "\(path.key): its id is not documented as a UUID")
        }
        #expect(operations.count >= 10, "\(operations)")

        let (server, campus) = try await AttestationTests.setUp(clock: try TestClock("2026-11-20T14:00:00Z"))
        let (_, everyone) = try await server.user("all@example.edu", at: campus, roles: [.admin, .healthOfficer, .screener])
        try await server.run { [operations] api in
            for (path, method) in operations {
                let uri = path.replacingOccurrences(of: "{campus}", with: "north").replacingOccurrences(of: "{id}", with: "not-an-id")
                let reply = try await api.send(
                    try #require(HTTPRequest.Method(rawValue: method.uppercased())), uri, template: path, token: everyone,
                    json: method == "get" || method == "delete" ? nil : "{}")
                #expect(reply.status == 404, "\(method) \(path): \(reply.status) \(reply.body)")
            }
        }
    }

    @Test func refusedInputsAreOutsideTheDocumentedSchemas() async throws {
        let (server, campus) = try await AttestationTests.setUp(clock: try TestClock("2026-11-20T14:00:00Z"))
        let (_, member) = try await server.user("m@example.edu", at: campus)
        let (_, screener) = try await server.user("s@example.edu", at: campus, roles: [.screener])
        let (_, admin) = try await server.user("a@example.edu", at: campus, roles: [.admin])

        // The document's side.
        #expect(Self.parameter("/v1/campuses/{campus}/me/attestations", "get", "cursor")?["minLength"] == .integer(1))
        #expect(Self.parameter("/v1/campuses/{campus}/admin/follow-ups", "get", "cursor")?["minLength"] == .integer(1))
        let key = try #require(Self.parameter("/v1/campuses/{campus}/attestations", "post", "Idempotency-Key"))
        let pattern = try NSRegularExpression(pattern: try #require(key["pattern"]?.stringValue))
        for bad in ["a b", "é", String(repeating: "k", count: 201)] {
            #expect(pattern.firstMatch(in: bad, range: NSRange(bad.startIndex..., in: bad)) == nil, "\(bad)")
        }
        #expect(pattern.firstMatch(in: "3f1c-retry_1", range: NSRange(location: 0, length: 12)) != nil)
        #expect(
            Self.parameterObject("/v1/campuses/{campus}/testing-locations", "get", "lat")?["description"]?.stringValue?.contains(
                "together with lon") == true)
        let verify = OpenAPIDocument.value["paths"]?["/v1/campuses/{campus}/badges/verify"]?["post"]?["requestBody"]?["content"]?[
            "application/json"]?["schema"]
        #expect(verify?["properties"]?["token"]?["minLength"] == .integer(1))
        let version = OpenAPIDocument.value["components"]?["schemas"]?["AttestationRequest"]?["properties"]?["surveyVersion"]
        #expect(version?["minimum"] == .integer(1) && version?["maximum"] == .integer(999_999_999))

        // The server's side.
        try await server.run { api in
            let empty = try await api.send(
                .get, "/v1/campuses/north/me/attestations?cursor=", template: "/v1/campuses/{campus}/me/attestations", token: member)
            #expect(empty.status == 422 && empty.problem.fields == ["cursor"], "\(empty.body)")
            let badKey = try await api.send(
                .post, "/v1/campuses/north/attestations", template: AttestationTests.path, token: member,
                json: AttestationTests.body(AttestationTests.healthy),
                headers: [HTTPField.Name("Idempotency-Key")!: "a b"])
            #expect(badKey.status == 422 && badKey.problem.fields == ["Idempotency-Key"], "\(badKey.body)")
            let noToken = try await api.send(
                .post, "/v1/campuses/north/badges/verify", template: "/v1/campuses/{campus}/badges/verify", token: screener,
                json: #"{"token": ""}"#)
            #expect((400..<500).contains(noToken.status), "\(noToken.body)")
            let latAlone = try await api.send(
                .get, "/v1/campuses/north/testing-locations?lat=40.7", template: "/v1/campuses/{campus}/testing-locations", token: member)
            #expect(latAlone.status == 422, "\(latAlone.body)")
            let backwards = try await api.send(
                .get, "/v1/campuses/north/admin/dashboard?from=2026-11-20&to=2026-11-01", template: "/v1/campuses/{campus}/admin/dashboard",
                token: admin)
            #expect(backwards.status == 422, "\(backwards.body)")
            for outside in ["0", "1000000000", "2197579983"] {
                let refused = try await api.send(
                    .post, "/v1/campuses/north/attestations", template: AttestationTests.path, token: member,
                    json: #"{"surveyVersion": \#(outside), "answers": {}}"#)
                #expect(refused.status == 422 && refused.problem.fields == ["surveyVersion"], "\(outside): \(refused.body)")
            }
        }
    }
}
