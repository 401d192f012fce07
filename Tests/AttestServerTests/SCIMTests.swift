import AttestPlugins
import AttestPostgres
import AttestTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Identity
import Notifications
import Records
import Tenancy
import Testing

/// The SCIM 2.0 service (RFC 7643/7644) at `/scim/v2/campuses/{campus}/`: users and groups as
/// a directory pushes them, their lifecycle, roles that follow groups, isolation and hostile input.
@Suite("SCIM provisioning")
struct SCIMTests {
    /// A SCIM request: no OpenAPI check (the SCIM service is described in docs/api.md#scim).
    static func scim(
        _ api: APIClient, _ method: HTTPRequest.Method, _ path: String, token: String?, json: String? = nil, headers extra: HTTPFields = [:]
    ) async throws -> APIClient.Reply {
        var headers = extra
        if let token { headers[.authorization] = "Bearer \(token)" }
        if json != nil { headers[.contentType] = "application/scim+json" }
        let response = try await api.client.execute(
            uri: path, method: method, headers: headers, body: json.map { ByteBuffer(string: $0) })
        return APIClient.Reply(status: Int(response.status.code), headers: response.headers, body: String(buffer: response.body))
    }

    static func provisioner(_ server: TestServer, _ campus: Campus, name: String = "entra") async throws -> String {
        try await MachineTokens(client: server.pool).issue(campus: campus, role: .provisioner, name: name, lifetime: nil, actor: "test")
            .token
    }

