import AttestPostgres
import AttestTestSupport
import Foundation
import HTTPTypes
import Journal
import NIOCore
import Tenancy
import Testing

@testable import AttestAPI
@testable import AttestCLI
@testable import AttestServer
@testable import AttestWeb

/// One member's reach is bounded: entries and episodes a day, bytes of recordings and open
/// links, each refused with the limit named; texts by their bytes as well as characters.
@Suite("A member's quotas")
struct QuotaTests {
    @Test func eachQuotaIsRefusedWithItsLimitNamed() async throws {
        let server = try await TestServer.make()
        let north = try await server.campus("north")
        // Small quotas, set as a campus sets them.
        try await server.pool.query(
            """
            UPDATE campuses SET settings = '{"journalEntriesPerDay": 3, "episodesPerDay": 2, "recordingMegabytes": 5, "openLinks": 2}'
            WHERE id = \(north.id)
            """, campus: north.id.rawValue)
        let (_, member) = try await server.user("m@example.edu", at: north)
        let (_, other) = try await server.user("o@example.edu", at: north)
        try await server.run { api in
            var ids: [String] = []
            for index in 0..<3 {
                let made = try await api.send(
                    .post, "/v1/campuses/north/me/journal", template: JournalTests.list, token: member, json: #"{"title": "e\#(index)"}"#)
                #expect(made.status == 201)
                ids.append(made.json["id"] as? String ?? "")
            }
            let fourth = try await api.send(
                .post, "/v1/campuses/north/me/journal", template: JournalTests.list, token: member, json: #"{"title": "e4"}"#)
            #expect(
                fourth.status == 429 && fourth.problem.type.hasSuffix("/quota-exceeded")
                    && fourth.problem.detail.contains("3 journal entries"))
            // Another member's quota is their own.
            #expect(
                try await api.send(
                    .post, "/v1/campuses/north/me/journal", template: JournalTests.list, token: other, json: #"{"title": "x"}"#
                ).status == 201)

            for index in 0..<2 {
                let started = try await api.send(
                    .post, "/v1/campuses/north/me/episodes", template: "/v1/campuses/{campus}/me/episodes", token: member,
                    json: #"{"kind": "\#(index == 0 ? "headache" : "migraine")", "severity": 3}"#)
                #expect(started.status == 201, "\(started.body)")
            }
            let third = try await api.send(
                .post, "/v1/campuses/north/me/episodes", template: "/v1/campuses/{campus}/me/episodes", token: member,
                json: #"{"kind": "headache", "severity": 3}"#)
            #expect(third.status == 429 && third.problem.detail.contains("2 episodes"), "\(third.body)")

            // Recordings: 5 MB in all. Two of 3 MB do not fit; replacing one with itself does.
            let big = JournalTests.recording(.ogg, count: 3 * 1024 * 1024)
            func put(_ id: String) async throws -> Int {
                let response = try await api.client.execute(
                    uri: "/v1/campuses/north/me/journal/\(id)/audio", method: .put,
                    headers: [.authorization: "Bearer \(member)", .contentType: "audio/ogg"], body: ByteBuffer(bytes: big))
                if response.status == .contentTooLarge {
                    #expect(String(buffer: response.body).contains("may take 5 MB in all and keep 3 MB already"))
                }
                return Int(response.status.code)
            }
            #expect(try await put(ids[0]) == 204)
            #expect(try await put(ids[0]) == 204)
            #expect(try await put(ids[1]) == 413)

            for _ in 0..<2 {
                #expect(
                    try await api.send(
                        .post, "/v1/campuses/north/me/shares", template: ShareTests.mine, token: member,
                        json: #"{"expiresIn": 3600, "from": "2026-11-01", "to": "2026-11-02"}"#
                    ).status == 201)
            }
            let link = try await api.send(
                .post, "/v1/campuses/north/me/shares", template: ShareTests.mine, token: member,
                json: #"{"expiresIn": 3600, "from": "2026-11-01", "to": "2026-11-02"}"#)
            #expect(link.status == 429 && link.problem.detail.contains("2 open links"))
        }
    }

    /// A character limit alone bounds nothing: one letter can carry thousands of combining marks.
    @Test func textsAreBoundedByBytesAsWellAsCharacters() async throws {
        let server = try await TestServer.make()
        let north = try await server.campus("north")
        let (_, member) = try await server.user("m@example.edu", at: north)
        let marks = "a" + String(repeating: "\u{301}", count: 20_000)  // one character, 40,001 bytes
        #expect(marks.count == 1)
        try await server.run { api in
            let refused = try await api.send(
                .post, "/v1/campuses/north/me/journal", template: JournalTests.list, token: member,
                json: #"{"title": "\#(marks.prefix(1))\#(String(repeating: "\u{301}", count: 500))", "text": "\#(marks)"}"#)
            #expect(refused.status == 422 && Set(refused.problem.fields) == ["title", "text"], "\(refused.body.prefix(300))")
            #expect(refused.body.contains("40000 bytes of UTF-8"))
            let notes = try await api.send(
                .post, "/v1/campuses/north/me/episodes", template: "/v1/campuses/{campus}/me/episodes", token: member,
                json: #"{"kind": "headache", "severity": 3, "notes": "\#(String(marks.unicodeScalars.prefix(9_000).map(Character.init)))"}"#
            )
            #expect(notes.status == 422 && notes.problem.fields == ["notes"])
        }
    }
}

/// What one member may ask of the server's CPU: exports (their own and their links') and
/// recordings read back, counted per member, and one export at a time.
@Suite("A member's share of the server")
struct MemberThrottleTests {
    @Test func exportsAndRecordingReadsAreCountedPerMember() async throws {
        let limits = RateLimits(
            exportsPerMember: .init(burst: 3, perMinute: 0), recordingMegabytesPerMember: .init(burst: 1, perMinute: 0))
        let server = try await TestServer.make(configuration: ServerConfiguration(rateLimits: limits))
        let north = try await server.campus("north")
        let (ana, member) = try await server.user("ana@example.edu", at: north)
        let (_, other) = try await server.user("bo@example.edu", at: north)
        let entry = try await server.services.journal.create(
            campus: north.id, user: ana.id, JournalDraft(date: north.localDate(at: Date()), title: "t", text: ""),
            audio: (.ogg, JournalTests.recording(.ogg, count: 1_500_000)), at: Date())
        let (_, link) = try await JournalShareStore(client: server.pool).create(
            campus: north.id, user: ana.id, actor: "test", from: north.localDate(at: Date()), to: north.localDate(at: Date()),
            seconds: 3_600,
            now: Date())
        try await server.run { api in
            // Two of her own and one through her link: three; the fourth, either way, waits.
            for _ in 0..<2 {
                #expect(
                    try await api.send(.get, "/v1/campuses/north/me/export?format=json", template: ExportTests.path, token: member).status
                        == 200)
            }
            #expect(try await api.send(.post, "/v1/campuses/north/shared/\(link)?format=json", template: ShareTests.shared).status == 200)
            let refused = try await api.send(.get, "/v1/campuses/north/me/export?format=json", template: ExportTests.path, token: member)
            #expect(
                refused.status == 429 && refused.problem.detail.contains("3 at once") && Int(refused.headers[.retryAfter] ?? "") ?? 0 >= 1)
            #expect(try await api.send(.post, "/v1/campuses/north/shared/\(link)?format=json", template: ShareTests.shared).status == 429)
            // Another member's allowance is their own.
            #expect(
                try await api.send(.get, "/v1/campuses/north/me/export?format=json", template: ExportTests.path, token: other).status == 200
            )

            // 1 MB of recordings at once: a 1.5 MB read is let in (owing the rest), the next waits.
            let path = "/v1/campuses/north/me/journal/\(entry.id.lowercasedText)/audio"
            #expect(try await api.send(.get, path, template: JournalTests.audio, token: member).status == 200)
            let ranged = try await api.client.execute(
                uri: path, method: .get, headers: [.authorization: "Bearer \(member)", .range: "bytes=0-99"], body: nil)
            #expect(ranged.status == .tooManyRequests && String(buffer: ranged.body).contains("1 MB at once"))
        }
    }

