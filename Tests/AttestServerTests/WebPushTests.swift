import AttestFoundation
import AttestPlugins
import AttestPluginsTesting
import AttestTestSupport
import Crypto
import Foundation
import HTTPTypes
import Notifications
import Tenancy
import Testing

/// Web Push encryption (RFC 8291, `aes128gcm` of RFC 8188) and VAPID (RFC 8292), read back by
/// implementations nobody here wrote: the PyPI `http-ece` decrypts with the browser's private
/// key, and `joserfc` verifies the VAPID JWT with the key the header names.
@Suite("Web Push")
struct WebPushTests {
    static let oracle = """
        import base64, json, sys, http_ece
        from cryptography.hazmat.primitives.asymmetric import ec
        from joserfc import jwt
        from joserfc.jwk import ECKey
        case = json.load(open(sys.argv[1]))
        def b(s): return base64.urlsafe_b64decode(s + '=' * (-len(s) % 4))
        def e(raw): return base64.urlsafe_b64encode(raw).rstrip(b'=').decode()
        browser = ec.derive_private_key(int.from_bytes(b(case['d']), 'big'), ec.SECP256R1())
        out = {'plaintexts': [http_ece.decrypt(b(body), private_key=browser, auth_secret=b(case['auth']), version='aes128gcm').decode('utf-8')
                              for body in case['bodies']]}
        token, key = case['authorization'].split('t=', 1)[1].split(', k=')
        public = b(key)
        verified = jwt.decode(token, ECKey.import_key({'kty': 'EC', 'crv': 'P-256', 'x': e(public[1:33]), 'y': e(public[33:])}), algorithms=['ES256'])
        out['header'] = verified.header
        out['claims'] = verified.claims
        print(json.dumps(out))
        """

    static func random(_ count: Int) -> Data {
        var generator = SystemRandomNumberGenerator()
        return Data((0..<count).map { _ in generator.next() })
    }

