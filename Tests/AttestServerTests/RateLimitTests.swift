import AttestTestSupport
import Foundation
import HTTPTypes
import Tenancy
import Testing

@testable import AttestAPI
@testable import AttestServer
@testable import AttestWeb
@testable import Identity

/// Sign-in attempts per client address and per campus, and requests with unknown bearer
/// tokens per address, are limited with 429 and Retry-After; tokens the server knows never are.
@Suite("Rate limits")
struct RateLimitTests {
    static let sessions = "/v1/campuses/{campus}/sessions"
    static let forwarded = HTTPField.Name("X-Forwarded-For")!

    static func signIn(_ api: APIClient, from address: String) async throws -> APIClient.Reply {
        try await api.send(
            .post, "/v1/campuses/north/sessions", template: sessions, json: #"{"idToken":"not-a-token"}"#,
            headers: [forwarded: "203.0.113.250, \(address)"])
    }

    @Test func signInsAreLimitedPerAddressAndPerCampusBehindATrustedProxy() async throws {
        let limits = RateLimits(
            signInPerAddress: .init(burst: 2, perMinute: 0), signInPerCampus: .init(burst: 5, perMinute: 0))
        let server = try await TestServer.make(configuration: ServerConfiguration(rateLimits: limits, trustedProxies: ["127.0.0.1"]))
        _ = try await server.campus("north")
        try await server.run { api in
            // Two attempts from an address are answered (401: the token is no good), the third is not.
            for _ in 0..<2 { #expect(try await Self.signIn(api, from: "198.51.100.1").status == 401) }
            let limited = try await Self.signIn(api, from: "198.51.100.1")
            #expect(limited.status == 429)
            #expect(limited.problem.type == "/problems/too-many-requests")
            #expect(limited.problem.detail.contains("from your address"))
            #expect(Int(limited.headers[.retryAfter] ?? "") ?? 0 >= 1)
            // Other addresses go on until the campus's five are spent, then every address waits.
            #expect(try await Self.signIn(api, from: "198.51.100.2").status == 401)
            #expect(try await Self.signIn(api, from: "198.51.100.3").status == 401)
            #expect(try await Self.signIn(api, from: "198.51.100.4").status == 401)
            let campusWide = try await Self.signIn(api, from: "198.51.100.5")
            #expect(campusWide.status == 429 && campusWide.problem.detail.contains("at this campus"), "\(campusWide.body)")
            // Nonces count as sign-in attempts: they write rows.
            let nonce = try await api.send(
                .post, "/v1/campuses/north/sessions/nonces", template: "/v1/campuses/{campus}/sessions/nonces",
                headers: [Self.forwarded: "198.51.100.1"])
            #expect(nonce.status == 429)
        }
    }

    /// An IPv6 client is its /64 (by default): rotating through the addresses of one's own
    /// network buys nothing, and so one client cannot empty the campus's sign-in allowance.
    @Test func anIPv6ClientIsCountedByItsNetwork() async throws {
        #expect(RateLimiter.network(of: "2001:db8:1:2:aaaa:bbbb:cccc:dddd", ipv6Prefix: 64) == "2001:db8:1:2::/64")
        #expect(RateLimiter.network(of: "2001:DB8:1:2::7", ipv6Prefix: 64) == "2001:db8:1:2::/64")
        #expect(RateLimiter.network(of: "2001:db8:1:3::7", ipv6Prefix: 64) == "2001:db8:1:3::/64")
        #expect(RateLimiter.network(of: "2001:db8:1:2ff::7", ipv6Prefix: 48) == "2001:db8:1::/48")
        #expect(RateLimiter.network(of: "2001:db8::1", ipv6Prefix: 128) == "2001:db8::1/128")
        #expect(RateLimiter.network(of: "::ffff:198.51.100.7", ipv6Prefix: 64) == "198.51.100.7")
        #expect(RateLimiter.network(of: "198.51.100.7", ipv6Prefix: 64) == "198.51.100.7")
        #expect(RateLimiter.network(of: "not:an:address", ipv6Prefix: 64) == "not:an:address")

        let limits = RateLimits(
            signInPerAddress: .init(burst: 3, perMinute: 0), signInPerCampus: .init(burst: 10, perMinute: 0),
            unknownTokensPerAddress: .init(burst: 3, perMinute: 0))
        let server = try await TestServer.make(configuration: ServerConfiguration(rateLimits: limits, trustedProxies: ["127.0.0.1"]))
        _ = try await server.campus("north")
        try await server.run { api in
            // Twenty addresses of one /64: three answered, then the network waits.
            var statuses: [Int] = []
            for index in 1...20 { statuses.append(try await Self.signIn(api, from: "2001:db8:7:7::\(String(index, radix: 16))").status) }
            #expect(statuses == Array(repeating: 401, count: 3) + Array(repeating: 429, count: 17), "\(statuses)")
            // The campus's allowance was spent only by what was answered: another client still signs in.
            #expect(try await Self.signIn(api, from: "2001:db8:8:8::1").status == 401)
            // Unknown tokens too.
            var unknown: [Int] = []
            for index in 1...5 {
                unknown.append(
                    try await api.send(
                        .get, "/v1/campuses/north/me", template: "/v1/campuses/{campus}/me", token: "unknown-token-\(index)",
                        headers: [Self.forwarded: "2001:db8:9:9::\(index)"]
                    ).status)
            }
            #expect(unknown == [401, 401, 401, 429, 429], "\(unknown)")
        }
    }

    @Test func unknownTokensAreLimitedPerAddressAndKnownOnesNever() async throws {
        let limits = RateLimits(unknownTokensPerAddress: .init(burst: 3, perMinute: 0))
        let server = try await TestServer.make(configuration: ServerConfiguration(rateLimits: limits))
        let campus = try await server.campus("north")
        let (_, member) = try await server.user("m@example.edu", at: campus)
        try await server.run { api in
            #expect(try await api.send(.get, "/v1/campuses/north/me", template: "/v1/campuses/{campus}/me", token: member).status == 200)
            for index in 0..<3 {
                let unknown = SessionStore.newToken()
                #expect(
                    try await api.send(.get, "/v1/campuses/north/me", template: "/v1/campuses/{campus}/me", token: unknown).status == 401,
                    "\(index)")
            }
            // Spent: another unknown token is refused before the database is asked, and a header
            // naming another client is ignored from a peer that is not a trusted proxy.
            let limited = try await api.send(
                .get, "/v1/campuses/north/me", template: "/v1/campuses/{campus}/me", token: SessionStore.newToken(),
                headers: [Self.forwarded: "198.51.100.9"])
            #expect(limited.status == 429, "\(limited.body)")
            #expect(limited.headers[.retryAfter] != nil)
            // The member's token, known to this server, still works.
            #expect(try await api.send(.get, "/v1/campuses/north/me", template: "/v1/campuses/{campus}/me", token: member).status == 200)
            // Also once its kept session is no longer trusted (the campus's generation moved on,
            // or was first read after it was verified): it is asked of the database, not refused.
            _ = try await server.pool.withTransaction(campus: campus.id.rawValue) { try await AuthGenerations.bump($0, campus: campus.id) }
            try await server.services.authGenerations.refresh()
            #expect(try await api.send(.get, "/v1/campuses/north/me", template: "/v1/campuses/{campus}/me", token: member).status == 200)
            // The pages' cookie holds to the same rule (one SessionResolver): its member, no
            // longer trusted from memory, is read, not sent to sign in again.
            _ = try await server.pool.withTransaction(campus: campus.id.rawValue) { try await AuthGenerations.bump($0, campus: campus.id) }
            try await server.services.authGenerations.refresh()
            let page = try await WebClient(api.client).get("/c/north/history", headers: [.cookie: "attest-north=\(member)"])
            #expect(page.status == 200, "\(page.status) \(page.location ?? "")")
            // An unknown cookie from the spent address is not signed in (the sign-in page, not a 429).
            let stranger = try await WebClient(api.client).get(
                "/c/north/history", headers: [.cookie: "attest-north=\(SessionStore.newToken())"])
            #expect(stranger.status == 303 && stranger.location?.hasPrefix("/c/north/signin") == true)
        }
    }

