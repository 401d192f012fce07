import AttestPlugins
import AttestPluginsTesting
import AttestPostgres
import AttestTestSupport
import Foundation
import Identity
import Records
import Tenancy
import Testing

/// Vaccination by SMART Health Card through `POST …/me/vaccinations` (DESIGN §11): the
/// campus's trusted issuers, its `shc-identity`, every way of presenting a card, what is kept.
@Suite("Vaccinations")
struct VaccinationTests {
    static let present = "/v1/campuses/{campus}/me/vaccinations"
    static let records = "/v1/campuses/{campus}/me/records"

    static func trustExampleIssuer(_ server: TestServer, _ campus: Campus) async throws {
        let jwks = try JSONValue(parsing: Array(try Cards.file("example-issuer-jwks.json")))
        _ = try await HealthRecords(client: server.pool).addIssuer(
            campus: campus, iss: Cards.iss, name: "SMART example issuer", jwks: jwks, crls: [], actor: "test")
    }

    @discardableResult
    static func setIdentity(_ check: String, at slug: String, _ server: TestServer) async throws -> Campus {
        try await CampusStore(client: server.pool).set(slug: slug, key: "settings", value: #"{"shc-identity": "\#(check)"}"#, actor: "test")
    }

    /// A member named as a card names them.
    static func member(_ server: TestServer, _ campus: Campus, name: String = "Alice Member") async throws -> (User, String) {
        let user = try await UserStore(client: server.pool).add(
            campus: campus, email: "alice@example.edu", displayName: name, actor: "test")
        return (user, try await SessionStore(client: server.pool).issue(campus: campus, user: user.id).token)
    }

    static func body(_ shc: String) -> String {
        String(decoding: try! JSONSerialization.data(withJSONObject: ["shc": shc]), as: UTF8.self)
    }

    @Test func theExampleCardWithItsIssuerTrustedAndIdentityOffGivesTheVaccinationAndKeepsOnlyTheDoses() async throws {
        let clock = try TestClock("2026-11-20T16:00:00Z")
        let (server, campus) = try await AttestationTests.setUp(clock: clock)
        let (member, token) = try await server.user("alice@example.edu", at: campus)
        try await Self.trustExampleIssuer(server, campus)
        try await Self.setIdentity("off", at: "north", server)
        let example = try Cards.text("example-00.qr.txt")
        try await server.run { api in
            let presented = try await api.send(
                .post, "/v1/campuses/north/me/vaccinations", template: Self.present, token: token, json: Self.body(example))
            #expect(presented.status == 201, "\(presented.body)")
            #expect(presented.json["issuers"] as? [String] == [Cards.iss])
            let doses = presented.json["doses"] as? [[String: Any]] ?? []
            #expect(
                doses.map { $0["date"] as? String } == ["2021-01-01", "2021-01-29"] && doses.allSatisfy { $0["cvx"] as? String == "207" })
            let vaccination = presented.json["vaccination"] as? [String: Any] ?? [:]
            #expect(vaccination["completed"] as? String == "2021-01-29" && vaccination["fullyVaccinated"] as? Bool == true)
            let record = try await api.send(.get, "/v1/campuses/north/me/records", template: Self.records, token: token)
            #expect(record.status == 200)
            #expect((record.json["doses"] as? [[String: Any]])?.map { $0["issuer"] as? String } == [Cards.iss, Cards.iss])
            #expect((record.json["vaccination"] as? [String: Any])?["doses"] as? Int == 2)
            // The same card again changes nothing but when it was verified.
            let again = try await api.send(
                .post, "/v1/campuses/north/me/vaccinations", template: Self.present, token: token, json: Self.body(example))
            #expect(again.status == 201)
            let kept = try await server.pool.query(
                "SELECT cvx, given_on::text AS day, issuer FROM vaccinations WHERE campus_id = \(campus.id) ORDER BY given_on",
                campus: campus.id.rawValue)
            #expect(try kept.map { try $0.decode("day", as: String.self) } == ["2021-01-01", "2021-01-29"])
            let status = try await server.pool.query(
                "SELECT \(UserStore.health) FROM users u WHERE campus_id = \(campus.id) AND id = \(member.id)", campus: campus.id.rawValue)
            let health = HealthStatus.stored(try status[0].decode("health", as: PostgresJSON?.self))
            #expect(health?.vaccination?.completed == LocalDate(year: 2021, month: 1, day: 29))
            // Audited, without the card: nothing of its text, name or birth date anywhere in the log.
            let audit = try await server.pool.query(
                "SELECT action, details::text AS details FROM audit_log WHERE campus_id = \(campus.id) AND action = 'vaccination.verify'",
                campus: campus.id.rawValue)
            #expect(audit.count == 2)
            for row in audit {
                let details: String = try row.decode("details")
                #expect(!details.contains("Anyperson") && !details.contains("1951") && !details.contains("eyJ"))
            }
        }
        await server.pool.shutdown()
    }

