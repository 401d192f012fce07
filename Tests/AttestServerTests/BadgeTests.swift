import AttestFoundation
import AttestPlugins
import AttestPluginsTesting
import AttestPostgres
import AttestTestSupport
import Crypto
import Foundation
import JWTKit
import Tenancy
import Testing

@testable import AttestAPI
@testable import AttestServer
@testable import AttestWeb
@testable import Surveys

/// What a door scanner decodes, with jwt-kit, from a badge token.
struct ScannedBadge: JWTPayload {
    var campus: String
    var sub: SubjectClaim
    var date: String
    var color: String
    var iat: IssuedAtClaim
    var exp: ExpirationClaim

    /// Expiry is checked by the test against its own clock (`exp.verifyNotExpired(currentDate:)`).
    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

@Suite("Badges")
struct BadgeTests {
    static let badgePath = "/v1/campuses/{campus}/me/badge"
    static let keysPath = "/v1/campuses/{campus}/badge-keys"
    static let verifyPath = "/v1/campuses/{campus}/badges/verify"
    static let submitPath = "/v1/campuses/{campus}/attestations"

    /// A door scanner: the campus's JWKS fetched once, then tokens checked offline.
    static func scanner(_ api: APIClient, campus: String) async throws -> JWTKeyCollection {
        let jwks = try await api.send(.get, "/v1/campuses/\(campus)/badge-keys", template: keysPath)
        #expect(jwks.status == 200)
        #expect(jwks.headers[.cacheControl] == "public, max-age=300")
        return try await JWTKeyCollection().add(jwksJSON: jwks.body)
    }

    static func payload(of token: String) throws -> [String: Any] { try part(1, of: token) }

    /// The JSON of a JWS part (0 header, 1 payload), decoded without checking anything.
    static func part(_ index: Int, of token: String) throws -> [String: Any] {
        let part = token.split(separator: ".")[index]
        var base64 = part.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return try JSONSerialization.jsonObject(with: Data(base64Encoded: base64)!) as! [String: Any]
    }

    static func verify(_ api: APIClient, _ token: String, at campus: String = "north", as screener: String) async throws -> APIClient.Reply
    {
        let body = String(decoding: try JSONSerialization.data(withJSONObject: ["token": token]), as: UTF8.self)
        return try await api.send(.post, "/v1/campuses/\(campus)/badges/verify", template: verifyPath, token: screener, json: body)
    }

