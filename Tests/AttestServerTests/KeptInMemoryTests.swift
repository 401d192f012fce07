import AttestPlugins
import AttestPostgres
import AttestTestSupport
import Foundation
import Tenancy
import Testing

@testable import AttestAPI
@testable import AttestServer
@testable import AttestWeb
@testable import Identity
@testable import Surveys

/// What a server keeps in memory between requests (verified sessions, coloured badges) and
/// what makes it let go: the campus's sign-in generation, read by every server each second.
@Suite("Kept in memory") struct KeptInMemoryTests {
    static func generation(_ server: TestServer, _ campus: Campus) async throws -> Int64 {
        // Trusted for a minute, not the server's 3 s: a loaded CI machine may take seconds
        // between the read and the check, and a stale read answers nil.
        let generations = AuthGenerations(client: server.pool, trustedFor: .seconds(60))
        try await generations.refresh()
        return try #require(generations.current(campus.id))
    }

    /// Two servers on one database, each its own cache and its own read of the generations: a
    /// session stays kept past the short time to live while the generation stands, and a
    /// sign-out on the first moves it on, which the second sees at its next read.
    @Test func aSignOutOnOneServerEndsTheSessionOnAnotherAtItsNextRead() async throws {
        let server = try await TestServer.make()
        defer { Task { await server.pool.shutdown() } }
        let campus = try await server.campus("north")
        let (_, token) = try await server.user("kept@example.edu", at: campus)
        let (_, quiet) = try await server.user("quiet@example.edu", at: campus)
        // Trusted for a minute: a loaded CI machine may take seconds between a read and a check.
        let (first, second) = (
            AuthGenerations(client: server.pool, trustedFor: .seconds(60)), AuthGenerations(client: server.pool, trustedFor: .seconds(60))
        )
        let one = SessionStore(client: server.pool, cacheTTL: .milliseconds(100), generations: first)
        let other = SessionStore(client: server.pool, cacheTTL: .milliseconds(100), generations: second)
        try await first.refresh()
        try await second.refresh()
        #expect(try await other.authenticate(campus: campus.id, token: token) != nil)
        #expect(try await other.authenticate(campus: campus.id, token: quiet) != nil)

        // Revoked behind the servers' backs (no generation moved): still kept from memory,
        // well past the short time to live. That is what "kept" means here.
        try await server.pool.query(
            "UPDATE sessions SET revoked_at = now() WHERE campus_id = \(campus.id) AND token_hash = \(SessionStore.hash(quiet))",
            campus: campus.id.rawValue)
        try await Task.sleep(for: .milliseconds(300))
        try await second.refresh()
        #expect(other.cached(campus: campus.id, token: quiet) != nil)
        #expect(try await other.authenticate(campus: campus.id, token: token) != nil)

        // A sign-out through the first server: gone there at once, and on the other once it reads.
        #expect(try await one.revoke(campus: campus.id, token: token))
        #expect(try await one.authenticate(campus: campus.id, token: token) == nil)
        #expect(other.cached(campus: campus.id, token: token) != nil)
        try await second.refresh()
        #expect(other.cached(campus: campus.id, token: token) == nil)
        #expect(try await other.authenticate(campus: campus.id, token: token) == nil)
        // The moved generation let go of the campus's other sessions too: the quietly revoked one is now refused.
        #expect(try await other.authenticate(campus: campus.id, token: quiet) == nil)
    }

    /// When the generations cannot be read (no poll, or the database unreachable for longer than
    /// `trustedFor`), a session is kept for the short time to live only.
    @Test func withoutACurrentGenerationASessionIsKeptForTheShortTimeOnly() async throws {
        let server = try await TestServer.make()
        defer { Task { await server.pool.shutdown() } }
        let campus = try await server.campus("north")
        let (_, token) = try await server.user("short@example.edu", at: campus)
        let stale = AuthGenerations(client: server.pool, trustedFor: .milliseconds(50))
        // A short time to live of 10 s: long enough for the checks right after verifying on a
        // loaded machine (the whole suite at once took more than 3 s for one update), short
        // enough to wait out.
        let sessions = SessionStore(client: server.pool, cacheTTL: .seconds(10), generations: stale)
        try await stale.refresh()
        try await Task.sleep(for: .milliseconds(100))
        #expect(stale.current(campus.id) == nil)
        #expect(try await sessions.authenticate(campus: campus.id, token: token) != nil)
        try await server.pool.query(
            "UPDATE sessions SET revoked_at = now() WHERE campus_id = \(campus.id) AND token_hash = \(SessionStore.hash(token))",
            campus: campus.id.rawValue)
        #expect(sessions.cached(campus: campus.id, token: token) != nil)
        try await Task.sleep(for: .milliseconds(10_200))
        #expect(sessions.cached(campus: campus.id, token: token) == nil)
        #expect(try await sessions.authenticate(campus: campus.id, token: token) == nil)
    }

