import AttestPostgres
import AttestTestSupport
import Foundation
import Identity
import JWTKit
import Surveys
import Tenancy
import Testing

@testable import AttestAPI
@testable import AttestServer
@testable import AttestWeb

@Suite("Sign-in with OpenID Connect")
struct SignInTests {
    /// A server with one campus accepting the test provider, and that provider.
    static func setUp(domains: [String] = ["example.edu"]) async throws -> (TestServer, Campus, TestIdentityProvider) {
        let server = try await TestServer.make()
        let campus = try await server.campus("north", domains: domains)
        let provider = try await TestIdentityProvider.start()
        try await provider.addES256Key(kid: "es-1")
        try await OIDCIssuerStore(client: server.pool).add(
            campus: campus, OIDCIssuer(issuer: provider.issuer, audiences: [provider.audience], jwksURL: provider.jwksURL),
            actor: "test")
        return (server, campus, provider)
    }

    static let sessions = "/v1/campuses/{campus}/sessions"
    static let me = "/v1/campuses/{campus}/me"

    static func signIn(_ api: APIClient, _ token: String, campus: String = "north") async throws -> APIClient.Reply {
        try await api.send(.post, "/v1/campuses/\(campus)/sessions", template: sessions, json: #"{"idToken":"\#(token)"}"#)
    }

    @Test func firstSignInOnboardsAMemberAndLaterOnesUpdateTheName() async throws {
        let (server, _, provider) = try await Self.setUp()
        defer { provider.stop() }
        try await server.run { api in
            let first = try await Self.signIn(
                api, try await provider.sign(provider.claims(email: "Ana@Example.edu", subject: "ana-1", name: "Ana"), kid: "es-1"))
            #expect(first.status == 201)
            let user = try #require(first.json["user"] as? [String: Any])
            #expect(user["email"] as? String == "ana@example.edu")
            #expect(user["roles"] as? [String] == ["member"])
            let token = try #require(first.json["token"] as? String)
            #expect(token.count == 43)

            let me = try await api.send(.get, "/v1/campuses/north/me", template: Self.me, token: token)
            #expect(me.status == 200)
            #expect(me.json["displayName"] as? String == "Ana")
            #expect(me.json["today"] as? String != nil)

            let second = try await Self.signIn(
                api, try await provider.sign(provider.claims(email: "ana@example.edu", subject: "ana-1", name: "Ana María"), kid: "es-1"))
            #expect(second.status == 201)
            let again = try #require(second.json["user"] as? [String: Any])
            #expect(again["id"] as? String == user["id"] as? String)
            #expect(again["displayName"] as? String == "Ana María")

            // Another identity claiming an email that is already linked is refused.
            let other = try await Self.signIn(
                api, try await provider.sign(provider.claims(email: "ana@example.edu", subject: "ana-2"), kid: "es-1"))
            #expect(other.status == 401)
            #expect(other.problem.detail.contains("already linked"))
        }
    }

    @Test func rs256TokensAreAcceptedToo() async throws {
        let (server, _, provider) = try await Self.setUp()
        defer { provider.stop() }
        try await provider.addRS256Key(kid: "rs-1")
        try await server.run { api in
            let reply = try await Self.signIn(api, try await provider.sign(provider.claims(email: "rsa@example.edu"), kid: "rs-1"))
            #expect(reply.status == 201)
        }
    }

    @Test func everyBadTokenIsRefusedWith401AndCreatesNoUser() async throws {
        let (server, campus, provider) = try await Self.setUp(domains: ["example.edu"])
        defer { provider.stop() }
        let valid = try await provider.sign(provider.claims(email: "ok@example.edu"), kid: "es-1")
        let parts = valid.split(separator: ".")
        let cases: [(String, String)] = [
            ("alg none", try TestIdentityProvider.forged(provider.claims(email: "x@example.edu"), alg: "none", kid: "es-1")),
            ("HS256 keyed with the issuer's ES256 public key", try provider.confused(provider.claims(email: "x@example.edu"), kid: "es-1")),
            (
                "HS256 keyed with the issuer's RS256 public key",
                try await { () async throws -> String in
                    try await provider.addRS256Key(kid: "rs-confused")
                    return try provider.confused(provider.claims(email: "x@example.edu"), kid: "rs-confused")
                }()
            ),
            (
                "tampered payload",
                parts[0] + "." + (try JSONEncoder().encode(provider.claims(email: "boss@example.edu"))).base64URL + "." + parts[2]
            ),
            ("wrong issuer", try await provider.sign(provider.claims(email: "x@example.edu", issuer: "https://evil.example"), kid: "es-1")),
            ("wrong audience", try await provider.sign(provider.claims(email: "x@example.edu", audience: ["someone-else"]), kid: "es-1")),
            ("expired beyond the leeway", try await provider.sign(provider.claims(email: "x@example.edu", expiresIn: -120), kid: "es-1")),
            ("not valid yet", try await provider.sign(provider.claims(email: "x@example.edu", notBeforeIn: 300), kid: "es-1")),
            ("issued in the future", try await provider.sign(provider.claims(email: "x@example.edu", issuedAgo: -600), kid: "es-1")),
            ("email not verified", try await provider.sign(provider.claims(email: "x@example.edu", emailVerified: false), kid: "es-1")),
            ("email domain not allowed", try await provider.sign(provider.claims(email: "x@other.edu"), kid: "es-1")),
            ("hosted domain not allowed", try await provider.sign(provider.claims(email: "x@example.edu", hd: "other.edu"), kid: "es-1")),
            (
                "unpublished key",
                try await { () async throws -> String in
                    try await provider.addES256Key(kid: "secret-key", publish: false)
                    return try await provider.sign(provider.claims(email: "x@example.edu"), kid: "secret-key")
                }()
            ),
            ("not a JWT", "not-a-token"),
        ]
        try await server.run { api in
            for (name, token) in cases {
                let reply = try await Self.signIn(api, token)
                #expect(reply.status == 401, "\(name): \(reply.body)")
                #expect(reply.headers[.wwwAuthenticate]?.hasPrefix("Bearer") == true, "\(name)")
            }
            // Within the 60 s leeway, a just-expired token still signs in.
            let late = try await Self.signIn(
                api, try await provider.sign(provider.claims(email: "late@example.edu", expiresIn: -30), kid: "es-1"))
            #expect(late.status == 201)
            let users = try await UserStore(client: server.pool).list(campus: campus.id)
            #expect(users.map(\.email) == ["late@example.edu"])
        }
    }

    @Test func aRotatedKeyIsFetchedOnceAndForgedKeyIDsDoNotHammerTheIssuer() async throws {
        let (server, _, provider) = try await Self.setUp()
        defer { provider.stop() }
        try await server.run { api in
            #expect(try await Self.signIn(api, try await provider.sign(provider.claims(email: "a@example.edu"), kid: "es-1")).status == 201)
            #expect(try await Self.signIn(api, try await provider.sign(provider.claims(email: "b@example.edu"), kid: "es-1")).status == 201)
            #expect(provider.fetchCount == 1)  // cached per Cache-Control

            try await provider.addES256Key(kid: "es-2")
            provider.publishOnly(kid: "es-2")
            let rotated = try await Self.signIn(api, try await provider.sign(provider.claims(email: "c@example.edu"), kid: "es-2"))
            #expect(rotated.status == 201)
            #expect(provider.fetchCount == 2)

            for attempt in 0..<5 {
                let forged = try TestIdentityProvider.forged(
                    provider.claims(email: "d@example.edu"), alg: "ES256", kid: "made-up-\(attempt)", signature: "AAAA")
                #expect(try await Self.signIn(api, forged).status == 401)
            }
            #expect(provider.fetchCount == 2)  // refetches for unknown keys are rate-limited
        }
    }

    @Test func theSameEmailAtTwoCampusesIsTwoUsersAndTokensDoNotCross() async throws {
        let (server, north, provider) = try await Self.setUp()
        defer { provider.stop() }
        let south = try await server.campus("south", domains: ["example.edu"])
        try await OIDCIssuerStore(client: server.pool).add(
            campus: south, OIDCIssuer(issuer: provider.issuer, audiences: [provider.audience], jwksURL: provider.jwksURL), actor: "test")
        try await server.run { api in
            let idToken = try await provider.sign(provider.claims(email: "sam@example.edu"), kid: "es-1")
            let atNorth = try await Self.signIn(api, idToken, campus: "north")
            let atSouth = try await Self.signIn(api, idToken, campus: "south")
            #expect(atNorth.status == 201 && atSouth.status == 201)
            let northUser = (atNorth.json["user"] as? [String: Any])?["id"] as? String
            let southUser = (atSouth.json["user"] as? [String: Any])?["id"] as? String
            #expect(northUser != nil && northUser != southUser)
            let northToken = try #require(atNorth.json["token"] as? String)
            #expect(try await api.send(.get, "/v1/campuses/north/me", template: Self.me, token: northToken).status == 200)
            let crossed = try await api.send(.get, "/v1/campuses/south/me", template: Self.me, token: northToken)
            #expect(crossed.status == 401)
            #expect(try await UserStore(client: server.pool).list(campus: north.id).count == 1)
            #expect(try await UserStore(client: server.pool).list(campus: south.id).count == 1)
        }
    }

    @Test func anIssuerWhoseKeysCannotBeFetchedIsA503NotA401() async throws {
        let server = try await TestServer.make()
        let campus = try await server.campus("offline")
        let provider = try await TestIdentityProvider.start()
        defer { provider.stop() }
        try await provider.addES256Key(kid: "es-1")
        let closedPort = try LoopbackHTTP.freePort()
        try await OIDCIssuerStore(client: server.pool).add(
            campus: campus,
            OIDCIssuer(issuer: provider.issuer, audiences: [provider.audience], jwksURL: "http://127.0.0.1:\(closedPort)/jwks"),
            actor: "test")
        try await server.run { api in
            let reply = try await Self.signIn(
                api, try await provider.sign(provider.claims(email: "x@example.edu"), kid: "es-1"), campus: "offline")
            #expect(reply.status == 503)
            #expect(reply.headers[.retryAfter] != nil)
            #expect(reply.problem.type == "/problems/identity-provider-unavailable")
        }
    }

    @Test func signingOutRevokesTheToken() async throws {
        let (server, campus, provider) = try await Self.setUp()
        defer { provider.stop() }
        let (_, token) = try await server.user("out@example.edu", at: campus)
        try await server.run { api in
            #expect(try await api.send(.get, "/v1/campuses/north/me", template: Self.me, token: token).status == 200)
            let out = try await api.send(
                .delete, "/v1/campuses/north/sessions/current", template: "/v1/campuses/{campus}/sessions/current", token: token)
            #expect(out.status == 204)
            #expect(try await api.send(.get, "/v1/campuses/north/me", template: Self.me, token: token).status == 401)
            let twice = try await api.send(
                .delete, "/v1/campuses/north/sessions/current", template: "/v1/campuses/{campus}/sessions/current", token: token)
            #expect(twice.status == 401)
        }
    }

    @Test func badRequestBodiesGetClearClientErrors() async throws {
        let (server, _, provider) = try await Self.setUp()
        defer { provider.stop() }
        try await server.run { api in
            let path = "/v1/campuses/north/sessions"
            let missing = try await api.send(.post, path, template: Self.sessions, json: #"{"token":"x"}"#)
            #expect(missing.status == 422)
            #expect(missing.problem.fields == ["idToken"])
            let wrongType = try await api.send(.post, path, template: Self.sessions, json: #"{"idToken":42}"#)
            #expect(wrongType.status == 422)
            #expect(try await api.send(.post, path, template: Self.sessions, json: "{not json").status == 400)
            #expect(try await api.send(.post, path, template: Self.sessions, json: "[1,2]").status == 400)
            #expect(
                try await api.send(.post, path, template: Self.sessions, json: #"{"idToken":"x"}"#, contentType: "text/plain").status == 415
            )
            let huge = #"{"idToken":""# + String(repeating: "a", count: 70_000) + #""}"#
            #expect(try await api.send(.post, path, template: Self.sessions, json: huge).status == 413)
            let unknownCampus = try await api.send(
                .post, "/v1/campuses/nowhere/sessions", template: Self.sessions, json: #"{"idToken":"x"}"#)
            #expect(unknownCampus.status == 404)
            let hostile = try await api.send(
                .post, "/v1/campuses/'%20OR%201=1--/sessions", template: Self.sessions, json: #"{"idToken":"x"}"#)
            #expect(hostile.status == 404)
        }
    }

    @Test func aCampusWithoutEmailDomainsAdmitsNobodyUntilAnIssuerAllowsAnyDomain() async throws {
        let (server, campus, provider) = try await Self.setUp(domains: [])
        defer { provider.stop() }
        try await server.run { api in
            let refused = try await Self.signIn(api, try await provider.sign(provider.claims(email: "anyone@gmail.example"), kid: "es-1"))
            #expect(refused.status == 401)
            #expect(refused.problem.detail.contains("admits no email domain yet"), "\(refused.body)")
            try await OIDCIssuerStore(client: server.pool).add(
                campus: campus,
                OIDCIssuer(issuer: provider.issuer, audiences: [provider.audience], jwksURL: provider.jwksURL, allowAnyDomain: true),
                actor: "test")
            let admitted = try await Self.signIn(api, try await provider.sign(provider.claims(email: "anyone@gmail.example"), kid: "es-1"))
            #expect(admitted.status == 201, "\(admitted.body)")
            #expect(try await UserStore(client: server.pool).list(campus: campus.id).map(\.email) == ["anyone@gmail.example"])
        }
    }

    /// One ID token, one session: a second use is refused, with or without a jti (then the
    /// whole token names it), while the token is alive.
    @Test func anIDTokenSignsInOnce() async throws {
        let (server, campus, provider) = try await Self.setUp()
        defer { provider.stop() }
        try await server.run { api in
            for jti in ["jti-1", nil] {
                let token = try await provider.sign(provider.claims(email: "once@example.edu", subject: "once", jti: jti), kid: "es-1")
                #expect(try await Self.signIn(api, token).status == 201)
                let again = try await Self.signIn(api, token)
                #expect(again.status == 401)
                #expect(again.problem.detail.contains("was used to sign in already"), "\(again.body)")
            }
            // A new token with its own jti signs in.
            #expect(
                try await Self.signIn(
                    api, try await provider.sign(provider.claims(email: "once@example.edu", subject: "once"), kid: "es-1")
                ).status == 201)
            let sessions = try await server.pool.query("SELECT count(*) AS n FROM sessions", campus: campus.id.rawValue)
            #expect(try sessions[0].decode("n", as: Int.self) == 3)
        }
    }

    @Test func aServerIssuedNonceBindsTheTokenAndIsSpentOnce() async throws {
        let (server, _, provider) = try await Self.setUp()
        defer { provider.stop() }
        try await server.run { api in
            let issued = try await api.send(.post, "/v1/campuses/north/sessions/nonces", template: "/v1/campuses/{campus}/sessions/nonces")
            #expect(issued.status == 201)
            #expect(issued.headers[.cacheControl] == "no-store")
            let nonce = try #require(issued.json["nonce"] as? String)
            func signIn(_ claims: TestIdentityProvider.Claims, nonce: String) async throws -> APIClient.Reply {
                let token = try await provider.sign(claims, kid: "es-1")
                return try await api.send(
                    .post, "/v1/campuses/north/sessions", template: Self.sessions, json: #"{"idToken":"\#(token)","nonce":"\#(nonce)"}"#)
            }
            // A token without the nonce, or with another, does not sign in, and spends nothing.
            let bare = try await signIn(provider.claims(email: "n@example.edu"), nonce: nonce)
            #expect(bare.status == 401 && bare.problem.detail.contains("nonce"), "\(bare.body)")
            #expect(try await signIn(provider.claims(email: "n@example.edu", nonce: "other"), nonce: nonce).status == 401)
            #expect(try await signIn(provider.claims(email: "n@example.edu", nonce: nonce), nonce: nonce).status == 201)
            // Spent: the same nonce in a new token is refused.
            let replayed = try await signIn(provider.claims(email: "n@example.edu", nonce: nonce), nonce: nonce)
            #expect(replayed.status == 401 && replayed.problem.detail.contains("nonce"))
            // A nonce this server never issued, well formed or not.
            let made = String(repeating: "A", count: 43)
            #expect(try await signIn(provider.claims(email: "n@example.edu", nonce: made), nonce: made).status == 401)
            let malformed = try await api.send(
                .post, "/v1/campuses/north/sessions", template: Self.sessions, json: #"{"idToken":"a.b.c","nonce":"short"}"#)
            #expect(malformed.status == 422 && malformed.problem.fields == ["nonce"])
        }
    }

    /// Names from an identity provider are data from outside: control characters and NUL (which
    /// PostgreSQL refuses in text) are dropped, and the name is cut by Unicode scalars, as the
    /// column counts, so no name makes a 500.
    @Test func namesFromTheProviderAreCleanedAndCutByScalars() async throws {
        let (server, campus, provider) = try await Self.setUp()
        defer { provider.stop() }
        let zalgo = "Z" + String(repeating: "\u{0301}", count: 400)
        let cases: [(String, String)] = [
            ("nul@example.edu", "Ana\u{0}\nMaría\u{1B}[31m\u{2028}"),
            ("zalgo@example.edu", zalgo),
            ("long@example.edu", String(repeating: "é", count: 300)),
            ("blank@example.edu", "\u{0}\u{7}  "),
        ]
        try await server.run { api in
            for (email, name) in cases {
                let reply = try await Self.signIn(api, try await provider.sign(provider.claims(email: email, name: name), kid: "es-1"))
                #expect(reply.status == 201, "\(email): \(reply.body)")
            }
            let users = Dictionary(
                uniqueKeysWithValues: try await UserStore(client: server.pool).list(campus: campus.id).map { ($0.email, $0.displayName) })
            #expect(users["nul@example.edu"] == "AnaMaría[31m")
            #expect(users["zalgo@example.edu"]?.unicodeScalars.count == 200)
            #expect(users["long@example.edu"] == String(repeating: "é", count: 200))
            #expect(users["blank@example.edu"] == "")
        }
    }

    /// The daily upkeep forgets what sign-in no longer needs: sessions expired or revoked
    /// more than a day ago, used ID tokens past their expiry, stale nonces.
    @Test func theDailyUpkeepPurgesExpiredSessionsTokensAndNonces() async throws {
        let (server, campus, provider) = try await Self.setUp()
        defer { provider.stop() }
        let (user, live) = try await server.user("keep@example.edu", at: campus)
        let sessions = SessionStore(client: server.pool)
        let expired = try await sessions.issue(campus: campus, user: user.id, lifetime: 1)
        let revoked = try await sessions.issue(campus: campus, user: user.id)
        try await sessions.revoke(campus: campus.id, token: revoked.token)
        try await server.pool.query(
            """
            INSERT INTO id_token_uses (campus_id, token_id, expires_at)
            VALUES (\(campus.id), sha256('old'), now() - interval '1 hour'), (\(campus.id), sha256('new'), now() + interval '1 hour')
            """, campus: campus.id.rawValue)
        _ = try await SignInGuard(client: server.pool).issueNonce(campus: campus.id, now: Date().addingTimeInterval(-3_600))
        _ = try await SignInGuard(client: server.pool).issueNonce(campus: campus.id)
        let later = Date().addingTimeInterval(2 * 86_400)
        let service = RetentionService(
            client: server.pool, logger: TestDatabase.testLogger, clock: { later }, upkeeps: [SignInUpkeep(client: server.pool)])
        _ = await service.runOnce()
        let left = try await server.pool.query(
            """
            SELECT (SELECT count(*) FROM sessions) AS sessions, (SELECT count(*) FROM id_token_uses) AS tokens,
                   (SELECT count(*) FROM sign_in_nonces) AS nonces
            """, campus: campus.id.rawValue)
        // Two days on, every session has expired or been revoked more than a day before, but the
        // live token's session (30 days) stays; the used token expiring in an hour is gone too.
        #expect(try left[0].decode("sessions", as: Int.self) == 1)
        #expect(try left[0].decode("tokens", as: Int.self) == 0)
        #expect(try left[0].decode("nonces", as: Int.self) == 0)
        #expect(try await sessions.authenticate(campus: campus.id, token: live) != nil)
        _ = expired
    }
}