    @Test func grayUntilSubmittedThenASignedBadgeAScannerChecksOffline() async throws {
        let clock = TestClock(Date())
        let (server, campus) = try await AttestationTests.setUp(clock: clock)
        let (member, token) = try await server.user("m@example.edu", at: campus)
        let pseudonym: UUID = try await server.pool.query(
            "SELECT pseudonym FROM users WHERE campus_id = \(campus.id) AND id = \(member.id)", campus: campus.id.rawValue)[0].decode(
                "pseudonym")
        let today = campus.localDate(at: clock.read()).description
        try await server.run { api in
            let gray = try await api.send(.get, "/v1/campuses/north/me/badge", template: Self.badgePath, token: token)
            #expect(gray.status == 200)
            #expect(gray.json["color"] as? String == "gray")
            #expect(gray.json["reason"] as? String == BadgeService.notSubmitted)
            #expect(gray.json["date"] as? String == today)
            #expect(gray.headers[.cacheControl] == "no-store")

            let submitted = try await api.send(
                .post, "/v1/campuses/north/attestations", template: Self.submitPath, token: token,
                json: AttestationTests.body(#"{"fever": true, "cough": false}"#))
            #expect(submitted.status == 201)
            let badge = try await api.send(.get, "/v1/campuses/north/me/badge", template: Self.badgePath, token: token)
            #expect(badge.json["color"] as? String == "yellow")
            #expect(badge.json["validUntil"] as? String == (submitted.json["badge"] as? [String: Any])?["validUntil"] as? String)
            let badgeToken = try #require(badge.json["token"] as? String)

            // The token names the member by the day's subject (an HMAC of the pseudonym and the
            // date under the campus's subject key): never the email, nor the pseudonym itself.
            let claims = try Self.payload(of: badgeToken)
            let subjectKey = try await server.services.badges.keys.subjectKey(campus: campus.id)
            let todaysSubject = BadgeKeyStore.subject(pseudonym: pseudonym, date: campus.localDate(at: clock.read()), key: subjectKey)
            #expect(claims["sub"] as? String == todaysSubject)
            #expect(claims["sub"] as? String != pseudonym.uuidString.lowercased())
            #expect(!claims.description.contains("@"))
            // Read again the same day, the subject is the same; a door cannot link it to tomorrow's.
            let again = try await api.send(.get, "/v1/campuses/north/me/badge", template: Self.badgePath, token: token)
            #expect(try Self.payload(of: try #require(again.json["token"] as? String))["sub"] as? String == todaysSubject)

            // Offline, with jwt-kit and the published keys only.
            let scanned = try await Self.scanner(api, campus: "north").verify(badgeToken, as: ScannedBadge.self)
            #expect(scanned.campus == "north" && scanned.color == "yellow" && scanned.date == today)
            try scanned.exp.verifyNotExpired(currentDate: clock.read())
            #expect(throws: JWTError.self) {
                try scanned.exp.verifyNotExpired(currentDate: clock.read().addingTimeInterval(86_400 + 3_600))
            }

            // At the door, online.
            let (_, screener) = try await server.user("door@example.edu", at: campus, roles: [.screener])
            let checked = try await Self.verify(api, badgeToken, as: screener)
            #expect(checked.status == 200)
            #expect(checked.json["valid"] as? Bool == true)
            #expect(checked.json["color"] as? String == "yellow")
            #expect(checked.json["date"] as? String == today)

            // Members and health officers do not verify badges; admins do.
            let refused = try await Self.verify(api, badgeToken, as: token)
            #expect(refused.status == 403)
            let (_, officer) = try await server.user("ho@example.edu", at: campus, roles: [.healthOfficer])
            #expect(try await Self.verify(api, badgeToken, as: officer).status == 403)
            let (_, admin) = try await server.user("admin@example.edu", at: campus, roles: [.admin])
            #expect(try await Self.verify(api, badgeToken, as: admin).json["valid"] as? Bool == true)
            #expect(try await api.send(.get, "/v1/campuses/north/me/badge", template: Self.badgePath).status == 401)
        }
    }

    @Test func tamperedExpiredForeignAndForgedTokensAreRefusedWithTheReason() async throws {
        let clock = TestClock(Date())
        let (server, north) = try await AttestationTests.setUp(clock: clock)
        let south = try await server.campus("south")
        _ = try await QuestionnaireStore(client: server.pool).publish(campus: south, draft: AttestationTests.draft, actor: "test")
        let (_, member) = try await server.user("m@example.edu", at: north)
        let (_, southMember) = try await server.user("m@example.edu", at: south)
        let (_, screener) = try await server.user("door@example.edu", at: north, roles: [.screener])
        try await server.run { api in
            _ = try await api.send(
                .post, "/v1/campuses/north/attestations", template: Self.submitPath, token: member,
                json: AttestationTests.body(#"{"fever": false, "cough": false, "temperature": 39.2}"#))
            let red = try #require(
                try await api.send(.get, "/v1/campuses/north/me/badge", template: Self.badgePath, token: member).json["token"] as? String)
            #expect(try Self.payload(of: red)["color"] as? String == "red")
            let scanner = try await Self.scanner(api, campus: "north")
            // As a keyboard-wedge scanner types it (a line end after it) or pasted with spaces:
            // the same token, as the page's form reads it.
            for typed in [red + "\r\n", " \(red)\t", red + "\n"] {
                let reply = try await Self.verify(api, typed, as: screener)
                #expect(reply.json["valid"] as? Bool == true && reply.json["color"] as? String == "red", "\(reply.body)")
            }
            #expect(try await Self.verify(api, " \r\n", as: screener).problem.fields == ["token"])

            // Tampered: the payload says green, the signature was made for red.
            let parts = red.split(separator: ".").map(String.init)
            let green = try Self.payload(of: red).merging(["color": "green"]) { $1 }
            let forgedPayload = try JSONSerialization.data(withJSONObject: green, options: .sortedKeys).base64EncodedString()
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            let tampered = [parts[0], forgedPayload, parts[2]].joined(separator: ".")
            let tamperedReply = try await Self.verify(api, tampered, as: screener)
            #expect(tamperedReply.json["valid"] as? Bool == false)
            #expect(tamperedReply.json["reason"] as? String == "bad-signature")
            await #expect(throws: (any Error).self) { try await scanner.verify(tampered, as: ScannedBadge.self) }

            // Another campus's genuine badge: signed with a key north does not have, so its
            // claims are never read here.
            let foreign = try #require(
                try await api.send(.get, "/v1/campuses/south/me/badge", template: Self.badgePath, token: southMember).json["token"]
                    as? String)
            #expect(try await Self.verify(api, foreign, as: screener).json["reason"] as? String == "unknown-key")
            await #expect(throws: (any Error).self) { try await scanner.verify(foreign, as: ScannedBadge.self) }
            _ = try await Self.scanner(api, campus: "south").verify(foreign, as: ScannedBadge.self)

            // Signed by a key this campus never had, claiming to be north's.
            let rogue = P256.Signing.PrivateKey()
            let rogueKey = try await JWTKeyCollection().add(ecdsa: ES256PrivateKey(backing: rogue), kid: "rogue")
            let forged = try await rogueKey.sign(
                ScannedBadge(
                    campus: "north", sub: "x", date: "2026-11-20", color: "green", iat: .init(value: Date()),
                    exp: .init(value: Date().addingTimeInterval(3600))),
                kid: "rogue")
            let forgedReply = try await Self.verify(api, forged, as: screener)
            #expect(forgedReply.json["reason"] as? String == "unknown-key", "\(forgedReply.body) \(forged)")
            await #expect(throws: (any Error).self) { try await scanner.verify(forged, as: ScannedBadge.self) }

            for garbage in ["", "a.b", "not.a.token", red + "x.y"] {
                let reply = try await Self.verify(api, garbage, as: screener)
                if garbage.isEmpty {
                    #expect(reply.status == 422 && reply.problem.fields == ["token"])
                } else {
                    #expect(reply.json["reason"] as? String == "malformed", "\(garbage)")
                }
            }
            let extra = try await api.send(
                .post, "/v1/campuses/north/badges/verify", template: Self.verifyPath, token: screener,
                json: #"{"token": 5, "colour": "green"}"#)
            #expect(extra.status == 422 && extra.problem.fields == ["token", "colour"])
            let nameless = try await api.send(
                .post, "/v1/campuses/north/badges/verify", template: Self.verifyPath, token: screener, json: #"{"token": "a.b.c", "": 1}"#)
            #expect(nameless.status == 422 && nameless.problem.fields == [#""""#], "\(nameless.body)")
            #expect(nameless.problem.detail == #""": is not a field of a verification request"#)

            // Tomorrow, today's badge has expired.
            try clock.set(clock.read().addingTimeInterval(26 * 3600).ISO8601Format())
            let expired = try await Self.verify(api, red, as: screener)
            #expect(expired.json["valid"] as? Bool == false)
            #expect(expired.json["reason"] as? String == "expired")
            // And the member's badge of the new day names them by another subject.
            let tomorrow = try await api.send(.get, "/v1/campuses/north/me/badge", template: Self.badgePath, token: member)
            let newSubject = try Self.payload(of: try #require(tomorrow.json["token"] as? String))["sub"] as? String
            let oldSubject = try Self.payload(of: red)["sub"] as? String
            #expect(newSubject != nil && newSubject != oldSubject)
        }
    }

    /// Badge keys are sealed under the operator's key-encryption key: the database holds no
    /// private key in the clear, a store with another key cannot open them, one without a key
    /// verifies and publishes but cannot sign, and a key stored before sealing is sealed by
    /// the start-up check.
    @Test func badgeKeysAreSealedAtRestAndAServerWithoutTheKeyOnlyVerifies() async throws {
        let clock = TestClock(Date())
        let (server, campus) = try await AttestationTests.setUp(clock: clock)
        let (member, token) = try await server.user("m@example.edu", at: campus)
        let owner = TestDatabase.client(database: server.database, role: nil)
        defer { Task { await owner.shutdown() } }
        let stored = try await owner.query("SELECT kid, private_key, kek_id FROM badge_keys WHERE campus_id = \(campus.id)")
        #expect(stored.count == 1)
        let kid: String = try stored[0].decode("kid")
        let sealed: Data = try stored[0].decode("private_key")
        #expect(try stored[0].decode("kek_id", as: String?.self) == TestServer.kek.id)
        let signing = try #require(try await server.services.badges.keys.keys(campus: campus.id).first?.privateKey)
        #expect(sealed.range(of: signing.rawRepresentation) == nil && sealed.count == 129)

        let other = BadgeKeyStore(client: server.pool, kek: KeyEncryptionKey.generate().key)
        await #expect(throws: CampusError.self) { try await other.keys(campus: campus.id) }
        await #expect(throws: CampusError.self) { try await other.prepare(campus: campus.id) }

        let verifyOnly = BadgeService(client: server.pool, keys: BadgeKeyStore(client: server.pool, kek: nil))
        let published = try await verifyOnly.keys.keys(campus: campus.id)
        #expect(published.map(\.kid) == [kid] && published[0].privateKey == nil)
        await #expect(throws: CampusError.noKeyEncryptionKey) {
            try await verifyOnly.today(campus: campus, user: member.id, now: clock.read())
        }
        try await server.run { api in
            let badge = try #require(
                try await api.send(.get, "/v1/campuses/north/me/badge", template: Self.badgePath, token: token).json["token"] as? String)
            #expect(try await verifyOnly.verify(token: badge, campus: campus, now: clock.read()) != .invalid(.badSignature))
            guard case .valid = try await verifyOnly.verify(token: badge, campus: campus, now: clock.read()) else {
                Issue.record("a store with public keys only did not verify a genuine badge")
                return
            }
        }

        // A key stored in the clear, as before keys were sealed: the start-up check seals it.
        let legacy = P256.Signing.PrivateKey()
        let jwk = BadgeKey(kid: "legacy", publicKey: legacy.publicKey, retiredAt: Date(), privateKey: legacy).jwk
        try await owner.query(
            """
            INSERT INTO badge_keys (campus_id, kid, algorithm, private_key, public_jwk, retired_at)
            VALUES (\(campus.id), 'legacy', 'ES256', \(legacy.rawRepresentation), \(try PostgresJSON(encoding: jwk)), now())
            """)
        let store = BadgeKeyStore(client: TestDatabase.client(database: server.database), kek: TestServer.kek)
        #expect(try await store.prepare(campus: campus.id) == 1)
        #expect(try await store.prepare(campus: campus.id) == 0)
        let resealed = try await owner.query("SELECT private_key, kek_id FROM badge_keys WHERE kid = 'legacy'")
        #expect(try resealed[0].decode("kek_id", as: String?.self) == TestServer.kek.id)
        #expect(try resealed[0].decode("private_key", as: Data.self) != legacy.rawRepresentation)
        #expect(
            try await store.keys(campus: campus.id).first { $0.kid == "legacy" }?.privateKey?.rawRepresentation == legacy.rawRepresentation)
    }

    /// The attack of issue 29: a scanner posts whatever QR code it is shown. A token whose
    /// claims hold numbers no time can be (1e300) once trapped the process while its claims
    /// were read before the signature; unsigned it is refused by key, and signed with the
    /// campus's own key its claims are refused as malformed. Every campus stays up.
    @Test func aForgedBadgeWithHugeNumbersIsRefusedAndTheServerStaysUp() async throws {
        let (server, campus) = try await AttestationTests.setUp(clock: TestClock(Date()))
        let (_, screener) = try await server.user("door@example.edu", at: campus, roles: [.screener])
        let key = try #require(try await server.services.badges.keys.keys(campus: campus.id).first)
        @Sendable func b64(_ text: String) -> String { Base64URL.encode(Array(text.utf8)) }
        let claims = [
            #"{"campus":"north","sub":"x","date":"2026-11-21","color":"green","iat":1e300,"exp":1e300}"#,
            #"{"campus":"north","sub":"x","date":"2026-11-21","color":"green","iat":1,"exp":-1e300}"#,
            #"{"campus":"north","sub":"x","date":"2026-11-21","color":"green","iat":1,"exp":9007199254740993}"#,
            #"{"campus":"north","sub":"x","date":"2026-11-21","color":"green","iat":1,"exp":4102444800.5}"#,
            #"{"campus":"north","sub":"x","date":"2026-02-30","color":"green","iat":1,"exp":4102444800}"#,
            #"{"campus":"north","sub":"x","date":"2026-11-21","color":"blue","iat":1,"exp":4102444800}"#,
            #"{"campus":"north","sub":"x","date":"2026-11-21","color":"green","iat":"1","exp":4102444800}"#,
            #"{"campus":"north","sub":"x","date":"2026-11-21","color":"green","iat":1,"exp":4102444800,"admin":true}"#,
        ]
        try await server.run { api in
            let unsigned = b64(#"{"alg":"ES256","kid":"k"}"#) + "." + b64(claims[0]) + "." + String(repeating: "A", count: 86)
            let first = try await Self.verify(api, unsigned, as: screener)
            #expect(first.status == 200 && first.json["valid"] as? Bool == false)
            #expect(first.json["reason"] as? String == "unknown-key", "\(first.body)")
            for payload in claims {
                let input = key.encodedHeader + "." + b64(payload)
                let signature = try #require(key.privateKey).signature(for: Array(input.utf8)).rawRepresentation
                let reply = try await Self.verify(api, input + "." + Base64URL.encode(signature), as: screener)
                #expect(reply.status == 200 && reply.json["valid"] as? Bool == false, "\(payload)")
                #expect(reply.json["reason"] as? String == "malformed", "\(payload): \(reply.body)")
            }
            // The same campus and key still verify an honest badge: the checks are of the claims.
            let honest = #"{"campus":"north","color":"green","date":"2026-11-21","exp":4102444800,"iat":1,"sub":"x"}"#
            let input = key.encodedHeader + "." + b64(honest)
            let signature = try #require(key.privateKey).signature(for: Array(input.utf8)).rawRepresentation
            #expect(try await Self.verify(api, input + "." + Base64URL.encode(signature), as: screener).json["valid"] as? Bool == true)
        }
    }

    @Test func aRotatedKeyStillVerifiesItsBadgesAndNewBadgesUseTheNewKey() async throws {
        let clock = TestClock(Date())
        let (server, campus) = try await AttestationTests.setUp(clock: clock)
        let (_, member) = try await server.user("m@example.edu", at: campus)
        let (_, screener) = try await server.user("door@example.edu", at: campus, roles: [.screener])
        try await server.run { api in
            let before = try #require(
                try await api.send(.get, "/v1/campuses/north/me/badge", template: Self.badgePath, token: member).json["token"] as? String)
            let (kid, retired) = try await server.services.badges.keys.rotate(campus: campus, actor: "test")
            #expect(retired.count == 1)
            let after = try #require(
                try await api.send(.get, "/v1/campuses/north/me/badge", template: Self.badgePath, token: member).json["token"] as? String)
            func kidOf(_ token: String) throws -> String? { try Self.part(0, of: token)["kid"] as? String }
            #expect(try kidOf(after) == kid)
            #expect(try kidOf(before) == retired[0])
            let keys = try await api.send(.get, "/v1/campuses/north/badge-keys", template: Self.keysPath)
            #expect(((keys.json["keys"] as? [[String: Any]]) ?? []).compactMap { $0["kid"] as? String } == [kid, retired[0]])
            let scanner = try await Self.scanner(api, campus: "north")
            _ = try await scanner.verify(before, as: ScannedBadge.self)
            _ = try await scanner.verify(after, as: ScannedBadge.self)
            #expect(try await Self.verify(api, before, as: screener).json["valid"] as? Bool == true)
            #expect(try await Self.verify(api, after, as: screener).json["valid"] as? Bool == true)
        }
        // Past its two days, a retired key is neither published nor trusted.
        let client = TestDatabase.client(database: server.database)
        _ = try await client.withTransaction(campus: campus.id.rawValue) { connection in
            try await connection.query("UPDATE badge_keys SET retired_at = now() - interval '3 days' WHERE retired_at IS NOT NULL")
        }
        #expect(try await BadgeKeyStore(client: client, kek: TestServer.kek).keys(campus: campus.id).count == 1)
        await client.shutdown()
    }