    /// Requests for a member's own data are counted in memory, so a member looping on refused
    /// writes is refused before the database is asked; the rest of the API is not counted.
    @Test func aMembersRequestsForTheirOwnDataAreCounted() async throws {
        let limits = RateLimits(
            recordingMegabytesPerMember: .init(burst: 2, perMinute: 0), ownDataRequestsPerMember: .init(burst: 5, perMinute: 0))
        let server = try await TestServer.make(configuration: ServerConfiguration(rateLimits: limits))
        let north = try await server.campus("north")
        let (ana, member) = try await server.user("ana@example.edu", at: north)
        let entry = try await server.services.journal.create(
            campus: north.id, user: ana.id, JournalDraft(date: north.localDate(at: Date()), title: "t", text: ""), at: Date())
        try await server.run { api in
            // A 3 MB recording declared by its length is refused before its bytes are read (2 MB at once).
            let put = try await api.client.execute(
                uri: "/v1/campuses/north/me/journal/\(entry.id.lowercasedText)/audio", method: .put,
                headers: [.authorization: "Bearer \(member)", .contentType: "audio/ogg"],
                body: ByteBuffer(bytes: JournalTests.recording(.ogg, count: 3 * 1024 * 1024)))
            #expect(put.status == .noContent)
            let again = try await api.client.execute(
                uri: "/v1/campuses/north/me/journal/\(entry.id.lowercasedText)/audio", method: .put,
                headers: [.authorization: "Bearer \(member)", .contentType: "audio/ogg"],
                body: ByteBuffer(bytes: JournalTests.recording(.ogg)))
            #expect(again.status == .tooManyRequests)
            var statuses: [Int] = []
            for _ in 0..<4 {
                statuses.append(
                    try await api.send(.get, "/v1/campuses/north/me/journal", template: JournalTests.list, token: member).status)
            }
            #expect(statuses == [200, 200, 200, 429], "\(statuses)")  // the two PUTs counted too
            #expect(
                try await api.send(.get, "/v1/campuses/north/me/badge", template: "/v1/campuses/{campus}/me/badge", token: member).status
                    == 200)
        }
    }

    /// `serve` and `dev` take `--own-data-requests-per-minute N` (a campus app that syncs
    /// often; the API contract's fuzzing): N a minute after a fifth of N at once, the default
    /// the limits' own; a figure that leaves no request at once is refused by name.
    @Test func theOwnDataAllowanceIsAnOptionOfServeAndDev() throws {
        #expect(try OwnDataLimitOptions.parse([]).limit == RateLimits().ownDataRequestsPerMember)
        #expect(
            try ServeCommand.parse(["--own-data-requests-per-minute", "3000"]).ownData.limit == RateLimit(burst: 600, perMinute: 3_000))
        #expect(try DevCommand.parse(["--own-data-requests-per-minute", "7"]).ownData.limit == RateLimit(burst: 1, perMinute: 7))
        // dev takes serve's --trusted-proxy too (the contract's runs each name an address behind it).
        #expect(
            try DevCommand.parse(["--trusted-proxy", "127.0.0.1", "--trusted-proxy", "::1"]).proxies.addresses == ["127.0.0.1", "::1"])
        for bad in ["4", "0", "-5", "1000001", "many"] {
            #expect(throws: (any Error).self, "\(bad)") { try ServeCommand.parse(["--own-data-requests-per-minute", bad]) }
        }
        do {
            _ = try DevCommand.parse(["--own-data-requests-per-minute", "4"])
            Issue.record("4 a minute was taken")
        } catch {
            #expect(DevCommand.message(for: error) == "--own-data-requests-per-minute must be from 5 to 1000000")
        }
    }

    @Test func oneExportAtATimeAndAForgottenOneLetsGo() {
        let work = MemberWork(stale: .seconds(300))
        let start = ContinuousClock.now
        let first = work.begin("a", now: start)
        #expect(first != nil && work.begin("a", now: start) == nil && work.begin("b", now: start) != nil)
        first?.finished()
        first?.finished()  // twice is once
        let second = work.begin("a", now: start)
        #expect(second != nil)
        // A ticket never finished (its client gone before the body) holds its key five minutes.
        #expect(work.begin("a", now: start + .seconds(299)) == nil && work.begin("a", now: start + .seconds(301)) != nil)
    }
}