    /// Every change that a kept session would hide moves its campus's generation on, and
    /// only its own campus's; a revocation that finds nothing moves nothing.
    @Test func signOutsRoleChangesAndRenamesMoveTheirCampusGenerationOn() async throws {
        let server = try await TestServer.make()
        defer { Task { await server.pool.shutdown() } }
        let campus = try await server.campus("north")
        let other = try await server.campus("south")
        let (_, token) = try await server.user("moves@example.edu", at: campus)
        let users = UserStore(client: server.pool)
        let sessions = SessionStore(client: server.pool)
        let start = try await Self.generation(server, campus)
        let otherStart = try await Self.generation(server, other)

        #expect(try await users.grant(campus: campus, email: "moves@example.edu", role: .screener, actor: "test"))
        #expect(try await Self.generation(server, campus) == start + 1)
        #expect(try await users.grant(campus: campus, email: "moves@example.edu", role: .screener, actor: "test") == false)
        #expect(try await Self.generation(server, campus) == start + 1)
        #expect(try await users.revoke(campus: campus, email: "moves@example.edu", role: .screener, actor: "test"))
        #expect(try await Self.generation(server, campus) == start + 2)
        _ = try await users.importCSV(campus: campus, text: "moves@example.edu,Renamed Member\n", actor: "test")
        #expect(try await Self.generation(server, campus) == start + 3)
        #expect(try await sessions.revoke(campus: campus.id, token: SessionStore.newToken()) == false)
        #expect(try await Self.generation(server, campus) == start + 3)
        #expect(try await sessions.revoke(campus: campus.id, token: token))
        #expect(try await Self.generation(server, campus) == start + 4)
        #expect(try await Self.generation(server, other) == otherStart)
    }

    /// A token is looked up in memory by the key its digest gives and in the database by its
    /// SHA-256: the key of a token must be the key of the hash the session was kept under.
    @Test func aTokenIsLookedUpByTheKeyItsStoredHashGives() throws {
        for _ in 0..<200 {
            let text = SessionStore.newToken()
            let token = try #require(SessionStore.SessionToken(text))
            #expect(token.hash == SessionStore.hash(text))
            #expect(token.hash.count == 32)
            #expect(token.key == SessionStore.Key(hash: SessionStore.hash(text)))
        }
        #expect(SessionStore.SessionToken(String(SessionStore.newToken().dropLast())) == nil)
        #expect(SessionStore.SessionToken(String(SessionStore.newToken().dropLast()) + "=") == nil)
    }