    @Test func http_eceDecryptsEveryMessageAndJoserfcVerifiesTheVAPIDToken() async throws {
        let browser = P256.KeyAgreement.PrivateKey()
        let p256dh = browser.publicKey.x963Representation, auth = Self.random(16)
        let messages = [
            #"{"title":"Daily check","body":"Answer today's questions","url":"/c/demo/"}"#, "Recordatorio: ¿cómo se siente hoy? ✓", "",
            String(repeating: "x", count: WebPushEncryption.maxPlaintext),
        ]
        let bodies = try messages.map { try WebPushEncryption.encrypt(Data($0.utf8), p256dh: p256dh, auth: auth) }
        // Each body: a 16-byte salt, the record size 4096, the sender's 65-byte key, then the record.
        for (body, message) in zip(bodies, messages) {
            #expect(body.count == 86 + message.utf8.count + 1 + 16 && body[16..<20] == Data([0, 0, 0x10, 0]) && body[20] == 65)
        }
        #expect(bodies.last?.count == 4096)
        let again = try WebPushEncryption.encrypt(Data(messages[0].utf8), p256dh: p256dh, auth: auth)
        #expect(again != bodies[0])  // a fresh key and salt every time

        let vapid = VAPIDKey(privateKey: P256.Signing.PrivateKey())
        let now = Date(timeIntervalSince1970: 1_795_000_000)
        let authorization = try vapid.authorization(
            endpoint: try #require(URL(string: "https://push.example.net:8443/send/abc?x=1")), subject: "mailto:ops@example.edu", now: now)
        #expect(authorization.hasSuffix(", k=" + vapid.publicKeyText))

        let input = FileManager.default.temporaryDirectory.appending(path: "webpush-\(UUID().uuidString.prefix(8)).json")
        let cases: [String: Any] = [
            "d": browser.rawRepresentation.base64URLEncoded(), "auth": auth.base64URLEncoded(),
            "bodies": bodies.map { $0.base64URLEncoded() }, "authorization": authorization,
        ]
        try JSONSerialization.data(withJSONObject: cases).write(to: input)
        defer { try? FileManager.default.removeItem(at: input) }
        let read = try await ChildProcess.run(["/usr/bin/env", "python3", "-c", Self.oracle, input.path])
        #expect(read.status == 0, "python3: \(read.stderr)")
        let out = try #require(try JSONSerialization.jsonObject(with: Data(read.stdout.utf8)) as? [String: Any])
        #expect(out["plaintexts"] as? [String] == messages)
        #expect((out["header"] as? [String: String])?["alg"] == "ES256")
        let claims = try #require(out["claims"] as? [String: Any])
        #expect(claims["aud"] as? String == "https://push.example.net:8443" && claims["sub"] as? String == "mailto:ops@example.edu")
        #expect(claims["exp"] as? Int == 1_795_000_000 + 12 * 3_600)
    }

    /// `newSenderKey` draws 32 random bytes and leaves it to the key's initializer to refuse
    /// zero and scalars not below P-256's order n; each key's public point must be its scalar's.
    @Test func aSenderKeyIsFreshAndItsOwnAndTheInitializerRefusesScalarsOutsideTheGroup() throws {
        let order = Data(
            stride(from: 0, to: 64, by: 2).map { offset -> UInt8 in
                let hex = Array("FFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551".utf8)
                return UInt8(String(decoding: hex[offset..<offset + 2], as: UTF8.self), radix: 16) ?? 0
            })
        var belowOrder = order
        belowOrder[31] -= 1
        for refused in [Data(count: 32), order, Data(repeating: 0xFF, count: 32), Data(repeating: 1, count: 31)] {
            #expect(throws: (any Error).self) { try P256.KeyAgreement.PrivateKey(rawRepresentation: refused) }
        }
        _ = try P256.KeyAgreement.PrivateKey(rawRepresentation: belowOrder)

        let browser = P256.KeyAgreement.PrivateKey()
        let keys = (0..<200).map { _ in WebPushEncryption.newSenderKey() }
        #expect(Set(keys.map(\.rawRepresentation)).count == 200)
        for key in keys {
            // The same secret both ways only when the sender's public point is its own scalar's.
            let sent = try key.sharedSecretFromKeyAgreement(with: browser.publicKey)
            let received = try browser.sharedSecretFromKeyAgreement(with: key.publicKey)
            #expect(sent == received)
        }
    }

    /// A VAPID token is signed once for each push service and contact and sent again for an
    /// hour, never with less than 11 of its 12 hours left; another service, contact or key, an
    /// hour gone or a clock that went back makes a new one.
    @Test func aVAPIDTokenIsMadeOnceForEachPushServiceAndContactAndUsedForAnHour() throws {
        func expiry(_ authorization: String) throws -> Int {
            let token = try #require(authorization.split(separator: "t=").last?.split(separator: ",").first)
            let parts = token.split(separator: ".")
            let claims = try #require(parts.count == 3 ? Data(base64URLEncoded: parts[1]) : nil)
            return try #require((try JSONSerialization.jsonObject(with: claims) as? [String: Any])?["exp"] as? Int)
        }
        let key = VAPIDKey(privateKey: P256.Signing.PrivateKey())
        let start = 1_795_000_000
        func at(_ seconds: Int, _ endpoint: String = "https://push.example.net/send/a", subject: String = "mailto:ops@example.edu")
            throws -> String
        {
            try key.authorization(
                endpoint: try #require(URL(string: endpoint)), subject: subject, now: Date(timeIntervalSince1970: Double(start + seconds)))
        }
        let first = try at(0)
        #expect(try expiry(first) == start + 12 * 3_600)
        // Another browser at the same service, later in the hour: the same token.
        #expect(try at(600, "https://push.example.net/send/b") == first)
        #expect(try at(3_599, "https://push.example.net/send/c?x=1") == first)
        // Another service (the port is the origin's), another contact: their own.
        let others = [
            try at(10, "https://fcm.example.com/send/a"), try at(10, "https://push.example.net:8443/send/a"),
            try at(10, subject: "mailto:health@example.edu"),
        ]
        #expect(Set(others + [first]).count == 4)
        #expect(try at(20, "https://fcm.example.com/send/z") == others[0])
        // An hour on: a new token, 12 hours from now.
        let later = try at(3_600)
        #expect(later != first)
        #expect(try expiry(later) == start + 3_600 + 12 * 3_600)
        // A clock that went back: a new token, never one that would last beyond 24 hours.
        let back = try at(1_800)
        #expect(back != later)
        #expect(try expiry(back) == start + 1_800 + 12 * 3_600)
        // Another key (a renewed one) signs its own, the same hour.
        let renewed = try VAPIDKey(privateKey: P256.Signing.PrivateKey()).authorization(
            endpoint: try #require(URL(string: "https://push.example.net/send/a")), subject: "mailto:ops@example.edu",
            now: Date(timeIntervalSince1970: Double(start + 1_800)))
        #expect(renewed != back && !renewed.hasSuffix(", k=" + key.publicKeyText))
    }

    @Test func aBadSubscriptionOrAnOversizedMessageIsRefusedWithTheReason() throws {
        let browser = P256.KeyAgreement.PrivateKey()
        let p256dh = browser.publicKey.x963Representation, auth = Self.random(16)
        for (key, secret, size, reason) in [
            (p256dh.dropFirst(), auth, 10, "p256dh must be an uncompressed P-256 point"),
            (browser.publicKey.compressedRepresentation, auth, 10, "p256dh must be an uncompressed"),
            (Data([4]) + Data(repeating: 7, count: 64), auth, 10, "p256dh must be an uncompressed"),  // not on the curve
            (p256dh, auth.prefix(8), 10, "auth secret must be 16 bytes"),
            (p256dh, auth, WebPushEncryption.maxPlaintext + 1, "at most 3993 bytes"),
        ] as [(Data, Data, Int, String)] {
            #expect {
                try WebPushEncryption.encrypt(Data(repeating: 65, count: size), p256dh: Data(key), auth: Data(secret))
            } throws: { error in
                "\(error)".contains(reason)
            }
        }
    }
}

/// The `web-push` channel end to end: a member's browser subscribes through the API, a reminder
/// at their minute reaches a push service on loopback with the campus's VAPID token, its body
/// decrypted by `http-ece` with the browser's key and the token verified by `joserfc`; a 410
/// forgets the browser; the subscription is stored sealed.
@Suite("Web Push channel")
struct WebPushChannelTests {
    static let subscriptionsPath = "/v1/campuses/{campus}/me/push-subscriptions"

