import AttestPlugins
import AttestPluginsTesting
import AttestPostgres
import AttestTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import Journal
import Tenancy
import Testing

@Suite("The private journal")
struct JournalTests {
    static let list = "/v1/campuses/{campus}/me/journal"
    static let one = "/v1/campuses/{campus}/me/journal/{id}"
    static let audio = "/v1/campuses/{campus}/me/journal/{id}/audio"

    /// A made-up recording: the type's first bytes, then `count` bytes of noise.
    static func recording(_ type: AudioType, count: Int = 2_000) -> Data {
        let head: [UInt8] =
            switch type {
            case .webm: [0x1A, 0x45, 0xDF, 0xA3]
            case .ogg: Array("OggS".utf8)
            case .mpeg: Array("ID3".utf8) + [4, 0]
            case .mp4: [0, 0, 0, 0x20] + Array("ftypM4A ".utf8)
            case .wav: Array("RIFF".utf8) + [0x24, 0, 0, 0] + Array("WAVEfmt ".utf8)
            }
        return Data(head + (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
    }

    @Test func aMemberWritesListsEditsAndDeletesEntriesAndNothingBadIsStored() async throws {
        let clock = try TestClock("2026-11-20T14:00:00Z")
        let server = try await TestServer.make(clock: clock.read)
        let north = try await server.campus("north")
        let (_, member) = try await server.user("m@example.edu", at: north)
        try await server.run { api in
            var ids: [String] = []
            for (day, title) in [("2026-11-18", "Headache"), ("2026-11-20", "Tested"), ("2026-11-19", "Quarantine day 1")] {
                clock.advance(by: 1)
                let created = try await api.send(
                    .post, "/v1/campuses/north/me/journal", template: Self.list, token: member,
                    json: #"{"date": "\#(day)", "title": "\#(title)", "text": "Notes, with ünïcödé ✓", "tags": ["symptom", "place"]}"#)
                #expect(created.status == 201, "\(created.body)")
                let id = try #require(created.json["id"] as? String)
                #expect(created.headers[.location] == "/v1/campuses/north/me/journal/\(id)")
                #expect(created.headers[.cacheControl] == "private, no-store")
                #expect(created.json["audio"] is NSNull && created.json["tags"] as? [String] == ["symptom", "place"])
                ids.append(id)
            }
            // Today by default.
            clock.advance(by: 1)
            let undated = try await api.send(
                .post, "/v1/campuses/north/me/journal", template: Self.list, token: member, json: #"{"title": "No date"}"#)
            #expect(undated.json["date"] as? String == "2026-11-20" && undated.json["text"] as? String == "")

            let first = try await api.send(.get, "/v1/campuses/north/me/journal?limit=2", template: Self.list, token: member)
            let firstItems = try #require(first.json["items"] as? [[String: Any]])
            // Newest date first; of one date, the newest written first.
            #expect(firstItems.compactMap { $0["title"] as? String } == ["No date", "Tested"])
            let cursor = try #require(first.json["nextCursor"] as? String)
            let second = try await api.send(
                .get, "/v1/campuses/north/me/journal?limit=2&cursor=\(cursor)", template: Self.list, token: member)
            #expect((second.json["items"] as? [[String: Any]])?.compactMap { $0["title"] as? String } == ["Quarantine day 1", "Headache"])
            #expect(second.json["nextCursor"] is NSNull)
            let badCursor = try await api.send(.get, "/v1/campuses/north/me/journal?cursor=yesterday", template: Self.list, token: member)
            #expect(badCursor.status == 422 && badCursor.problem.fields == ["cursor"])

            clock.advance(by: 60)
            let patched = try await api.send(
                .patch, "/v1/campuses/north/me/journal/\(ids[0])", template: Self.one, token: member,
                json: #"{"title": "Bad headache", "tags": []}"#)
            #expect(patched.status == 200 && patched.json["title"] as? String == "Bad headache")
            #expect(patched.json["text"] as? String == "Notes, with ünïcödé ✓" && patched.json["date"] as? String == "2026-11-18")
            #expect(patched.json["tags"] as? [String] == [] && patched.json["updatedAt"] as? String != patched.json["createdAt"] as? String)

            // Every problem named at once, and nothing stored or changed.
            let long = String(repeating: "x", count: 10_001)
            let cases: [(String, [String])] = [
                (#"{"text": "no title"}"#, ["title"]),
                (#"{"title": "", "text": "\#(long)"}"#, ["text", "title"]),
                (#"{"title": "\#(String(repeating: "t", count: 201))"}"#, ["title"]),
                (#"{"title": "a", "tags": ["mood"]}"#, ["tags"]),
                (#"{"title": "a", "tags": ["place", "place"]}"#, ["tags"]),
                (#"{"title": "a", "date": "2026-11-22"}"#, ["date"]),
                (#"{"title": "a", "date": "20 Nov"}"#, ["date"]),
                (#"{"title": "a", "mood": "low"}"#, ["mood"]),
                (#"{"title": 3}"#, ["title"]),
            ]
            for (body, fields) in cases {
                let refused = try await api.send(.post, "/v1/campuses/north/me/journal", template: Self.list, token: member, json: body)
                #expect(refused.status == 422 && refused.problem.fields.sorted() == fields, "\(body): \(refused.body)")
            }
            // The longest text, every character written as an escaped pair: 120 KB of JSON, accepted.
            let escaped = String(repeating: #"\ud83d\ude00"#, count: JournalDraft.maxText)
            let longest = try await api.send(
                .post, "/v1/campuses/north/me/journal", template: Self.list, token: member,
                json: #"{"title": "Long", "text": "\#(escaped)"}"#)
            #expect(
                longest.status == 201 && (longest.json["text"] as? String)?.count == JournalDraft.maxText, "\(longest.body.prefix(300))")
            #expect(
                (try await api.send(
                    .delete, "/v1/campuses/north/me/journal/\(longest.json["id"] as? String ?? "")", template: Self.one, token: member))
                    .status == 204)
            let badPatch = try await api.send(
                .patch, "/v1/campuses/north/me/journal/\(ids[0])", template: Self.one, token: member, json: #"{"title": ""}"#)
            #expect(badPatch.status == 422 && badPatch.problem.fields == ["title"])
            let all = try await api.send(.get, "/v1/campuses/north/me/journal?limit=100", template: Self.list, token: member)
            #expect((all.json["items"] as? [[String: Any]])?.count == 4)
            let kept = try await api.send(.get, "/v1/campuses/north/me/journal/\(ids[0])", template: Self.one, token: member)
            #expect(kept.json["title"] as? String == "Bad headache")

            let deleted = try await api.send(.delete, "/v1/campuses/north/me/journal/\(ids[1])", template: Self.one, token: member)
            #expect(deleted.status == 204)
            for method in [HTTPRequest.Method.get, .delete] {
                let gone = try await api.send(method, "/v1/campuses/north/me/journal/\(ids[1])", template: Self.one, token: member)
                #expect(gone.status == 404, "\(method)")
            }
            let notAnID = try await api.send(.get, "/v1/campuses/north/me/journal/42", template: Self.one, token: member)
            #expect(notAnID.status == 404)
        }
    }

    @Test func onlyTheMemberSeesTheirEntriesAndTheDatabaseHoldsNoWordOfThem() async throws {
        let server = try await TestServer.make()
        let north = try await server.campus("north"), south = try await server.campus("south")
        let (author, member) = try await server.user("m@example.edu", at: north)
        let (_, neighbour) = try await server.user("n@example.edu", at: north)
        let (_, admin) = try await server.user("a@example.edu", at: north, roles: [.admin, .healthOfficer, .screener])
        let (_, stranger) = try await server.user("s@example.edu", at: south)
        let secret = "Saw Dr. Rivera about the rash"
        let created = try await server.services.journal.create(
            campus: north.id, user: author.id,
            JournalDraft(date: LocalDate("2026-11-20")!, title: secret, text: "Prescribed cream", tags: [.treatment]),
            at: Date())
        try await server.services.journal.putAudio(
            campus: north.id, user: author.id, id: created.id, type: .ogg, bytes: Self.recording(.ogg))
        try await server.run { api in
            let path = "/v1/campuses/north/me/journal/\(created.id.uuidString.lowercased())"
            let mine = try await api.send(.get, path, template: Self.one, token: member)
            #expect(mine.status == 200 && mine.json["title"] as? String == secret)
            for token in [neighbour, admin] {
                #expect((try await api.send(.get, path, template: Self.one, token: token)).status == 404)
                #expect((try await api.send(.get, path + "/audio", template: Self.audio, token: token)).status == 404)
                #expect((try await api.send(.patch, path, template: Self.one, token: token, json: #"{"title": "mine now"}"#)).status == 404)
                #expect((try await api.send(.delete, path + "/audio", template: Self.audio, token: token)).status == 404)
                #expect((try await api.send(.delete, path, template: Self.one, token: token)).status == 404)
                let theirs = try await api.send(.get, "/v1/campuses/north/me/journal", template: Self.list, token: token)
                #expect((theirs.json["items"] as? [[String: Any]])?.isEmpty == true)
            }
            // Another campus's token is worth nothing here, and the path under its own campus finds nothing.
            #expect((try await api.send(.get, path, template: Self.one, token: stranger)).status == 401)
            let southPath = "/v1/campuses/south/me/journal/\(created.id.uuidString.lowercased())"
            #expect((try await api.send(.get, southPath, template: Self.one, token: stranger)).status == 404)
            let still = try await api.send(.get, path, template: Self.one, token: member)
            #expect(still.json["title"] as? String == secret && (still.json["audio"] as? [String: Any])?["type"] as? String == "audio/ogg")
        }

        // Sealed at rest: no word of the title or text, nor the recording's bytes, in the rows.
        let owner = TestDatabase.client(database: server.database, role: nil)
        let rows = try await owner.query(
            "SELECT e.sealed, (SELECT string_agg(c.sealed, ''::bytea ORDER BY c.chunk) FROM journal_audio_chunks c WHERE c.entry_id = e.id) AS audio FROM journal_entries e"
        )
        let sealed = try rows[0].decode("sealed", as: Data.self), sealedAudio = try rows[0].decode("audio", as: Data.self)
        #expect(sealed.range(of: Data("Rivera".utf8)) == nil && sealed.range(of: Data("cream".utf8)) == nil)
        #expect(sealedAudio.range(of: Self.recording(.ogg).dropFirst(4).prefix(64)) == nil)
        // Row-level security: the campus alone, or another member of it, sees no entry.
        let app = TestDatabase.client(database: server.database)
        #expect(
            try await app.query("SELECT count(*) AS n FROM journal_entries", campus: north.id.rawValue)[0].decode("n", as: Int.self) == 0)
        let other = try await app.query(
            "SELECT count(*) AS n FROM journal_entries", settings: CampusScope.settings(north.id.rawValue, member: UUID()))
        #expect(try other[0].decode("n", as: Int.self) == 0)
        let own = try await app.query(
            "SELECT count(*) AS n FROM journal_entries", settings: CampusScope.settings(north.id.rawValue, member: author.id.rawValue))
        #expect(try own[0].decode("n", as: Int.self) == 1)
        await #expect(throws: PostgresError.self) {
            try await app.query(
                "INSERT INTO journal_entries (campus_id, user_id, id, entry_date, sealed) VALUES (\(north.id), \(author.id.rawValue), \(UUID()), '2026-11-20', '\\x00')",
                campus: north.id.rawValue)
        }
        // A copied envelope does not open for another entry.
        try await owner.query(
            """
            INSERT INTO journal_entries (campus_id, user_id, id, entry_date, sealed)
            SELECT campus_id, user_id, gen_random_uuid(), entry_date, sealed FROM journal_entries
            """)
        await #expect(throws: (any Error).self) {
            _ = try await server.services.journal.list(campus: north.id, user: author.id, after: nil, limit: 10)
        }

        // Deleting the member deletes their journal and recordings.
        try await app.query("DELETE FROM users WHERE campus_id = \(north.id) AND id = \(author.id.rawValue)", campus: north.id.rawValue)
        let left = try await owner.query(
            "SELECT (SELECT count(*) FROM journal_entries) + (SELECT count(*) FROM journal_audio) + (SELECT count(*) FROM journal_audio_chunks) AS n"
        )
        #expect(try left[0].decode("n", as: Int.self) == 0)
        await owner.shutdown()
        await app.shutdown()
    }

    @Test func aRecordingIsKeptByTheTypeItsBytesShowAndStreamedBackInRanges() async throws {
        let server = try await TestServer.make()
        let north = try await server.campus("north")
        let (author, member) = try await server.user("m@example.edu", at: north)
        let entry = try await server.services.journal.create(
            campus: north.id, user: author.id, JournalDraft(date: LocalDate("2026-11-20")!, title: "Cough", text: ""), at: Date())
        let path = "/v1/campuses/north/me/journal/\(entry.id.uuidString.lowercased())"
        try await server.run { api in
            func put(_ bytes: Data, type: String?) async throws -> APIClient.Reply {
                var headers: HTTPFields = [.authorization: "Bearer \(member)"]
                if let type { headers[.contentType] = type }
                let response = try await api.client.execute(
                    uri: path + "/audio", method: .put, headers: headers, body: ByteBuffer(bytes: bytes))
                return APIClient.Reply(status: Int(response.status.code), headers: response.headers, body: String(buffer: response.body))
            }
            let none = try await api.send(.get, path + "/audio", template: Self.audio, token: member)
            #expect(none.status == 404)
            for type in AudioType.allCases {
                let stored = try await put(Self.recording(type), type: type == .webm ? "audio/webm;codecs=opus" : type.rawValue)
                #expect(stored.status == 204, "\(type): \(stored.body)")
            }
            let webm = Self.recording(.webm, count: 10_000)
            #expect(try await put(webm, type: "audio/webm").status == 204)
            let whole = try await api.client.execute(uri: path + "/audio", method: .get, headers: [.authorization: "Bearer \(member)"])
            #expect(whole.status == .ok && whole.headers[.contentType] == "audio/webm" && whole.headers[.acceptRanges] == "bytes")
            #expect(Data(whole.body.readableBytesView) == webm)
            for (range, expected, contentRange) in [
                ("bytes=0-3", webm.prefix(4), "bytes 0-3/10004"), ("bytes=10000-", webm.suffix(4), "bytes 10000-10003/10004"),
                ("bytes=-2", webm.suffix(2), "bytes 10002-10003/10004"), ("bytes=10-99999", webm.dropFirst(10), "bytes 10-10003/10004"),
            ] {
                let part = try await api.client.execute(
                    uri: path + "/audio", method: .get, headers: [.authorization: "Bearer \(member)", .range: range])
                #expect(part.status == .partialContent && part.headers[.contentRange] == contentRange, "\(range)")
                #expect(Data(part.body.readableBytesView) == Data(expected), "\(range)")
            }
            let outside = try await api.client.execute(
                uri: path + "/audio", method: .get, headers: [.authorization: "Bearer \(member)", .range: "bytes=20000-"])
            #expect(outside.status == .rangeNotSatisfiable && outside.headers[.contentRange] == "bytes */10004")
            let listed = try await api.send(.get, path, template: Self.one, token: member)
            #expect((listed.json["audio"] as? [String: Any])?["size"] as? Int == 10_004)

            // A renamed file, bytes of no kept type, no type, too large: refused, the recording kept.
            let renamed = try await put(Self.recording(.wav), type: "audio/webm")
            #expect(renamed.status == 415 && renamed.body.contains("audio/wav"), "\(renamed.body)")
            #expect(try await put(Data("just some text, not audio".utf8), type: "audio/mpeg").status == 415)
            #expect(try await put(Self.recording(.ogg), type: nil).status == 415)
            #expect(try await put(Self.recording(.ogg), type: "text/plain").status == 415)
            #expect(try await put(Self.recording(.webm, count: AudioType.maxSize), type: "audio/webm").status == 413)
            #expect(try await put(Data(), type: "audio/webm").status == 422)
            let after = try await api.client.execute(uri: path + "/audio", method: .get, headers: [.authorization: "Bearer \(member)"])
            #expect(Data(after.body.readableBytesView) == webm)

            #expect((try await api.send(.delete, path + "/audio", template: Self.audio, token: member)).status == 204)
            #expect((try await api.send(.get, path + "/audio", template: Self.audio, token: member)).status == 404)
            #expect((try await api.send(.delete, path + "/audio", template: Self.audio, token: member)).status == 404)
        }
    }

    @Test func sniffingReadsTheBytesNotTheName() {
        for type in AudioType.allCases { #expect(AudioType.sniff(Self.recording(type)) == type) }
        #expect(AudioType.sniff([0xFF, 0xFB, 0x90, 0x64]) == .mpeg)  // an MPEG-1 layer III frame
        #expect(AudioType.sniff([0xFF, 0xE8]) == nil)  // reserved version
        #expect(AudioType.sniff(Array("%PDF-1.7".utf8)) == nil)
        #expect(AudioType.sniff(Array("RIFF\u{0}\u{0}\u{0}\u{0}AVI ".utf8)) == nil)
        #expect(AudioType.sniff([UInt8]()) == nil)
        #expect(
            AudioType.named("Audio/WebM; codecs=opus") == .webm && AudioType.named("audio/x-wav") == .wav
                && AudioType.named("image/png") == nil)
    }
}

@Suite("A member's keeping period")
struct KeepingTests {
    static let path = "/v1/campuses/{campus}/me/privacy"

    @Test func theMemberChoosesHowLongTheirJournalAndEpisodesAreKeptAndTheUpkeepAppliesIt() async throws {
        let clock = try TestClock("2026-11-20T17:00:00Z")
        let server = try await TestServer.make(clock: clock.read)
        let north = try await server.campus("north")
        let (ana, member) = try await server.user("ana@example.edu", at: north)
        let (bo, _) = try await server.user("bo@example.edu", at: north)
        for (user, date) in [(ana, "2026-10-01"), (ana, "2026-11-15"), (bo, "2026-10-01")] {
            _ = try await server.services.journal.create(
                campus: north.id, user: user.id, JournalDraft(date: LocalDate(date)!, title: "On \(date)", text: ""), at: clock.read())
            _ = try await server.services.episodes.start(
                campus: north.id, user: user.id,
                EpisodeDraft(
                    kind: "headache", severity: 3, startedAt: try Date(date + "T12:00:00Z", strategy: .iso8601),
                    stoppedAt: try Date(date + "T13:00:00Z", strategy: .iso8601)),
                context: nil, baseline: nil, now: clock.read())
        }
        try await server.run { api in
            let initial = try await api.send(.get, "/v1/campuses/north/me/privacy", template: Self.path, token: member)
            #expect(initial.status == 200 && initial.json["journalKeepDays"] is NSNull)
            for (body, status) in [
                (#"{"journalKeepDays": 0}"#, 422), (#"{"journalKeepDays": 3651}"#, 422), (#"{"journalKeepDays": 1.5}"#, 422), (#"{}"#, 422),
                (#"{"journalKeepDays": 30}"#, 200),
            ] {
                let reply = try await api.send(.put, "/v1/campuses/north/me/privacy", template: Self.path, token: member, json: body)
                #expect(reply.status == status, "\(body): \(reply.body)")
            }
            #expect(
                (try await api.send(.get, "/v1/campuses/north/me/privacy", template: Self.path, token: member)).json["journalKeepDays"]
                    as? Int == 30)
            let counts = try await JournalUpkeep(client: server.pool).run(campus: north, now: clock.read())
            #expect(counts == ["journal_entries_purged": 1, "episodes_purged": 1])
            // Ana keeps what is within 30 days; Bo chose nothing, so keeps everything.
            #expect(
                try await server.services.journal.list(campus: north.id, user: ana.id, after: nil, limit: 10).entries.map(\.title) == [
                    "On 2026-11-15"
                ])
            #expect(try await server.services.journal.list(campus: north.id, user: bo.id, after: nil, limit: 10).entries.count == 1)
            #expect(
                try await server.services.episodes.list(campus: north.id, user: ana.id, after: nil, limit: 10, now: clock.read()).episodes
                    .count == 1)
            #expect(
                try await server.services.episodes.list(campus: north.id, user: bo.id, after: nil, limit: 10, now: clock.read()).episodes
                    .count == 1)
        }
    }

    /// A recording is sealed in 64 KiB chunks: any range reads back exactly, only the chunks a
    /// range covers are opened, and a chunk moved, swapped or cut off does not open.
    @Test func aRecordingIsSealedInChunksEachBoundToItsPlace() async throws {
        let server = try await TestServer.make()
        let north = try await server.campus("north")
        let (author, _) = try await server.user("m@example.edu", at: north)
        let store = server.services.journal
        let bytes = JournalTests.recording(.ogg, count: 300_000)  // five chunks, the last short
        let first = try await store.create(
            campus: north.id, user: author.id, JournalDraft(date: LocalDate("2026-11-20")!, title: "A", text: ""), audio: (.ogg, bytes),
            at: Date())
        let second = try await store.create(
            campus: north.id, user: author.id, JournalDraft(date: LocalDate("2026-11-20")!, title: "B", text: ""), audio: (.ogg, bytes),
            at: Date())
        let owner = TestDatabase.client(database: server.database, role: nil, maxConnections: 1)
        #expect(
            try await owner.query("SELECT count(*) AS n FROM journal_audio_chunks WHERE entry_id = \(first.id)").first?.decode(
                "n", as: Int.self) == 5)
        func read(_ id: UUID, _ first: Int, _ last: Int) async throws -> Data {
            let recording = try #require(try await store.recording(campus: north.id, user: author.id, id: id))
            var data = Data()
            try await store.read(recording, from: first, through: last) { data += $0 }
            return data
        }
        #expect(try await store.audio(campus: north.id, user: author.id, id: first.id)?.bytes == bytes)
        for (from, to) in [(0, 0), (65_535, 65_536), (100, 200_000), (262_143, 262_144), (299_000, bytes.count - 1), (0, bytes.count - 1)] {
            #expect(try await read(first.id, from, to) == bytes[from...to], "\(from)-\(to)")
        }
        // A range opens only its chunks: with the fourth chunk ruined, the first two still read.
        try await owner.query(
            "UPDATE journal_audio_chunks SET sealed = '\\x00'::bytea || sealed WHERE entry_id = \(second.id) AND chunk = 3")
        #expect(try await read(second.id, 10, 130_000) == bytes[10...130_000])
        await #expect(throws: CampusError.sealedSecretDamaged) { _ = try await read(second.id, 0, bytes.count - 1) }
        // Swapped within a recording, or taken from another one: neither opens.
        try await owner.query(
            """
            UPDATE journal_audio_chunks c SET sealed = o.sealed FROM journal_audio_chunks o
            WHERE c.entry_id = \(first.id) AND o.entry_id = \(first.id) AND ((c.chunk, o.chunk) IN ((0, 1), (1, 0)))
            """)
        await #expect(throws: CampusError.sealedSecretDamaged) { _ = try await read(first.id, 0, 10) }
        // Cut short, even with its size made to fit: the new last chunk is not marked last.
        let third = try await store.create(
            campus: north.id, user: author.id, JournalDraft(date: LocalDate("2026-11-20")!, title: "C", text: ""), audio: (.ogg, bytes),
            at: Date())
        try await owner.query("DELETE FROM journal_audio_chunks WHERE entry_id = \(third.id) AND chunk = 4")
        try await owner.query("UPDATE journal_audio SET size = 262144 WHERE entry_id = \(third.id)")
        await #expect(throws: CampusError.sealedSecretDamaged) { _ = try await read(third.id, 200_000, 262_143) }
        // A recording kept whole before chunks still opens.
        let legacy = try await store.create(
            campus: north.id, user: author.id, JournalDraft(date: LocalDate("2026-11-20")!, title: "D", text: ""), at: Date())
        let envelope = try SealedSecret.seal(
            bytes, under: TestServer.kek, context: "journal/audio/\(north.id)/\(author.id)/\(legacy.id.lowercasedText)")
        try await owner.query(
            """
            INSERT INTO journal_audio (campus_id, user_id, entry_id, content_type, size, sealed)
            VALUES (\(north.id), \(author.id.rawValue), \(legacy.id), 'audio/ogg', \(Int32(bytes.count)), \(envelope))
            """)
        #expect(try await read(legacy.id, 70_000, 70_100) == bytes[70_000...70_100])
        await owner.shutdown()
    }
}
