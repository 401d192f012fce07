@testable import AttestHTTP
import AttestPostgres
import AttestTestSupport
import Foundation
import Identity
import JWTKit
import Tenancy
import Testing

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
            let first = try await Self.signIn(api, try await provider.sign(provider.claims(email: "Ana@Example.edu", subject: "ana-1", name: "Ana"), kid: "es-1"))
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

            let second = try await Self.signIn(api, try await provider.sign(provider.claims(email: "ana@example.edu", subject: "ana-1", name: "Ana María"), kid: "es-1"))
            #expect(second.status == 201)
            let again = try #require(second.json["user"] as? [String: Any])
            #expect(again["id"] as? String == user["id"] as? String)
            #expect(again["displayName"] as? String == "Ana María")

            // Another identity claiming an email that is already linked is refused.
            let other = try await Self.signIn(api, try await provider.sign(provider.claims(email: "ana@example.edu", subject: "ana-2"), kid: "es-1"))
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
            ("HS256 with the issuer's key id", try TestIdentityProvider.forged(provider.claims(email: "x@example.edu"), alg: "HS256", kid: "es-1", signature: String(parts[2]))),
            ("tampered payload", parts[0] + "." + (try JSONEncoder().encode(provider.claims(email: "boss@example.edu"))).base64URL + "." + parts[2]),
            ("wrong issuer", try await provider.sign(provider.claims(email: "x@example.edu", issuer: "https://evil.example"), kid: "es-1")),
            ("wrong audience", try await provider.sign(provider.claims(email: "x@example.edu", audience: ["someone-else"]), kid: "es-1")),
            ("expired beyond the leeway", try await provider.sign(provider.claims(email: "x@example.edu", expiresIn: -120), kid: "es-1")),
            ("not valid yet", try await provider.sign(provider.claims(email: "x@example.edu", notBeforeIn: 300), kid: "es-1")),
            ("issued in the future", try await provider.sign(provider.claims(email: "x@example.edu", issuedAgo: -600), kid: "es-1")),
            ("email not verified", try await provider.sign(provider.claims(email: "x@example.edu", emailVerified: false), kid: "es-1")),
            ("email domain not allowed", try await provider.sign(provider.claims(email: "x@other.edu"), kid: "es-1")),
            ("hosted domain not allowed", try await provider.sign(provider.claims(email: "x@example.edu", hd: "other.edu"), kid: "es-1")),
            ("unpublished key", try await { () async throws -> String in
                try await provider.addES256Key(kid: "secret-key", publish: false)
                return try await provider.sign(provider.claims(email: "x@example.edu"), kid: "secret-key")
            }()),
            ("not a JWT", "not-a-token"),
        ]
        try await server.run { api in
            for (name, token) in cases {
                let reply = try await Self.signIn(api, token)
                #expect(reply.status == 401, "\(name): \(reply.body)")
                #expect(reply.headers[.wwwAuthenticate]?.hasPrefix("Bearer") == true, "\(name)")
            }
            // Within the 60 s leeway, a just-expired token still signs in.
            let late = try await Self.signIn(api, try await provider.sign(provider.claims(email: "late@example.edu", expiresIn: -30), kid: "es-1"))
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
                let forged = try TestIdentityProvider.forged(provider.claims(email: "d@example.edu"), alg: "ES256", kid: "made-up-\(attempt)", signature: "AAAA")
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
            let reply = try await Self.signIn(api, try await provider.sign(provider.claims(email: "x@example.edu"), kid: "es-1"), campus: "offline")
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
            let out = try await api.send(.delete, "/v1/campuses/north/sessions/current", template: "/v1/campuses/{campus}/sessions/current", token: token)
            #expect(out.status == 204)
            #expect(try await api.send(.get, "/v1/campuses/north/me", template: Self.me, token: token).status == 401)
            let twice = try await api.send(.delete, "/v1/campuses/north/sessions/current", template: "/v1/campuses/{campus}/sessions/current", token: token)
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
            #expect(try await api.send(.post, path, template: Self.sessions, json: #"{"idToken":"x"}"#, contentType: "text/plain").status == 415)
            let huge = #"{"idToken":""# + String(repeating: "a", count: 70_000) + #""}"#
            #expect(try await api.send(.post, path, template: Self.sessions, json: huge).status == 413)
            let unknownCampus = try await api.send(.post, "/v1/campuses/nowhere/sessions", template: Self.sessions, json: #"{"idToken":"x"}"#)
            #expect(unknownCampus.status == 404)
            let hostile = try await api.send(.post, "/v1/campuses/'%20OR%201=1--/sessions", template: Self.sessions, json: #"{"idToken":"x"}"#)
            #expect(hostile.status == 404)
        }
    }
}