    @Test func everyWayOfPresentingACardAndEveryRefusalAsANamedProblemWithNothingKept() async throws {
        let clock = try TestClock("2026-11-20T16:00:00Z")
        let (server, campus) = try await AttestationTests.setUp(clock: clock)
        let south = try await server.campus("south", timeZone: "America/Chicago")
        let (member, token) = try await Self.member(server, campus)
        let southToken = try await server.user("alice@example.edu", at: south).token
        _ = try await UserStore(client: server.pool).setBirthDate(
            campus: campus, email: member.email, birthDate: LocalDate(year: 1990, month: 4, day: 2), actor: "test")
        try await Self.trustExampleIssuer(server, campus)
        try await Self.setIdentity("strict", at: "north", server)
        let mine = try Cards.jws(family: "Member", given: ["Alice"], birthDate: "1990-04-02")
        try await server.run { api in
            func present(_ json: String, token: String = token, campus: String = "north") async throws -> (Int, String, String) {
                let reply = try await api.send(
                    .post, "/v1/campuses/\(campus)/me/vaccinations", template: Self.present, token: token, json: json)
                return (reply.status, reply.problem.type, reply.body)
            }
            // Refusals, each named; nothing kept after any.
            let example = try Cards.text("example-00.qr.txt")
            let refusals: [(String, String)] = [
                (Self.body(example), "shc-another-person"),
                (Self.body("shc:/1234"), "shc-not-a-card"),
                (Self.body("hello"), "shc-not-a-card"),
                (Self.body(Cards.qr(try Cards.jws(birthDate: "1990-04-03"))), "shc-another-person"),
                (Self.body(Cards.qr(try Cards.jws(nbf: 1_900_000_000))), "shc-not-yet-valid"),
                (Self.body(Cards.qr(try Cards.jws(iss: "https://issuer.example.org"))), "shc-unknown-issuer"),
                (Self.body(Cards.qr(try Cards.jws(key: .init()))), "shc-bad-signature"),
                (Self.body(Cards.qr(try Cards.jws(doses: [("88", "2021-10-01")]))), "shc-no-vaccination"),
            ]
            for (json, type) in refusals {
                let (status, problem, body) = try await present(json)
                #expect(status == 422 && problem.hasSuffix("/" + type), "\(type): \(body)")
            }
            for json in [#"{}"#, #"{"shc": 5}"#, #"{"shc": []}"#, #"{"shc": "shc:/56", "verifiableCredential": ["x"]}"#, #"{"card": "x"}"#]
            {
                let (status, problem, body) = try await present(json)
                #expect(status == 422 && problem.hasSuffix("/validation"), "\(json): \(body)")
            }
            // The campus's issuer is not another campus's: south trusts nobody.
            let (southStatus, southProblem, _) = try await present(Self.body(Cards.qr(mine)), token: southToken, campus: "south")
            #expect(southStatus == 422 && southProblem.hasSuffix("/shc-unknown-issuer"))
            let none = try await server.pool.query("SELECT count(*) AS n FROM vaccinations", campus: campus.id.rawValue)
            #expect(try none[0].decode("n", as: Int.self) == 0)

            // Accepted: one QR text, chunks in any order, a file's credentials, the file itself.
            let (status, _, body) = try await present(Self.body(Cards.qr(mine)))
            #expect(status == 201, "\(body)")
            let chunks = Cards.chunks(try Cards.jws(doses: [("212", "2021-05-05")]), 3)
            let chunked = String(
                decoding: try JSONSerialization.data(withJSONObject: ["shc": [chunks[1], chunks[2], chunks[0]]]), as: UTF8.self)
            let (chunkedStatus, _, chunkedBody) = try await present(chunked)
            #expect(chunkedStatus == 201, "\(chunkedBody)")
            let file = #"{"verifiableCredential": ["\#(try Cards.jws(doses: [("208", "2021-12-01")]))"]}"#
            let (fileStatus, _, fileBody) = try await present(file)
            #expect(fileStatus == 201, "\(fileBody)")
            let raw = try await api.send(
                .post, "/v1/campuses/north/me/vaccinations", template: Self.present, token: token, json: file,
                contentType: "application/smart-health-card")
            #expect(raw.status == 201, "\(raw.body)")
            let record = try await api.send(.get, "/v1/campuses/north/me/records", template: Self.records, token: token)
            #expect((record.json["doses"] as? [[String: Any]])?.count == 4)
            #expect((record.json["vaccination"] as? [String: Any])?["completed"] as? String == "2021-03-22")
        }
        await server.pool.shutdown()
    }

    @Test func aDirectoryIssuerIsTrustedByEveryCampusUnderItsCanonicalName() async throws {
        let clock = try TestClock("2026-11-20T16:00:00Z")
        let (server, created) = try await AttestationTests.setUp(clock: clock)
        let (member, _) = try await server.user("alice@example.edu", at: created)
        let campus = try await Self.setIdentity("off", at: "north", server)
        let jwks = try JSONValue(parsing: Array(try Cards.file("example-issuer-jwks.json")))
        let owner = TestDatabase.client(database: server.database, role: nil, maxConnections: 1)
        try await SHCDirectory.replace(
            [
                .init(
                    iss: "https://alias.example.org/shc", canonical: "https://canonical.example.org/shc", name: "Alias", jwks: jwks,
                    crls: [], keyCount: 3)
            ], client: owner)
        let records = HealthRecords(client: server.pool)
        let presented = try await records.presentCards(
            campus: campus, user: member, cards: [try Cards.jws(iss: "https://alias.example.org/shc")], actor: "test",
            now: Date(timeIntervalSince1970: 1_800_000_000))
        #expect(presented.issuers == ["https://canonical.example.org/shc"])
        // The servers' own login may only read the directory.
        await #expect(throws: PostgresError.self) {
            try await SHCDirectory.replace([], client: server.pool)
        }
        await owner.shutdown()
        await server.pool.shutdown()
    }
}