    @Test func theClientIsTheRightmostForwardedAddressThatIsNotAProxy() {
        let trusted: Set<String> = ["10.0.0.2", "10.0.0.3"]
        #expect(ClientAddressMiddleware.forwardedClient(["198.51.100.7"], trusted: trusted) == "198.51.100.7")
        #expect(ClientAddressMiddleware.forwardedClient(["1.2.3.4, 198.51.100.7, 10.0.0.3"], trusted: trusted) == "198.51.100.7")
        #expect(ClientAddressMiddleware.forwardedClient(["1.2.3.4", "198.51.100.7"], trusted: trusted) == "198.51.100.7")
        #expect(ClientAddressMiddleware.forwardedClient(["", " , "], trusted: trusted) == nil)
        #expect(ClientAddressMiddleware.forwardedClient([], trusted: trusted) == nil)
    }

    @Test func aBucketRefillsAndMemoryStaysBounded() {
        let limiter = RateLimiter(.init(burst: 2, perMinute: 60), maxKeys: 100)
        let start = ContinuousClock.now
        #expect(limiter.take("a", now: start) == nil)
        #expect(limiter.take("a", now: start) == nil)
        let wait = limiter.take("a", now: start)
        #expect(wait != nil && wait! <= .seconds(1))
        #expect(limiter.take("a", now: start + .seconds(1)) == nil)
        for index in 0..<1_000 { _ = limiter.take("k\(index)", now: start + .seconds(2)) }
        #expect(limiter.keyCount <= 100)
    }
}