    /// Badge reads of one campus and day are looked up together (one query per batch); each
    /// member must still get a badge with their own colour and pseudonym, and a deleted member
    /// a 401 (whether or not the session was still cached), never a badge or a 5xx.
    @Test func concurrentBadgeReadsEachGetTheirOwnBadge() async throws {
        let clock = TestClock(Date())
        let (server, campus) = try await AttestationTests.setUp(clock: clock)
        let answers = [
            "red": #"{"fever": false, "cough": false, "temperature": 38.6}"#,
            "yellow": #"{"fever": false, "cough": true}"#,
            "green": #"{"fever": false, "cough": false}"#,
        ]
        var members: [(token: String, pseudonym: String, color: String)] = []
        for index in 0..<30 {
            let (member, token) = try await server.user("b\(index)@example.edu", at: campus)
            let pseudonym: UUID = try await server.pool.query(
                "SELECT pseudonym FROM users WHERE campus_id = \(campus.id) AND id = \(member.id)", campus: campus.id.rawValue)[0].decode(
                    "pseudonym")
            members.append((token, pseudonym.uuidString.lowercased(), ["red", "yellow", "green", "gray"][index % 4]))
        }
        let everyone = members
        try await server.run { api in
            for member in everyone where member.color != "gray" {
                let reply = try await api.send(
                    .post, "/v1/campuses/north/attestations", template: Self.submitPath, token: member.token,
                    json: AttestationTests.body(answers[member.color]!))
                #expect(reply.status == 201)
            }
            let scanner = try await Self.scanner(api, campus: "north")
            let subjectKey = try await server.services.badges.keys.subjectKey(campus: campus.id)
            let badges = try await api.withConnections(everyone.count) { clients in
                try await withThrowingTaskGroup(of: (Int, Int, String?).self) { group in
                    for (index, member) in everyone.enumerated() {
                        group.addTask {
                            let reply = try await clients[index].send(
                                .get, "/v1/campuses/north/me/badge", template: Self.badgePath, token: member.token)
                            return (index, reply.status, reply.json["token"] as? String)
                        }
                    }
                    return try await group.reduce(into: [(Int, Int, String?)]()) { $0.append($1) }
                }
            }
            #expect(badges.count == everyone.count)
            for (index, status, token) in badges {
                #expect(status == 200)
                let scanned = try await scanner.verify(try #require(token), as: ScannedBadge.self)
                let expected = BadgeKeyStore.subject(
                    pseudonym: try #require(UUID(uuidString: everyone[index].pseudonym)), date: campus.localDate(at: clock.read()),
                    key: subjectKey)
                #expect(scanned.sub.value == expected, "member \(index)")
                #expect(scanned.color == everyone[index].color, "member \(index)")
                #expect(try Self.part(0, of: token!).keys.sorted() == ["alg", "kid", "typ"])
            }

            // A member deleted while their session and badge are still kept gets no badge once
            // the servers read the campus's moved-on generation (deleting a member moves it on,
            // as every sign-out does; here at once rather than at the next second's poll).
            let deleted = everyone[0]
            _ = try await server.pool.withTransaction(campus: campus.id.rawValue) { connection in
                try await connection.query("DELETE FROM users WHERE campus_id = \(campus.id) AND email = 'b0@example.edu'")
                try await AuthGenerations.bump(connection, campus: campus.id)
            }
            try await server.services.authGenerations.refresh()
            let gone = try await api.send(.get, "/v1/campuses/north/me/badge", template: Self.badgePath, token: deleted.token)
            #expect(gone.status == 401, "\(gone.body)")
            #expect(gone.json["token"] == nil)
        }
    }
}