    /// The campus with the `web-push` sink (`settings`) and Ana, push on, reminded at 07:30; her token.
    static func pushCampus(clock: TestClock, settings: [String: JSONValue]) async throws -> (TestServer, Campus, String) {
        let (server, north) = try await AttestationTests.setUp(clock: clock)
        try await CampusPluginStore(client: server.pool).enable(
            campus: north, kind: .sink, id: "web-push", settings: try MemberChannels.prepare(id: "web-push", settings: .object(settings)),
            actor: "test")
        let (ana, token) = try await server.user("ana@example.edu", at: north)
        try await NotificationPreferenceStore(client: server.pool).set(
            campus: north, user: ana.id, NotificationPreferences(email: false, push: true, reminderMinute: 7 * 60 + 30),
            now: clock.read())
        return (server, north, token)
    }

    @Test func aMembersBrowserGetsTheReminderEncryptedWithTheCampusKeyAndAGoneOneIsForgotten() async throws {
        let clock = try TestClock("2026-11-30T12:30:10Z")  // 07:30 in New York
        let (server, north, token) = try await Self.pushCampus(
            clock: clock, settings: ["subject": .string("mailto:health@example.edu"), "ttlSeconds": .number(3600)])
        let push = try await LoopbackServer.start()
        push.answer(.init(status: 201), .init(status: 410))
        let browsers = [P256.KeyAgreement.PrivateKey(), P256.KeyAgreement.PrivateKey()]
        let secrets = [WebPushTests.random(16), WebPushTests.random(16)]
        let worker = EmailChannelTests.worker(server, clock: clock)
        try await server.run { api in
            // Refused, each field named.
            let bad = try await api.send(
                .post, "/v1/campuses/north/me/push-subscriptions", template: Self.subscriptionsPath, token: token,
                json: #"{"endpoint": "ftp://x", "keys": {"p256dh": "AAAA", "auth": "=", "extra": 1}, "expirationTime": "soon"}"#)
            #expect(bad.status == 422, "\(bad.body)")
            #expect(Set(bad.problem.fields) == ["endpoint", "keys.p256dh", "keys.auth", "keys.extra", "expirationTime"], "\(bad.body)")
            for (index, browser) in browsers.enumerated() {
                let body = """
                    {"endpoint": "http://127.0.0.1:\(push.port)/push/\(index)", "expirationTime": null,
                     "keys": {"p256dh": "\(browser.publicKey.x963Representation.base64URLEncoded())", "auth": "\(secrets[index].base64URLEncoded())"}}
                    """
                let added = try await api.send(
                    .post, "/v1/campuses/north/me/push-subscriptions", template: Self.subscriptionsPath, token: token, json: body)
                #expect(added.status == 201, "\(added.body)")
            }
            let key = try await api.send(.get, "/v1/campuses/north/push-key", template: "/v1/campuses/{campus}/push-key", token: token)
            let publicKey = try #require(key.json["publicKey"] as? String)
            // Sealed: the endpoint is nowhere in the row.
            let stored = try await server.pool.query(
                "SELECT encode(subscription, 'escape') AS raw FROM push_subscriptions", campus: north.id.rawValue)
            #expect(stored.count == 2)
            #expect(try stored.allSatisfy { !(try $0.decode("raw", as: String.self)).contains("127.0.0.1") })

            try await worker.runOnce()
            let requests = push.requests
            #expect(requests.map(\.path).sorted() == ["/push/0", "/push/1"])
            let first = try #require(requests.first { $0.path == "/push/0" })
            #expect(first.header("Content-Encoding") == "aes128gcm" && first.header("TTL") == "3600")
            #expect(first.header("Urgency") == "normal" && first.header("Topic") == "attest-reminder")
            let authorization = try #require(first.header("Authorization"))
            #expect(authorization.hasSuffix(", k=" + publicKey))
            // Both browsers are at the same push service: one token, signed once.
            #expect(requests.map { $0.header("Authorization") } == [authorization, authorization])
            let input = FileManager.default.temporaryDirectory.appending(path: "webpush-\(UUID().uuidString.prefix(8)).json")
            let cases: [String: Any] = [
                "d": browsers[0].rawRepresentation.base64URLEncoded(), "auth": secrets[0].base64URLEncoded(),
                "bodies": [first.body.base64URLEncoded()], "authorization": authorization,
            ]
            try JSONSerialization.data(withJSONObject: cases).write(to: input)
            defer { try? FileManager.default.removeItem(at: input) }
            let read = try await ChildProcess.run(["/usr/bin/env", "python3", "-c", WebPushTests.oracle, input.path])
            #expect(read.status == 0, "python3: \(read.stderr)")
            let out = try #require(try JSONSerialization.jsonObject(with: Data(read.stdout.utf8)) as? [String: Any])
            let plaintext = try #require((out["plaintexts"] as? [String])?.first)
            let message = try #require(try JSONSerialization.jsonObject(with: Data(plaintext.utf8)) as? [String: String])
            #expect(message["url"] == "https://attest.example.edu/c/north/" && message["title"]?.contains("North") == true, "\(message)")
            let claims = try #require(out["claims"] as? [String: Any])
            #expect(claims["aud"] as? String == "http://127.0.0.1:\(push.port)" && claims["sub"] as? String == "mailto:health@example.edu")
            // The browser the service says is gone (410) is forgotten; the other kept.
            let left = try await server.pool.query("SELECT count(*)::int AS n FROM push_subscriptions", campus: north.id.rawValue)
            #expect(try left[0].decode("n", as: Int.self) == 1)
            #expect(try await OutboxStore(client: server.pool).list(campus: north.id, state: .delivered).count == 1)
            // Unsubscribing the browser that is left.
            let removed = try await api.send(
                .delete, "/v1/campuses/north/me/push-subscriptions?endpoint=http://127.0.0.1:\(push.port)/push/0",
                template: Self.subscriptionsPath, token: token)
            #expect(removed.status == 204, "\(removed.body)")
            let again = try await api.send(
                .delete, "/v1/campuses/north/me/push-subscriptions?endpoint=http://127.0.0.1:\(push.port)/push/0",
                template: Self.subscriptionsPath, token: token)
            #expect(again.status == 404)
        }
        await push.stop()
    }

    /// The settings page's own routes for its "Get reminders on this browser" button (push.js):
    /// the campus's public key, then the browser's subscription, kept and push turned on, only
    /// with the page's form token; a subscription that is not one is refused by field.
    @Test func theSettingsPageSubscribesThisBrowserWithItsFormToken() async throws {
        let (server, north) = try await AttestationTests.setUp(clock: try TestClock("2026-11-30T15:00:00Z"))
        let (ana, token) = try await server.user("ana@example.edu", at: north)
        let browser = P256.KeyAgreement.PrivateKey()
        try await server.run { api in
            let page = WebClient(api.client)
            page.cookies.withLock { $0["attest-north"] = token }
            let settings = try await page.get("/c/north/settings")
            let csrf = try #require(settings.csrf)
            #expect(settings.body.contains("id=\"push-subscribe\"") && settings.body.contains("data-csrf=\"\(csrf)\""))
            let key = try await page.get("/c/north/settings/push-key")
            let fromAPI = try await api.send(.get, "/v1/campuses/north/push-key", template: "/v1/campuses/{campus}/push-key", token: token)
            let publicKey = try #require(
                (try JSONSerialization.jsonObject(with: Data(key.body.utf8)) as? [String: String])?["publicKey"], "\(key.body)")
            #expect(key.status == 200 && publicKey == fromAPI.json["publicKey"] as? String)
            #expect(Data(base64URLEncoded: publicKey)?.count == 65, "an uncompressed P-256 point, as applicationServerKey wants")

            let body = """
                {"endpoint": "https://push.example.net/send/abc", "expirationTime": null,
                 "keys": {"p256dh": "\(browser.publicKey.x963Representation.base64URLEncoded())", "auth": "\(WebPushTests.random(16).base64URLEncoded())"}}
                """
            let json: HTTPFields = [.contentType: "application/json"]
            var withToken = json
            withToken[HTTPField.Name("X-CSRF-Token")!] = csrf
            #expect(try await page.send(.post, "/c/north/settings/push", headers: json, body: body).status == 403, "no form token")
            let bad = try await page.send(
                .post, "/c/north/settings/push", headers: withToken,
                body: #"{"endpoint": "ftp://x", "keys": {"p256dh": "AAAA", "auth": "="}}"#)
            // A page, as every refusal under /c/ is (push.js only asks whether it was accepted), naming each field.
            #expect(bad.status == 422 && bad.headers[.contentType]?.hasPrefix("text/html") == true, "\(bad.status)")
            for field in ["endpoint", "keys.p256dh", "keys.auth"] { #expect(bad.body.contains(field), "\(field): \(bad.body)") }
            @Sendable func subscriptions() async throws -> Int {
                try await server.pool.query(
                    "SELECT count(*)::int AS n FROM push_subscriptions WHERE campus_id = \(north.id)", campus: north.id.rawValue
                )[0].decode("n")
            }
            #expect(try await subscriptions() == 0)
            #expect(try await NotificationPreferenceStore(client: server.pool).preferences(campus: north.id, user: ana.id).push == false)

            let added = try await page.send(.post, "/c/north/settings/push", headers: withToken, body: body)
            #expect(added.status == 204, "\(added.body)")
            #expect(try await subscriptions() == 1)
            #expect(try await NotificationPreferenceStore(client: server.pool).preferences(campus: north.id, user: ana.id).push)
        }
    }

    /// `attest push keys new` while a server runs (the CLI is another process, with its own
    /// store): the server hands out the new public key at once, refuses a subscription a
    /// browser made with the old one (409, nothing kept: push.js subscribes again), and signs
    /// its next push with the new key, though it had the old one in hand.
    @Test func aKeyRenewedElsewhereIsWhatARunningServerHandsOutChecksAndSignsWith() async throws {
        let clock = try TestClock("2026-11-30T12:30:10Z")  // 07:30 in New York
        let (server, north, token) = try await Self.pushCampus(clock: clock, settings: ["subject": .string("mailto:health@example.edu")])
        let push = try await LoopbackServer.start()
        push.answer(.init(status: 201))
        let browser = P256.KeyAgreement.PrivateKey(), auth = WebPushTests.random(16)
        let worker = EmailChannelTests.worker(server, clock: clock)
        try await server.run { api in
            func subscribe(madeWith key: String) async throws -> APIClient.Reply {
                try await api.send(
                    .post, "/v1/campuses/north/me/push-subscriptions", template: Self.subscriptionsPath, token: token,
                    json: """
                        {"endpoint": "http://127.0.0.1:\(push.port)/push/0", "applicationServerKey": "\(key)",
                         "keys": {"p256dh": "\(browser.publicKey.x963Representation.base64URLEncoded())", "auth": "\(auth.base64URLEncoded())"}}
                        """)
            }
            func handedOut() async throws -> String {
                let key = try await api.send(.get, "/v1/campuses/north/push-key", template: "/v1/campuses/{campus}/push-key", token: token)
                return try #require(key.json["publicKey"] as? String)
            }
            @Sendable func kept() async throws -> Int {
                try await server.pool.query("SELECT count(*)::int AS n FROM push_subscriptions", campus: north.id.rawValue)[0].decode("n")
            }
            let old = try await handedOut()
            #expect(try await subscribe(madeWith: old).status == 201)
            let renewed = try await PushKeyStore(client: server.pool, kek: TestServer.kek).renew(campus: north, actor: "ops@example.edu")
            let keptAfterRenewal = try await kept()
            #expect(renewed != old && keptAfterRenewal == 0)
            #expect(try await handedOut() == renewed, "the new key at once, not the old one for a minute more")
            let stale = try await subscribe(madeWith: old)
            #expect(stale.status == 409 && stale.problem.type == "/problems/push-key-renewed", "\(stale.body)")
            #expect(try await kept() == 0, "nothing kept")
            let garbled = try await subscribe(madeWith: "not-a-key")
            #expect(garbled.status == 422 && garbled.problem.fields == ["applicationServerKey"], "\(garbled.body)")
            #expect(try await subscribe(madeWith: renewed).status == 201)
            try await worker.runOnce()
            let sent = try #require(push.requests.first { $0.path == "/push/0" })
            #expect(sent.header("Authorization")?.hasSuffix(", k=" + renewed) == true, "signed with the renewed key")
        }
        await push.stop()
    }

    /// `attest push keys new`: a new key, sealed, the old one's browsers forgotten (they cannot
    /// be reached with the new key), audited; refused without the key-encryption key.
    @Test func pushKeysNewGivesTheCampusANewKeyAndForgetsItsBrowsers() async throws {
        let (kek, kekText) = KeyEncryptionKey.generate()
        let server = try await TestServer.make(kek: kek)
        let north = try await server.campus("north")
        let (ana, _) = try await server.user("ana@example.edu", at: north)
        let browser = P256.KeyAgreement.PrivateKey()
        _ = try await PushSubscriptionStore(client: server.pool, kek: kek).add(
            campus: north.id, user: ana.id,
            try #require(
                PushSubscription.parse(
                    .object([
                        "endpoint": .string("https://push.example.net/send/1"),
                        "keys": .object([
                            "p256dh": .string(browser.publicKey.x963Representation.base64URLEncoded()),
                            "auth": .string(WebPushTests.random(16).base64URLEncoded()),
                        ]),
                    ])
                ).subscription))
        let old = try await PushKeyStore(client: server.pool, kek: kek).key(campus: north.id).publicKeyText
        let file = FileManager.default.temporaryDirectory.appending(path: "attest-kek-\(UUID().uuidString.prefix(8))")
        try Data(kekText.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        func run(_ arguments: String..., kek: String?) async throws -> (status: Int32, stdout: String, stderr: String) {
            try await ChildProcess.run(
                [ChildProcess.attestBinary, "push", "keys", "new"] + arguments,
                environment: ["DATABASE_URL": TestDatabase.url(database: server.database), "ATTEST_KEK": nil, "ATTEST_KEK_FILE": kek])
        }
        AdminCLITests.expectFailure(try await run("north", kek: nil), "pass --kek-file")
        AdminCLITests.expectFailure(try await run("nowhere", kek: file.path), "no campus with slug \"nowhere\"")
        let made = try await run("north", kek: file.path)
        #expect(made.status == 0, "\(made.stderr)")
        let printed = try #require(made.stdout.split(separator: " ").last.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) })
        #expect(printed != old && Data(base64URLEncoded: printed)?.count == 65, "\(made.stdout)")
        // What a server reads next (a fresh store: a server's kept copy lasts a minute).
        #expect(try await PushKeyStore(client: server.pool, kek: kek).key(campus: north.id).publicKeyText == printed)
        #expect(try await PushSubscriptionStore(client: server.pool, kek: kek).list(campus: north.id, user: ana.id).isEmpty)
        let audited = try await AuditLog(client: server.pool).entries(campus: north.id).filter { $0.action == "push.key.renew" }
        #expect(audited.count == 1 && audited.first?.details["subscriptionsForgotten"] == "1", "\(audited)")
    }
}