    static func user(_ userName: String, external: String? = nil, active: Bool = true, employee: String? = nil) -> String {
        var extra = ""
        if let external { extra += #", "externalId": "\#(external)""# }
        if let employee {
            extra +=
                #", "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User": {"employeeNumber": "\#(employee)", "department": "Biology"}"#
        }
        return """
            {"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"], "userName": "\(userName)", "active": \(active),
             "name": {"givenName": "Ada", "familyName": "Lovelace"}, "displayName": "Ada Lovelace",
             "emails": [{"value": "\(userName)", "type": "work", "primary": true}]\(extra)}
            """
    }

    @Test func filtersParseWithinTheirLimitsAndSayWhatIsWrong() throws {
        let filter = try SCIMFilter.parse(#"userName eq "a@x.edu" and (active eq true or emails[type eq "work"].value co "x")"#)
        #expect("\(filter)".contains("emails[type eq \"work\"].value co \"x\""))
        #expect(try SCIMFilter.parse(#"urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:employeeNumber eq "7""#) != filter)
        let element: JSONValue = .object(["type": .string("work"), "value": .string("A@X.edu")])
        #expect(try SCIMFilter.parse(#"type eq "WORK" and value ew "x.edu""#).matches(element))
        #expect(try !SCIMFilter.parse(#"not (type eq "work")"#).matches(element))
        for bad in [
            #"userName eq"#, #"userName xx "a""#, #"(userName eq "a""#, #"userName eq "a"#, #"emails[type eq "work""#,
            String(repeating: "(", count: 40) + #"a eq "b""# + String(repeating: ")", count: 40),
            Array(repeating: #"a eq "b""#, count: 200).joined(separator: " or "), "a eq \"" + String(repeating: "x", count: 5000) + "\"",
            #"emails[value[type eq "x"] eq "y"]"#, "1abc eq 2",
        ] {
            #expect(throws: SCIMFilter.Invalid.self, "\(bad.prefix(60))") { try SCIMFilter.parse(bad) }
        }
    }

    @Test func aDirectoryCreatesFindsPagesChangesAndDeactivatesUsers() async throws {
        let server = try await TestServer.make()
        let north = try await server.campus("north")
        let token = try await Self.provisioner(server, north)
        let (_, existing) = try await server.user("early@example.edu", at: north)
        try await server.run { api in
            let created = try await Self.scim(
                api, .post, "/scim/v2/campuses/north/Users", token: token,
                json: Self.user("ada@example.edu", external: "E-1", employee: "7001"))
            #expect(created.status == 201, "\(created.body)")
            #expect(created.headers[.contentType]?.hasPrefix("application/scim+json") == true)
            let id = try #require(created.json["id"] as? String)
            #expect(created.headers[.location]?.hasSuffix("/scim/v2/campuses/north/Users/\(id)") == true)
            let enterprise = created.json["urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"] as? [String: Any]
            #expect(enterprise?["employeeNumber"] as? String == "7001" && enterprise?["department"] as? String == "Biology")
            let etag = try #require(created.headers[.eTag])

            // The same userName again, in another case: a uniqueness conflict.
            let again = try await Self.scim(api, .post, "/scim/v2/campuses/north/Users", token: token, json: Self.user("ADA@example.edu"))
            #expect(again.status == 409 && again.json["scimType"] as? String == "uniqueness", "\(again.body)")

            for (filter, expected) in [
                (#"userName eq "Ada@Example.edu""#, 1), (#"externalId eq "E-1""#, 1), (#"externalId eq "e-1""#, 0),
                (#"emails[type eq "work"].value eq "ada@example.edu""#, 1), (#"userName eq "early@example.edu""#, 1),
                (#"userName eq "ada@example.edu" or userName eq "early@example.edu""#, 2),
                (#"userName eq "ada@example.edu" and active eq false"#, 0), (#"userName sw "ada""#, 1),
                (#"urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:employeeNumber eq "7001""#, 1),
            ] {
                let query = filter.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
                let found = try await Self.scim(api, .get, "/scim/v2/campuses/north/Users?filter=\(query)", token: token)
                #expect(found.status == 200, "\(filter): \(found.body)")
                #expect(found.json["totalResults"] as? Int == expected, "\(filter): \(found.body)")
            }
            let page = try await Self.scim(api, .get, "/scim/v2/campuses/north/Users?startIndex=2&count=1", token: token)
            #expect(
                page.json["totalResults"] as? Int == 2 && page.json["itemsPerPage"] as? Int == 1 && page.json["startIndex"] as? Int == 2)

            // An If-Match naming an old version: 412, nothing changed.
            let deactivate =
                #"{"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"], "Operations": [{"op": "replace", "path": "active", "value": "False"}]}"#
            let stale = try await Self.scim(
                api, .patch, "/scim/v2/campuses/north/Users/\(id)", token: token,
                json:
                    #"{"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"], "Operations": [{"op": "replace", "path": "displayName", "value": "A"}]}"#,
                headers: [.ifMatch: #"W/"0000""#])
            #expect(stale.status == 412, "\(stale.body)")
            let read = try await Self.scim(api, .get, "/scim/v2/campuses/north/Users/\(id)", token: token, headers: [.ifNoneMatch: etag])
            #expect(read.status == 304)

            // A PATCH of the work email, the name and (as Entra ID sends it) "False" as a string.
            let patched = try await Self.scim(
                api, .patch, "/scim/v2/campuses/north/Users/\(id)", token: token,
                json:
                    #"{"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"], "Operations": [{"op": "replace", "path": "emails[type eq \"work\"].value", "value": "ada.l@example.edu"}, {"op": "add", "path": "name.givenName", "value": "Augusta"}]}"#,
                headers: [.ifMatch: etag])
            #expect(patched.status == 200, "\(patched.body)")
            #expect((patched.json["name"] as? [String: Any])?["givenName"] as? String == "Augusta")
            #expect(try await UserStore(client: server.pool).find(campus: north.id, email: "ada.l@example.edu") != nil)

            // The early member, deactivated by the directory: their session stops at once.
            let early = try await Self.scim(
                api, .get, "/scim/v2/campuses/north/Users?filter=userName%20eq%20%22early%40example.edu%22", token: token)
            let earlyID = try #require((early.json["Resources"] as? [[String: Any]])?.first?["id"] as? String)
            #expect(try await api.send(.get, "/v1/campuses/north/me", template: SignInTests.me, token: existing).status == 200)
            let off = try await Self.scim(api, .patch, "/scim/v2/campuses/north/Users/\(earlyID)", token: token, json: deactivate)
            #expect(off.status == 200 && off.json["active"] as? Bool == false, "\(off.body)")
            try await server.services.authGenerations.refresh()
            #expect(try await api.send(.get, "/v1/campuses/north/me", template: SignInTests.me, token: existing).status == 401)
            // Nor reminded: today's reminders go to the one active member, the directory's Ada.
            try await CampusPluginStore(client: server.pool).enable(
                campus: north, kind: .sink, id: "log", settings: .object([:]), actor: "test")
            let evening = north.startOfDay(north.localDate(at: Date())).addingTimeInterval(23 * 3_600)
            #expect(try await Reminders(client: server.pool, audience: .unattested).run(campuses: [north], at: evening) == ["north": 1])

            // DELETE deactivates by default; erases under scim-delete erase.
            #expect(try await Self.scim(api, .delete, "/scim/v2/campuses/north/Users/\(id)", token: token).status == 204)
            let gone = try await Self.scim(api, .get, "/scim/v2/campuses/north/Users/\(id)", token: token)
            #expect(gone.status == 404 && gone.json["status"] as? String == "404", "gone from the directory's view: \(gone.body)")
            let kept = try #require(try await UserStore(client: server.pool).find(campus: north.id, email: "ada.l@example.edu"))
            #expect(try await UserStore(client: server.pool).activity(campus: north.id)[kept.id] == false, "kept, deactivated")
            // Created again by the directory: the same user, active again.
            let back = try await Self.scim(
                api, .post, "/scim/v2/campuses/north/Users", token: token, json: Self.user("ada.l@example.edu", external: "E-1"))
            #expect(back.status == 201 && back.json["id"] as? String == id && back.json["active"] as? Bool == true, "\(back.body)")
            let entries = try await AuditLog(client: server.pool).entries(campus: north.id)
            #expect(entries.contains { $0.action == "user.deactivate" && $0.actor == "scim:entra" && $0.details["source"] == "scim" })
            #expect(entries.contains { $0.action == "scim.user.create" && $0.target == "ada@example.edu" })
        }
    }

    @Test func deleteErasesWhenTheCampusSaysSo() async throws {
        let server = try await TestServer.make()
        _ = try await server.campus("north")
        let north = try await CampusStore(client: server.pool).set(slug: "north", key: "scim-delete", value: "erase", actor: "test")
        let token = try await Self.provisioner(server, north)
        // A laboratory's result waiting under the address before the directory sends the user.
        let records = HealthRecords(client: server.pool)
        _ = try await records.receive(
            campus: north,
            results: [
                LabResult(
                    specimenID: "S-1", subject: "gone@example.edu", testCode: "94500-6", detected: false, collectedAt: Date(),
                    resultedAt: Date())
            ], source: "test", actor: "test")
        try await CampusPluginStore(client: server.pool).enable(
            campus: north, kind: .sink, id: "log", settings: .object([:]), actor: "test")
        @Sendable func named(_ id: String) async throws -> Int {
            try await server.pool.query(
                "SELECT count(*)::int AS n FROM notification_outbox WHERE payload->>'userId' = \(id)", campus: north.id.rawValue
            ).first?.decode("n") ?? -1
        }
        try await server.run { api in
            let created = try await Self.scim(
                api, .post, "/scim/v2/campuses/north/Users", token: token, json: Self.user("gone@example.edu"))
            let id = try #require(created.json["id"] as? String)
            let evening = north.startOfDay(north.localDate(at: Date())).addingTimeInterval(23 * 3_600)
            #expect(try await Reminders(client: server.pool, audience: .unattested).run(campuses: [north], at: evening) == ["north": 1])
            #expect(try await named(id) == 1)
            #expect(try await records.unmatched(campus: north, actor: "test").count == 1)
            #expect(try await Self.scim(api, .delete, "/scim/v2/campuses/north/Users/\(id)", token: token).status == 204)
            // What names them without a foreign key goes too: the outbox's events, the waiting result.
            #expect(try await named(id) == 0)
            #expect(try await records.unmatched(campus: north, actor: "test").isEmpty)
            let after = try await Self.scim(api, .get, "/scim/v2/campuses/north/Users/\(id)", token: token)
            #expect(after.status == 404 && after.json["schemas"] as? [String] == ["urn:ietf:params:scim:api:messages:2.0:Error"])
            #expect(try await UserStore(client: server.pool).find(campus: north.id, email: "gone@example.edu") == nil)
            let entries = try await AuditLog(client: server.pool).entries(campus: north.id)
            #expect(!entries.contains { $0.target == "gone@example.edu" }, "the erased user's entries go with them")
            #expect(entries.contains { $0.action == "user.erase" && $0.details["source"] == "scim" })
        }
    }

    @Test func groupMembershipGrantsAndRevokesMappedRolesAndAHandGrantStays() async throws {
        let server = try await TestServer.make()
        let north = try await server.campus("north")
        let token = try await Self.provisioner(server, north)
        let (nurse, nurseToken) = try await server.user("nurse@example.edu", at: north)
        let (clerk, _) = try await server.user("clerk@example.edu", at: north, roles: [.healthOfficer])
        let directory = Directory(client: server.pool)
        try await directory.setRoleMapping(campus: north, group: "Health Office", role: .healthOfficer, map: true, actor: "test")
        try await server.run { api in
            let members = [nurse.id, clerk.id].map { #"{"value": "\#($0.rawValue.uuidString.lowercased())"}"# }.joined(separator: ",")
            let group = try await Self.scim(
                api, .post, "/scim/v2/campuses/north/Groups", token: token,
                json:
                    #"{"schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"], "displayName": "Health Office", "members": [\#(members)]}"#
            )
            #expect(group.status == 201, "\(group.body)")
            let id = try #require(group.json["id"] as? String)
            try await server.services.authGenerations.refresh()
            let list = try await api.send(
                .get, "/v1/campuses/north/health/results?unmatched=true", template: "/v1/campuses/{campus}/health/results",
                token: nurseToken)
            #expect(list.status == 200, "the group gave the nurse health_officer: \(list.body)")

            // Removed from the group (as Entra ID sends it): the role goes; the clerk's hand grant stays.
            let remove =
                #"{"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"], "Operations": [{"op": "remove", "path": "members", "value": [{"value": "\#(nurse.id.rawValue.uuidString.lowercased())"}, {"value": "\#(clerk.id.rawValue.uuidString.lowercased())"}]}]}"#
            let patched = try await Self.scim(api, .patch, "/scim/v2/campuses/north/Groups/\(id)", token: token, json: remove)
            #expect(patched.status == 200, "\(patched.body)")
            #expect(patched.json["members"] == nil)
            try await server.services.authGenerations.refresh()
            let refused = try await api.send(
                .get, "/v1/campuses/north/health/results?unmatched=true", template: "/v1/campuses/{campus}/health/results",
                token: nurseToken)
            #expect(refused.status == 403)
            let users = UserStore(client: server.pool)
            #expect(try await users.find(campus: north.id, email: "nurse@example.edu")?.roles == [.member])
            #expect(try await users.find(campus: north.id, email: "clerk@example.edu")?.roles.contains(.healthOfficer) == true)
            let entries = try await AuditLog(client: server.pool).entries(campus: north.id)
            #expect(entries.contains { $0.action == "role.grant" && $0.target == "nurse@example.edu" && $0.details["source"] == "scim" })
            #expect(entries.contains { $0.action == "role.revoke" && $0.target == "nurse@example.edu" && $0.details["source"] == "scim" })
            #expect(!entries.contains { $0.action == "role.revoke" && $0.target == "clerk@example.edu" })
        }
    }

    @Test func aProvisionerSeesNothingOfAnotherCampusAndOpensNothingElse() async throws {
        let server = try await TestServer.make()
        let north = try await server.campus("north"), south = try await server.campus("south")
        let northToken = try await Self.provisioner(server, north)
        let (_, admin) = try await server.user("admin@example.edu", at: north, roles: [.admin, .healthOfficer, .screener])
        let lab = try await MachineTokens(client: server.pool).issue(campus: north, role: .lab, name: "lab", lifetime: nil, actor: "test")
            .token
        try await server.run { api in
            let created = try await Self.scim(
                api, .post, "/scim/v2/campuses/north/Users", token: northToken, json: Self.user("n@example.edu"))
            let id = try #require(created.json["id"] as? String)
            for path in ["/scim/v2/campuses/south/Users", "/scim/v2/campuses/south/Users/\(id)", "/scim/v2/campuses/south/Groups"] {
                let reply = try await Self.scim(api, .get, path, token: northToken)
                #expect(reply.status == 401 && reply.json["status"] as? String == "401", "\(path): \(reply.body)")
            }
            for token in [admin, lab] {
                #expect(try await Self.scim(api, .get, "/scim/v2/campuses/north/Users", token: token).status == 401)
            }
            let me = try await api.send(.get, "/v1/campuses/north/me", template: SignInTests.me, token: northToken)
            #expect(me.status == 401, "a provisioner's token opens no API route")
            // South's user and group, named by id through north's service: not there.
            let southToken = try await Self.provisioner(server, south)
            let theirs = try await Self.scim(
                api, .post, "/scim/v2/campuses/south/Users", token: southToken, json: Self.user("s@example.edu"))
            let theirID = try #require(theirs.json["id"] as? String)
            let group = try await Self.scim(
                api, .post, "/scim/v2/campuses/south/Groups", token: southToken, json: #"{"displayName": "South staff"}"#)
            let groupID = try #require(group.json["id"] as? String)
            let rename =
                #"{"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"], "Operations": [{"op": "replace", "path": "displayName", "value": "Taken"}]}"#
            for (method, path, body) in [
                (HTTPRequest.Method.get, "Users/\(theirID)", nil), (.patch, "Users/\(theirID)", rename), (.delete, "Users/\(theirID)", nil),
                (.get, "Groups/\(groupID)", nil), (.patch, "Groups/\(groupID)", rename), (.delete, "Groups/\(groupID)", nil),
            ] as [(HTTPRequest.Method, String, String?)] {
                let reply = try await Self.scim(api, method, "/scim/v2/campuses/north/\(path)", token: northToken, json: body)
                #expect(reply.status == 404, "\(method) \(path): \(reply.body)")
            }
            // Nor may a north group name a south user as a member.
            let mixed = try await Self.scim(
                api, .post, "/scim/v2/campuses/north/Groups", token: northToken,
                json: #"{"displayName": "Mixed", "members": [{"value": "\#(theirID)"}]}"#)
            #expect(mixed.status == 400 && mixed.json["scimType"] as? String == "invalidValue", "\(mixed.body)")
            let found = try await Self.scim(
                api, .get, "/scim/v2/campuses/north/Users?filter=userName%20eq%20%22s%40example.edu%22", token: northToken)
            #expect(found.json["totalResults"] as? Int == 0)
            let still = try await Self.scim(api, .get, "/scim/v2/campuses/south/Users/\(theirID)", token: southToken)
            #expect(still.status == 200 && still.json["active"] as? Bool == true)
        }
    }

    @Test func hostileInputGetsClearSCIMErrorsAndNothingHalfApplied() async throws {
        let server = try await TestServer.make()
        let north = try await server.campus("north")
        let token = try await Self.provisioner(server, north)
        try await server.run { api in
            let created = try await Self.scim(api, .post, "/scim/v2/campuses/north/Users", token: token, json: Self.user("h@example.edu"))
            let id = try #require(created.json["id"] as? String)
            let deep = String(repeating: "(", count: 50) + #"userName eq "x""# + String(repeating: ")", count: 50)
            for filter in [deep, #"userName eq"#, #"nosuch eq "x""#, #"active eq "yes""#, #"meta.created gt "yesterday""#] {
                let query = filter.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
                let reply = try await Self.scim(api, .get, "/scim/v2/campuses/north/Users?filter=\(query)", token: token)
                #expect(reply.status == 400 && reply.json["scimType"] as? String == "invalidFilter", "\(filter.prefix(40)): \(reply.body)")
            }
            // One good operation, then a path that does not exist: 400, and the first is not kept.
            let patch =
                #"{"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"], "Operations": [{"op": "replace", "path": "displayName", "value": "Changed"}, {"op": "replace", "path": "nosuch.thing", "value": "x"}]}"#
            let refused = try await Self.scim(api, .patch, "/scim/v2/campuses/north/Users/\(id)", token: token, json: patch)
            #expect(refused.status == 400 && refused.json["scimType"] as? String == "invalidPath", "\(refused.body)")
            let unchanged = try await Self.scim(api, .get, "/scim/v2/campuses/north/Users/\(id)", token: token)
            #expect(unchanged.json["displayName"] as? String == "Ada Lovelace")
            for body in [
                "{", #"{"userName": 7}"#, #"{"userName": " "}"#, #"{"userName": "a@example.edu", "active": "maybe"}"#,
                #"{"userName": "y", "emails": [{"value": "not an address", "primary": true}]}"#,
            ] {
                let reply = try await Self.scim(api, .post, "/scim/v2/campuses/north/Users", token: token, json: body)
                #expect(reply.status == 400, "\(body): \(reply.body)")
            }
            // A group of 100,000 members in one PUT: refused whole, the group unchanged.
            let group = try await Self.scim(
                api, .post, "/scim/v2/campuses/north/Groups", token: token,
                json: #"{"displayName": "Everyone", "members": [{"value": "\#(id)"}]}"#)
            let groupID = try #require(group.json["id"] as? String)
            let many = (0..<100_000).map { _ in #"{"value":"\#(UUID().uuidString)"}"# }.joined(separator: ",")
            let huge = try await Self.scim(
                api, .put, "/scim/v2/campuses/north/Groups/\(groupID)", token: token,
                json: #"{"displayName": "Everyone", "members": [\#(many)]}"#)
            #expect(huge.status == 413 && huge.json["detail"] as? String != nil, "\(huge.body.prefix(300))")
            let unknown = try await Self.scim(
                api, .put, "/scim/v2/campuses/north/Groups/\(groupID)", token: token,
                json: #"{"displayName": "Renamed", "members": [{"value": "\#(UUID().uuidString)"}]}"#)
            #expect(unknown.status == 400 && unknown.json["scimType"] as? String == "invalidValue", "\(unknown.body)")
            let kept = try await Self.scim(api, .get, "/scim/v2/campuses/north/Groups/\(groupID)", token: token)
            #expect(kept.json["displayName"] as? String == "Everyone" && (kept.json["members"] as? [Any])?.count == 1)
            // Okta renames a group with its id in the value, without a path.
            let okta =
                #"{"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"], "Operations": [{"op": "replace", "value": {"id": "\#(groupID)", "displayName": "All of us"}}]}"#
            let renamed = try await Self.scim(api, .patch, "/scim/v2/campuses/north/Groups/\(groupID)", token: token, json: okta)
            #expect(renamed.status == 200 && renamed.json["displayName"] as? String == "All of us", "\(renamed.body)")
            #expect((renamed.json["members"] as? [Any])?.count == 1)
        }
    }

    @Test func scimOnlyRefusesStrangersAndTheGroupsClaimGivesRolesAtSignIn() async throws {
        let (server, _, provider) = try await SignInTests.setUp()
        defer { provider.stop() }
        _ = try await CampusStore(client: server.pool).set(slug: "north", key: "provisioning", value: "scim-only", actor: "test")
        let north = try #require(try await CampusStore(client: server.pool).find(slug: "north"))
        try await Directory(client: server.pool).setRoleMapping(
            campus: north, group: "door-staff", role: .screener, map: true, actor: "test")
        let token = try await Self.provisioner(server, north)
        try await server.run { api in
            let stranger = try await SignInTests.signIn(
                api, try await provider.sign(provider.claims(email: "stranger@example.edu", subject: "s-1"), kid: "es-1"))
            #expect(stranger.status == 401 && stranger.problem.detail.contains("directory"), "\(stranger.body)")
            _ = try await Self.scim(api, .post, "/scim/v2/campuses/north/Users", token: token, json: Self.user("known@example.edu"))
            var claims = provider.claims(email: "known@example.edu", subject: "k-1")
            claims.groups = ["Door-Staff", "chess-club"]
            let known = try await SignInTests.signIn(api, try await provider.sign(claims, kid: "es-1"))
            #expect(known.status == 201, "\(known.body)")
            #expect((known.json["user"] as? [String: Any])?["roles"] as? [String] == ["member", "screener"], "\(known.body)")
            // A user the directory gave no address, whose externalId is the token's subject (as Okta sends it).
            _ = try await Self.scim(
                api, .post, "/scim/v2/campuses/north/Users", token: token,
                json: #"{"userName": "kay", "externalId": "okta-00u1", "active": true}"#)
            let kay = try await SignInTests.signIn(
                api, try await provider.sign(provider.claims(email: "kay@example.edu", subject: "okta-00u1"), kid: "es-1"))
            #expect(kay.status == 201 && (kay.json["user"] as? [String: Any])?["email"] as? String == "kay@example.edu", "\(kay.body)")
            claims.groups = []
            claims.jti = UUID().uuidString
            let later = try await SignInTests.signIn(api, try await provider.sign(claims, kid: "es-1"))
            #expect((later.json["user"] as? [String: Any])?["roles"] as? [String] == ["member"], "\(later.body)")
            let entries = try await AuditLog(client: server.pool).entries(campus: north.id)
            #expect(entries.contains { $0.action == "role.grant" && $0.details["source"] == "oidc" })
        }
    }

    @Test func theGroupsClaimMayHaveAnotherNameAndOnlyThatOneCounts() async throws {
        let (server, _, provider) = try await SignInTests.setUp()
        defer { provider.stop() }
        _ = try await CampusStore(client: server.pool).set(slug: "north", key: "groups-claim", value: "roles", actor: "test")
        let north = try #require(try await CampusStore(client: server.pool).find(slug: "north"))
        try await Directory(client: server.pool).setRoleMapping(
            campus: north, group: "door-staff", role: .screener, map: true, actor: "test")
        try await server.run { api in
            var claims = provider.claims(email: "door@example.edu", subject: "d-1")
            claims.groups = ["door-staff"]  // not the campus's claim: no role
            let first = try await SignInTests.signIn(api, try await provider.sign(claims, kid: "es-1"))
            #expect((first.json["user"] as? [String: Any])?["roles"] as? [String] == ["member"], "\(first.body)")
            claims.roles = ["door-staff"]
            claims.jti = UUID().uuidString
            let second = try await SignInTests.signIn(api, try await provider.sign(claims, kid: "es-1"))
            #expect((second.json["user"] as? [String: Any])?["roles"] as? [String] == ["member", "screener"], "\(second.body)")
        }
    }

    /// What identity providers send by default: attributes of RFC 7643 the service does not
    /// keep are accepted and left out, and a write that does not name `active` leaves it be.
    @Test func unkeptAttributesAreAcceptedAndAWriteWithoutActiveLeavesItBe() async throws {
        let server = try await TestServer.make()
        let north = try await server.campus("north")
        let token = try await Self.provisioner(server, north)
        try await server.run { api in
            let created = try await Self.scim(api, .post, "/scim/v2/campuses/north/Users", token: token, json: Self.user("t@example.edu"))
            let id = try #require(created.json["id"] as? String)
            // Entra ID's default mappings: title, a work phone, a work address, preferredLanguage.
            let entra =
                #"{"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"], "Operations": [{"op": "Replace", "path": "title", "value": "Nurse"}, {"op": "Add", "path": "phoneNumbers[type eq \"work\"].value", "value": "+1 555 0100"}, {"op": "Replace", "path": "addresses[type eq \"work\"].formatted", "value": "1 Main St"}, {"op": "Replace", "path": "preferredLanguage", "value": "en-US"}, {"op": "Replace", "path": "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:costCenter", "value": "42"}, {"op": "Replace", "path": "displayName", "value": "Tess"}]}"#
            let patched = try await Self.scim(api, .patch, "/scim/v2/campuses/north/Users/\(id)", token: token, json: entra)
            #expect(patched.status == 200 && patched.json["displayName"] as? String == "Tess", "\(patched.body)")
            #expect(patched.json["title"] == nil && patched.json["phoneNumbers"] == nil)

            // An operator deactivates her; the directory's next PUT does not name active: she stays deactivated.
            _ = try await UserStore(client: server.pool).setActive(campus: north, email: "t@example.edu", active: false, actor: "test")
            let put = #"{"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"], "userName": "t@example.edu", "displayName": "Tess T"}"#
            let replaced = try await Self.scim(api, .put, "/scim/v2/campuses/north/Users/\(id)", token: token, json: put)
            #expect(replaced.status == 200 && replaced.json["active"] as? Bool == false, "\(replaced.body)")
            #expect(
                try await UserStore(client: server.pool).activity(campus: north.id)[UserID(try #require(UUID(uuidString: id)))] == false)
            // A PATCH removing active unassigns it: active again, and not shown.
            let unassign =
                #"{"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"], "Operations": [{"op": "remove", "path": "active"}]}"#
            let removed = try await Self.scim(api, .patch, "/scim/v2/campuses/north/Users/\(id)", token: token, json: unassign)
            #expect(removed.status == 200 && removed.json["active"] == nil, "\(removed.body)")
            #expect(try await UserStore(client: server.pool).activity(campus: north.id)[UserID(try #require(UUID(uuidString: id)))] == true)
        }
    }

    @Test func theCLIIssuesProvisionerTokensMapsGroupsAndChecksTheSettings() async throws {
        let server = try await TestServer.make()
        let north = try await server.campus("north")
        let (nurse, _) = try await server.user("nurse@example.edu", at: north)
        let attest = { (arguments: [String]) in
            try await ChildProcess.run(
                [ChildProcess.attestBinary] + arguments, environment: ["DATABASE_URL": TestDatabase.url(database: server.database)])
        }
        let issued = try await attest(["token", "issue", "north", "--provisioner", "entra-id"])
        #expect(issued.status == 0, "\(issued.stderr)")
        let token = issued.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(
            try await MachineTokens(client: server.pool).authenticate(campus: north.id, token: token, role: .provisioner)?.name
                == "entra-id")
        #expect(try await MachineTokens(client: server.pool).authenticate(campus: north.id, token: token, role: .lab) == nil)
        let both = try await attest(["token", "issue", "north", "--provisioner", "x", "--lab", "y"])
        #expect(both.status != 0 && both.stderr.contains("Give one of"), "\(both.stderr)")

        // A group the nurse is in, then the mapping: her role moves at once.
        try await server.pool.withTransaction(campus: north.id.rawValue) { connection in
            let group = UUID()
            try await connection.query(
                "INSERT INTO directory_groups (campus_id, id, display_name) VALUES (\(north.id), \(group), 'Health Office')")
            try await connection.query(
                "INSERT INTO directory_group_members (campus_id, group_id, user_id) VALUES (\(north.id), \(group), \(nurse.id.rawValue))")
        }
        let mapped = try await attest(["campus", "roles", "map", "north", "health office", "health-officer"])
        #expect(mapped.status == 0 && mapped.stdout.contains("now health_officer"), "\(mapped.stdout)\(mapped.stderr)")
        #expect(
            try await UserStore(client: server.pool).find(campus: north.id, email: "nurse@example.edu")?.roles == [.member, .healthOfficer])
        let listed = try await attest(["campus", "roles", "list", "north"])
        #expect(listed.stdout.contains("health office\thealth_officer"), "\(listed.stdout)")
        let unmapped = try await attest(["campus", "roles", "unmap", "north", "health office", "health_officer"])
        #expect(unmapped.status == 0 && unmapped.stdout.contains("no longer gives"), "\(unmapped.stdout)")
        #expect(try await UserStore(client: server.pool).find(campus: north.id, email: "nurse@example.edu")?.roles == [.member])
        let member = try await attest(["campus", "roles", "map", "north", "Everyone", "member"])
        #expect(member.status != 0 && member.stderr.contains("member role cannot be granted"), "\(member.stderr)")
        let audit = try await AuditLog(client: server.pool).entries(campus: north.id)
        #expect(audit.contains { $0.action == "role.grant" && $0.target == "nurse@example.edu" && $0.details["source"] == "mapping" })
        #expect(audit.contains { $0.action == "token.issue" && $0.target == "provisioner:entra-id" })

        for (key, good, bad) in [
            ("scim-delete", "erase", "destroy"), ("provisioning", "scim-only", "closed"), ("groups-claim", "roles", "has space"),
        ] {
            let refused = try await attest(["campus", "set", "north", key, bad])
            #expect(refused.status != 0 && refused.stderr.contains(key), "\(key): \(refused.stderr)")
            #expect(try await attest(["campus", "set", "north", key, good]).status == 0)
        }
        let campus = try #require(try await CampusStore(client: server.pool).find(slug: "north"))
        let policy = DirectoryPolicy(campus: campus)
        #expect(policy.delete == .erase && policy.provisioning == .scimOnly && policy.groupsClaim == "roles")
        await server.pool.shutdown()
    }
}