    /// The session table against a dictionary, under random stores and removals, with keys
    /// whose first words collide (long probe runs, wrapping round the table's end): every
    /// lookup agrees, the table is never more than 7/8 full, and a stale generation goes.
    @Test func theSessionTableAgreesWithADictionary() {
        let user = User(
            id: UserID(UUID()), campusID: CampusID(UUID()), email: "t@example.edu", displayName: "T", roles: [.member], createdAt: Date())
        let table = SessionTable(ttl: .seconds(3_600), period: .seconds(3_600), limit: 1_000_000)
        var model: [SessionStore.Key: SessionStore.Session] = [:]
        var generator = SystemRandomNumberGenerator()
        // A few first words, many keys each: 24 homes for thousands of keys, some near the end.
        let highs: [UInt64] = (0..<24).map { $0 < 4 ? UInt64.max - UInt64($0) : UInt64.random(in: 0...UInt64.max, using: &generator) }
        let keys = (0..<3_000).map { _ in SessionStore.Key(high: highs.randomElement(using: &generator)!, low: generator.next()) }
        for step in 0..<20_000 {
            let key = keys.randomElement(using: &generator)!
            if step % 3 == 0 {
                table.remove(key)
                model[key] = nil
            } else {
                let session = SessionStore.Session(user: user, expiresAt: .distantFuture, verifiedAt: 1_000 + Int64(step))
                table.store(session, for: key, now: 1_000 + Int64(step))
                model[key] = session
            }
            if step % 1_000 == 999 {
                for key in keys { #expect(table.value(for: key, now: 30_000) === model[key]) }
                let (entries, slots) = table.counts
                #expect(entries == model.count && entries <= slots - slots / 8)
            }
        }
        // Generations with a second chance: at each rebuild (every period) what was stored in
        // the generation before goes, unless it was used since the last rebuild.
        let aging = SessionTable(ttl: .seconds(10), period: .seconds(1), limit: 1_000_000)
        let second = Duration.seconds(1).clampedNanoseconds
        func session(at instant: Int64) -> SessionStore.Session {
            SessionStore.Session(user: user, expiresAt: .distantFuture, verifiedAt: instant)
        }
        for (index, key) in keys.prefix(100).enumerated() { aging.store(session(at: 0), for: key, now: Int64(index)) }
        let (late, later, latest) = (
            SessionStore.Key(high: 1, low: 1), SessionStore.Key(high: 2, low: 2), SessionStore.Key(high: 3, low: 3)
        )
        aging.store(session(at: second + 1), for: late, now: second + 1)
        #expect(aging.counts.entries == 101)
        #expect(aging.value(for: keys[1], now: second + 2) != nil)  // used: a second chance
        aging.store(session(at: 2 * second + 2), for: later, now: 2 * second + 2)
        #expect(aging.counts.entries == 3)
        #expect(aging.value(for: keys[0], now: 2 * second + 2) == nil && aging.value(for: later, now: 2 * second + 2) != nil)
        #expect(aging.value(for: keys[1], now: 2 * second + 2) != nil)
        // keys[1] was used again (just now), late was not: late goes, keys[1] stays another period.
        aging.store(session(at: 3 * second + 3), for: latest, now: 3 * second + 3)
        #expect(aging.value(for: late, now: 3 * second + 3) == nil)
        #expect(aging.counts.entries == 3)
        // Nothing outlives the TTL, used or not.
        #expect(aging.value(for: keys[1], now: 10 * second) == nil)

        // A session holding something kept (a coloured badge) stays unused through rebuilds,
        // up to the TTL; one holding nothing, stored at the same instant, goes.
        let holding = SessionTable(ttl: .seconds(10), period: .seconds(1), limit: 1_000_000)
        let withBadge = session(at: 0), plain = session(at: 0)
        withBadge.keep(KeptMarker())
        holding.store(withBadge, for: keys[0], now: 0)
        holding.store(plain, for: keys[1], now: 0)
        for step in Int64(1)...5 {
            holding.store(session(at: step * second + 1), for: SessionStore.Key(high: UInt64(100 + step), low: 0), now: step * second + 1)
        }
        #expect(holding.value(for: keys[1], now: 5 * second + 2) == nil)
        #expect(holding.value(for: keys[0], now: 5 * second + 2) === withBadge)
        #expect(holding.value(for: keys[0], now: 10 * second) == nil)
    }

    final class KeptMarker: Sendable {}

    /// A coloured badge is signed once and then served from memory all day; a gray one is
    /// signed at every read, so a submission shows at once; a new signing key signs anew.
    /// A coloured badge is served from memory all day; a gray one's signature is kept too, but
    /// every read of it asks the database, so a submission (through any server) shows at once.
    @Test func aColouredBadgeIsSignedOnceAndKeptAndAGrayOneIsAskedForAtEveryRead() async throws {
        let server = try await TestServer.make()
        let campus = try await server.campus("north")
        let (_, token) = try await server.user("badge@example.edu", at: campus)
        _ = try await QuestionnaireStore(client: server.pool).publish(campus: campus, draft: AttestationTests.draft, actor: "test")
        try await server.run { api in
            // As the server's own reader would, every second: with a current generation the
            // session (and the badge kept with it) stays however slowly a loaded machine runs.
            let generations = server.services.authGenerations
            try await generations.refresh()
            let path = "/v1/campuses/north/me/badge"
            let grayOnce = try await api.send(.get, path, template: BadgeTests.badgePath, token: token)
            try await generations.refresh()
            let grayTwice = try await api.send(.get, path, template: BadgeTests.badgePath, token: token)
            #expect(grayOnce.json["color"] as? String == "gray" && grayTwice.json["color"] as? String == "gray")
            // ES256 signatures are randomised, so the same token twice is the kept signature.
            #expect(grayOnce.json["token"] as? String == grayTwice.json["token"] as? String)
            #expect(grayOnce.body == grayTwice.body)

            // Submitted: the gray one kept is not trusted, the next read finds the colour.
            let submitted = try await api.send(
                .post, "/v1/campuses/north/attestations", template: BadgeTests.submitPath, token: token,
                json: AttestationTests.body(AttestationTests.healthy))
            #expect(submitted.status == 201)
            try await generations.refresh()
            let green = try await api.send(.get, path, template: BadgeTests.badgePath, token: token)
            #expect(green.json["color"] as? String == "green")
            #expect(green.headers[.cacheControl] == "no-store")
            #expect(green.headers[.contentType] == "application/json; charset=utf-8")

            // Kept: the same token again, even with the attestation gone behind the server's back.
            try await server.pool.query(
                "DELETE FROM attestations WHERE campus_id = \(campus.id)", campus: campus.id.rawValue)
            try await generations.refresh()
            let again = try await api.send(.get, path, template: BadgeTests.badgePath, token: token)
            #expect(again.json["token"] as? String == green.json["token"] as? String)
            #expect(again.body == green.body)

            // A rotated key: the next read signs anew (and, with the row gone, finds it gray).
            let rotated = try await server.services.badges.keys.rotate(campus: campus, actor: "test")
            let resigned = try await api.send(.get, path, template: BadgeTests.badgePath, token: token)
            let header = try BadgeTests.part(0, of: try #require(resigned.json["token"] as? String))
            #expect(header["kid"] as? String == rotated.kid)
            #expect(resigned.json["color"] as? String == "gray")
        }
    }
}