extension VaccinationTests {
    @Test func attestSHCImportsTheSignedDirectoryAddsListsAndRemovesACampusIssuerAndErasureTakesTheDoses() async throws {
        let cli = try await AdminCLITests.cli()
        #expect(try await cli.run("campus", "create", "north", "--name", "North", "--timezone", "UTC").status == 0)
        #expect(try await cli.run("user", "add", "north", "alice@example.edu", "--name", "Alice Member").status == 0)
        let fixtures = Cards.directory.path
        let imported = try await cli.run(
            "shc", "directory", "import", fixtures + "/vci_snapshot.json", "--signature", fixtures + "/vci_snapshot.sig",
            "--certificate", fixtures + "/vci_snapshot.crt")
        #expect(imported.status == 0, "\(imported.stderr)")
        #expect(
            imported.stdout.contains("Imported 650 issuers and 961 keys from the VCI Directory (signature verified)."), "\(imported.stdout)"
        )
        let owner = TestDatabase.client(database: cli.database, role: nil, maxConnections: 1)
        func count(_ table: String) async throws -> Int {
            try await owner.query("SELECT count(*) AS n FROM \(identifier: table)")[0].decode("n")
        }
        #expect(try await count("shc_directory") == 650)
        // A snapshot changed by a byte, or signed by something else: refused, the directory as it was.
        let directory = FileManager.default.temporaryDirectory.appending(path: "attest-shc-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var changed = try Cards.file("vci_snapshot.json")
        changed[100] ^= 0x20
        try changed.write(to: directory.appending(path: "changed.json"))
        let refused = try await cli.run(
            "shc", "directory", "import", directory.appending(path: "changed.json").path, "--signature", fixtures + "/vci_snapshot.sig",
            "--certificate", fixtures + "/vci_snapshot.crt")
        AdminCLITests.expectFailure(refused, "the signature does not verify")
        AdminCLITests.expectFailure(
            try await cli.run(
                "shc", "directory", "import", fixtures + "/vci_snapshot.json", "--signature", fixtures + "/vci_snapshot.sig",
                "--certificate", fixtures + "/example-issuer-jwks.json"),
            "not an X.509 certificate")
        #expect(try await count("shc_directory") == 650)

        // The example issuer's private JWKS given by mistake: only the keys' public halves are
        // stored, and the operator is told (the public one replaces it below).
        let privately = try await cli.run(
            "shc", "issuer", "add", "north", Cards.iss, "--jwks-file", fixtures + "/example-issuer-jwks.private.json")
        #expect(
            privately.status == 0 && privately.stderr.contains("holds the issuer's private keys: only their public halves were stored"),
            "[\(privately.stdout)] [\(privately.stderr)]")
        let kept = try await owner.query("SELECT jwks::text AS jwks FROM shc_issuers WHERE iss = \(Cards.iss)")
        let keptText = try kept.first?.decode("jwks", as: String.self) ?? ""
        #expect(keptText.contains(#""x":"#) && !keptText.contains(#""d":"#), "\(keptText)")
        let privateAudit = try await cli.run("audit", "north", "--json")
        #expect(privateAudit.stdout.contains("privateParametersDropped"), "\(privateAudit.stdout)")

        // The example issuer at one campus; a JWKS without a usable key, and an iss that is no URL, refused.
        let added = try await cli.run("shc", "issuer", "add", "north", Cards.iss, "--jwks-file", fixtures + "/example-issuer-jwks.json")
        #expect(added.status == 0 && added.stdout.contains("north trusts \(Cards.iss) with 2 keys"), "[\(added.stdout)] [\(added.stderr)]")
        try Data(#"{"keys": [{"kty": "RSA", "kid": "r", "n": "x", "e": "AQAB"}]}"#.utf8).write(to: directory.appending(path: "rsa.json"))
        AdminCLITests.expectFailure(
            try await cli.run(
                "shc", "issuer", "add", "north", "https://rsa.example.org", "--jwks-file", directory.appending(path: "rsa.json").path),
            "holds no ES256 key")
        AdminCLITests.expectFailure(
            try await cli.run("shc", "issuer", "add", "north", "issuer", "--jwks-file", fixtures + "/example-issuer-jwks.json"),
            "https URL")
        AdminCLITests.expectFailure(
            try await cli.run(
                "shc", "issuer", "add", "north", Cards.iss, "--jwks-file", fixtures + "/example-issuer-jwks.json", "--name",
                String(repeating: "n", count: 301)),
            "1 to 300 characters")

        // A birth date recorded by hand, then a card under strict, then erasure takes the doses.
        AdminCLITests.expectFailure(try await cli.run("user", "birth-date", "north", "alice@example.edu", "1990-13-01"), "YYYY-MM-DD")
        AdminCLITests.expectFailure(try await cli.run("user", "birth-date", "north", "nobody@example.edu", "1990-04-02"), "no member")
        #expect(try await cli.run("user", "birth-date", "north", "alice@example.edu", "1990-04-02").status == 0)
        let campus = try await CampusStore(client: owner).set(
            slug: "north", key: "settings", value: #"{"shc-identity": "strict"}"#, actor: "test")
        let alice = try #require(try await UserStore(client: owner).find(campus: campus.id, email: "alice@example.edu"))
        let presented = try await HealthRecords(client: owner).presentCards(
            campus: campus, user: alice, cards: [try Cards.jws()], actor: "test", now: Date())
        #expect(presented.doses.count == 2)
        #expect(try await count("vaccinations") == 2)

        // The campus's own issuers listed with the members their cards gave doses; removed,
        // audited, its next card refused and the doses kept; a second removal refused.
        let listed = try await cli.run("shc", "issuer", "list", "north")
        #expect(
            listed.status == 0 && listed.stdout.contains("\(Cards.iss): 2 keys, 0 revocation lists, added ")
                && listed.stdout.contains("doses kept for 1 member\n") && listed.stdout.contains("VCI Directory's 650 issuers"),
            "[\(listed.stdout)] [\(listed.stderr)]")
        let listedJSON = try await cli.run("shc", "issuer", "list", "north", "--json")
        #expect(listedJSON.stdout.contains(#""keys":2,"members":1"#), "\(listedJSON.stdout)")
        let removed = try await cli.run("shc", "issuer", "remove", "north", Cards.iss)
        #expect(
            removed.status == 0 && removed.stdout.contains("north no longer trusts \(Cards.iss)")
                && removed.stdout.contains("kept for 1 member from its cards stay"), "[\(removed.stdout)] [\(removed.stderr)]")
        await #expect(throws: SmartHealthCards.Refused.self) {
            do {
                _ = try await HealthRecords(client: owner).presentCards(
                    campus: campus, user: alice, cards: [try Cards.jws()], actor: "test", now: Date())
            } catch let refused as SmartHealthCards.Refused {
                #expect(refused.refusal == .unknownIssuer)
                throw refused
            }
        }
        #expect(try await count("vaccinations") == 2)
        AdminCLITests.expectFailure(
            try await cli.run("shc", "issuer", "remove", "north", Cards.iss), "does not trust \(Cards.iss) of its own")
        let emptied = try await cli.run("shc", "issuer", "list", "north")
        #expect(emptied.stdout.contains("north trusts no issuers of its own"), "\(emptied.stdout)")
        let audited = try await owner.query("SELECT details->>'membersWithDoses' AS n FROM audit_log WHERE action = 'shc.issuer.remove'")
        #expect(try audited.map { try $0.decode("n", as: String.self) } == ["1"])
        #expect(try await cli.run("user", "erase", "north", "alice@example.edu", "--yes").status == 0)
        #expect(try await count("vaccinations") == 0)

        // An issuer whose key was stolen: removed with its doses, the members' statuses recomputed at once.
        #expect(try await cli.run("user", "add", "north", "bo@example.edu", "--name", "Bo Member").status == 0)
        #expect(
            try await cli.run("shc", "issuer", "add", "north", Cards.iss, "--jwks-file", fixtures + "/example-issuer-jwks.json").status == 0
        )
        let open = try await CampusStore(client: owner).set(
            slug: "north", key: "settings", value: #"{"shc-identity": "off"}"#, actor: "test")
        let bo = try #require(try await UserStore(client: owner).find(campus: open.id, email: "bo@example.edu"))
        let given = try await HealthRecords(client: owner).presentCards(
            campus: open, user: bo, cards: [try Cards.jws()], actor: "test", now: Date())
        #expect(given.vaccination != nil)
        func vaccinated() async throws -> Bool {
            try await owner.query("SELECT health ? 'vaccination' AS v FROM member_health WHERE user_id = \(bo.id)").first?.decode(
                "v", as: Bool?.self) ?? false
        }
        #expect(try await vaccinated())
        let forgotten = try await cli.run("shc", "issuer", "remove", "north", Cards.iss, "--forget-doses")
        #expect(
            forgotten.status == 0
                && forgotten.stdout.contains("the doses of 1 member from its cards are deleted and their statuses recomputed"),
            "[\(forgotten.stdout)] [\(forgotten.stderr)]")
        #expect(try await count("vaccinations") == 0)
        #expect(try await !vaccinated())
        let audit = try await owner.query(
            "SELECT details->>'dosesForgotten' AS f FROM audit_log WHERE action = 'shc.issuer.remove' ORDER BY at")
        #expect(try audit.map { try $0.decode("f", as: String.self) } == ["false", "true"])
        await owner.shutdown()
    }
}
