import AttestPlugins
import AttestPostgres
import AttestTestSupport
import BuiltinPlugins
import Crypto
import Foundation
import HTTPTypes
import Identity
import Journal
import Notifications
import Records
import Synchronization
import Testing

@testable import AttestCLI
@testable import Surveys
@testable import Tenancy

/// `attest keys rotate-kek`: every sealed column of the schema is listed, every value of each
/// is re-wrapped, a run killed midway is finished by the next, and servers that accept the
/// previous key answer through a rotation.
@Suite("Key-encryption key rotation")
struct KeyRotationTests {
    /// Columns of the schema that are `bytea` but hold no envelope: SHA-256 hashes, and a
    /// recording's chunks, sealed under its data key (`journal_audio.data_key`, an envelope).
    static let hashColumns: Set<String> = [
        "sessions.token_hash", "id_token_uses.token_id", "sign_in_nonces.nonce_hash", "journal_shares.token_hash",
        "attestations.idempotency_digest", "journal_audio_chunks.sealed", "push_subscriptions.endpoint_hash",
        "machine_tokens.token_hash",
        // Keyed with the campus's badge-subject key (sealed in badge_subject_keys, re-sealed by
        // rotate-kek, the same key after): a guest's code and address, and the pass's SHA-256.
        "guest_visits.code_hash", "guest_visits.email_key", "guest_visits.session_hash",
    ]

    /// Two keys in files, as an operator keeps them.
    struct Keys {
        let directory: String
        let old: KeyEncryptionKey
        let new: KeyEncryptionKey
        var oldFile: String { directory + "/old" }
        var newFile: String { directory + "/new" }

        init() throws {
            directory = FileManager.default.temporaryDirectory.appending(path: "attest-rotate-\(UUID().uuidString.prefix(8))").path
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let (old, oldText) = KeyEncryptionKey.generate(), (new, newText) = KeyEncryptionKey.generate()
            (self.old, self.new) = (old, new)
            try Data(oldText.utf8).write(to: URL(fileURLWithPath: directory + "/old"))
            try Data(newText.utf8).write(to: URL(fileURLWithPath: directory + "/new"))
        }

        func rotate(database: String, extra: [String] = []) throws -> ChildProcess {
            try ChildProcess(
                [ChildProcess.attestBinary, "keys", "rotate-kek", "--new-kek-file", newFile, "--json"] + extra,
                environment: ["DATABASE_URL": TestDatabase.url(database: database), "ATTEST_KEK": nil, "ATTEST_KEK_FILE": oldFile])
        }
    }

    /// Values in every column whose envelopes name `kek`, by column, read as the superuser
    /// (no row-level security): every `bytea` column of the schema, registered or not.
    static func envelopes(under kek: KeyEncryptionKey, database: String) async throws -> [String: Int] {
        let owner = TestDatabase.client(database: database, role: nil, maxConnections: 1)
        defer { Task { await owner.shutdown() } }
        let columns = try await owner.query(
            """
            SELECT table_name, column_name FROM information_schema.columns
            WHERE table_schema = 'public' AND data_type = 'bytea' ORDER BY table_name, column_name
            """
        ).map { (try $0.decode("table_name", as: String.self), try $0.decode("column_name", as: String.self)) }
        var counts: [String: Int] = [:]
        for (table, column) in columns {
            let rows = try await owner.query(
                """
                SELECT count(*) AS n FROM \(identifier: table)
                WHERE length(\(identifier: column)) > \(SealedSecret.headerSize) AND get_byte(\(identifier: column), 0) = 1
                  AND substring(\(identifier: column) from 2 for 8) = \(Data(hex: kek.id) ?? Data())
                """)
            counts["\(table).\(column)"] = try rows.first?.decode("n") ?? 0
        }
        return counts
    }

    @Test func everyByteaColumnOfTheSchemaIsSealedAndListedOrAHash() async throws {
        let database = try await TestDatabase.create()
        let owner = TestDatabase.client(database: database, role: nil, maxConnections: 1)
        let columns = try await owner.query(
            "SELECT table_name || '.' || column_name AS name FROM information_schema.columns WHERE table_schema = 'public' AND data_type = 'bytea'"
        ).map { try $0.decode("name", as: String.self) }
        await owner.shutdown()
        let registered = SealedColumns.all.map(\.name)
        #expect(Set(registered).count == registered.count, "a column is listed twice: \(registered)")
        #expect(Set(registered).isDisjoint(with: Self.hashColumns))
        let unexplained = Set(columns).subtracting(registered).subtracting(Self.hashColumns)
        #expect(unexplained.isEmpty, "bytea columns neither in SealedColumns.all nor hashes: \(unexplained.sorted())")
        #expect(Set(registered).subtracting(columns).isEmpty, "listed columns the schema does not have")
    }

    /// A campus with a value of every sealed kind, written by a server holding `kek`.
    struct Sealed {
        var campus: Campus
        var members: [UserID]
        var titles: [String]
        var recording: Data
        var notes: [String]
        var pushKey: String
    }

    static func sealEveryKind(_ server: TestServer, kek: KeyEncryptionKey, members count: Int = 2) async throws -> Sealed {
        let north = try await server.campus("north")
        _ = try await server.services.badges.keys.rotate(campus: north, actor: "test")  // a retired key too
        _ = try await server.services.badges.keys.subjectKey(campus: north.id)
        try await OIDCIssuerStore(client: server.pool).add(
            campus: north, OIDCIssuer.google(audiences: ["aud"], clientID: "client-1"), actor: "test", clientSecret: "the client secret",
            kek: kek)
        try await CampusPluginStore(client: server.pool, kek: kek).enable(
            campus: north, kind: .sink, id: "webhook",
            settings: .object(["url": .string("https://hooks.example.edu/in?key=K"), "secret": .string("the webhook secret, long enough")]),
            secret: PluginRegistry.builtin.secretMembers(
                of: .object(["url": .string(""), "secret": .string("")]), kind: .sink, id: "webhook"), actor: "test")
        let now = Date()
        let recording = JournalTests.recording(.ogg, count: 300_000)
        var members: [UserID] = [], titles: [String] = [], notes: [String] = []
        for index in 0..<count {
            let (member, _) = try await server.user("m\(index)@example.edu", at: north)
            members.append(member.id)
            let title = "Entry of m\(index) ✓"
            _ = try await server.services.journal.create(
                campus: north.id, user: member.id, JournalDraft(date: north.localDate(at: now), title: title, text: "words \(index)"),
                audio: index == 0 ? (.ogg, recording) : nil, at: now)
            titles.append(title)
            let note = "notes of m\(index)"
            _ = try await server.services.episodes.start(
                campus: north.id, user: member.id,
                EpisodeDraft(kind: "headache", severity: 4, notes: note, startedAt: now.addingTimeInterval(-3_600)), context: nil,
                baseline: nil, now: now)
            notes.append(note)
            // A health profile: sealed like the journal, re-wrapped with it.
            try await ProfileStore(client: server.pool, kek: kek).set(
                campus: north.id, user: member.id, profile: HealthProfile(birthYear: 1990 + index, heightCm: 170, weightKg: 60),
                now: now)
            // An exemption's note.
            _ = try await HealthRecords(client: server.pool, kek: kek).requestExemption(
                campus: north, user: member.id, kind: .medical, note: "exemption note of m\(index)", actor: "test", now: now)
            // A browser's push subscription, sealed whole.
            _ = try await PushSubscriptionStore(client: server.pool, kek: kek).add(
                campus: north.id, user: member.id, Self.subscription(index))
        }
        let pushKey = try await PushKeyStore(client: server.pool, kek: kek).key(campus: north.id).publicKeyText
        return Sealed(campus: north, members: members, titles: titles, recording: recording, notes: notes, pushKey: pushKey)
    }

    static func subscription(_ index: Int) -> PushSubscription {
        PushSubscription(
            endpoint: URL(string: "https://push.example.net/send/\(index)") ?? URL(fileURLWithPath: "/"),
            p256dh: P256.KeyAgreement.PrivateKey().publicKey.x963Representation, auth: Data(repeating: UInt8(index), count: 16))
    }

    /// Every value of `sealed` opens through `services`.
    static func expectEveryValueOpens(_ services: AttestServicesProbe, _ sealed: Sealed) async throws {
        let north = sealed.campus
        for (index, member) in sealed.members.enumerated() {
            let page = try await services.journal.list(campus: north.id, user: member, after: nil, limit: 10)
            #expect(page.entries.map(\.title) == [sealed.titles[index]])
            if index == 0, let id = page.entries.first?.id {
                let audio = try await services.journal.audio(campus: north.id, user: member, id: id)
                #expect(audio?.bytes == sealed.recording)
            }
            let episodes = try await services.episodes.list(campus: north.id, user: member, after: nil, limit: 10, now: Date()).episodes
            #expect(episodes.map(\.notes) == [sealed.notes[index]])
            #expect(
                try await ProfileStore(client: services.pool, kek: services.kek).profile(campus: north.id, user: member).birthYear == 1990
                    + index)
            let exemptions = try await HealthRecords(client: services.pool, kek: services.kek).exemptions(campus: north, user: member)
            #expect(exemptions.map(\.note) == ["exemption note of m\(index)"])
            let browsers = try await PushSubscriptionStore(client: services.pool, kek: services.kek).list(campus: north.id, user: member)
            #expect(browsers.map(\.subscription.endpoint.absoluteString) == ["https://push.example.net/send/\(index)"])
        }
        #expect(try await PushKeyStore(client: services.pool, kek: services.kek).key(campus: north.id).publicKeyText == sealed.pushKey)
        let keys = try await services.badgeKeys.keys(campus: north.id)
        #expect(keys.count == 2 && keys.allSatisfy { $0.privateKey != nil })
        _ = try await services.badgeKeys.subjectKey(campus: north.id)
        let client = try await OIDCIssuerStore(client: services.pool).webClient(
            campus: north.id, issuer: OIDCIssuer.googleIssuer, kek: services.kek)
        #expect(client.secret == "the client secret")
        let webhook = try await CampusPluginStore(client: services.pool, kek: services.kek).settings(
            campus: north.id, kind: .sink, id: "webhook")
        #expect(
            webhook?["secret"] == .string("the webhook secret, long enough")
                && webhook?["url"] == .string("https://hooks.example.edu/in?key=K"))
    }

    /// The stores of a server holding `kek`, on its own pool.
    struct AttestServicesProbe {
        let pool: PostgresClient
        let kek: KeyEncryptionKey
        var journal: JournalStore { JournalStore(client: pool, kek: kek) }
        var episodes: EpisodeStore { EpisodeStore(client: pool, kek: kek) }
        let badgeKeys: BadgeKeyStore

        init(database: String, kek: KeyEncryptionKey) {
            pool = TestDatabase.client(database: database)
            self.kek = kek
            badgeKeys = BadgeKeyStore(client: pool, kek: kek)
        }
    }

    @Test func everySealedValueIsRewrappedAndOpensWithTheNewKeyAlone() async throws {
        let keys = try Keys()
        defer { try? FileManager.default.removeItem(atPath: keys.directory) }
        let server = try await TestServer.make(kek: keys.old)
        let sealed = try await Self.sealEveryKind(server, kek: keys.old)
        // Every column that holds an envelope is one the rotation knows.
        let before = try await Self.envelopes(under: keys.old, database: server.database)
        let holding = Set(before.filter { $0.value > 0 }.keys)
        #expect(holding.isSubset(of: Set(SealedColumns.all.map(\.name))), "\(holding)")
        #expect(holding.count >= 8, "\(before)")

        let rotation = try keys.rotate(database: server.database)
        #expect(try await rotation.wait(timeout: .seconds(60)) == 0, "\(rotation.stderr)")
        let report = try JSONSerialization.jsonObject(with: Data(rotation.stdout.utf8)) as? [String: Any]
        // Two badge keys, the subject key, the client secret, the webhook's, two entries, a recording, two episodes, two profiles,
        // the push key, two browsers' subscriptions and two exemptions' notes.
        #expect((report?["rewrapped"] as? [String: Int])?["north"] == 17, "\(rotation.stdout)")
        #expect(try await Self.envelopes(under: keys.old, database: server.database).values.allSatisfy { $0 == 0 })
        #expect(try await Self.envelopes(under: keys.new, database: server.database) == before)

        // The old key destroyed, a server restarted with the new one alone opens everything.
        try FileManager.default.removeItem(atPath: keys.oldFile)
        let restarted = AttestServicesProbe(database: server.database, kek: keys.new)
        try await Self.expectEveryValueOpens(restarted, sealed)
        // And one holding only the old key opens nothing of a member's.
        let stale = AttestServicesProbe(database: server.database, kek: keys.old)
        await #expect(throws: CampusError.self) {
            _ = try await stale.journal.list(campus: sealed.campus.id, user: sealed.members[0], after: nil, limit: 10)
        }
        await restarted.pool.shutdown()
        await stale.pool.shutdown()
        await server.pool.shutdown()

        // Run again (with the new key as current and nothing under the old): nothing to do.
        let again = try ChildProcess(
            [ChildProcess.attestBinary, "keys", "rotate-kek", "--new-kek-file", keys.newFile, "--json"],
            environment: [
                "DATABASE_URL": TestDatabase.url(database: server.database), "ATTEST_KEK": KeyEncryptionKey.generate().text,
                "ATTEST_KEK_FILE": nil,
            ])
        #expect(try await again.wait(timeout: .seconds(60)) == 0, "\(again.stderr)")
        #expect(again.stdout.contains(#""north":0"#), "\(again.stdout)")
    }

    @Test func aRotationKilledMidwayIsFinishedByTheNextRun() async throws {
        let keys = try Keys()
        defer { try? FileManager.default.removeItem(atPath: keys.directory) }
        let server = try await TestServer.make(kek: keys.old)
        let north = try await server.campus("north")
        let now = Date()
        let count = 1_200
        let users = UserStore(client: server.pool)
        for index in 0..<count {
            let user = try await users.add(campus: north, email: "k\(index)@example.edu", displayName: "", actor: "test")
            _ = try await server.services.journal.create(
                campus: north.id, user: user.id, JournalDraft(date: north.localDate(at: now), title: "t\(index)", text: ""), at: now)
        }
        let rotation = try keys.rotate(database: server.database)
        var underNew = 0
        for _ in 0..<3_000 {
            underNew = try await Self.envelopes(under: keys.new, database: server.database)["journal_entries.sealed"] ?? 0
            if underNew >= 50 { break }
            try await Task.sleep(for: .milliseconds(10))
        }
        rotation.signal(SIGKILL)
        _ = try? await rotation.wait(timeout: .seconds(10))
        let atKill = try await Self.envelopes(under: keys.new, database: server.database)["journal_entries.sealed"] ?? 0
        #expect(atKill >= 50 && atKill < count, "the run was not stopped midway: \(atKill) of \(count) re-wrapped")

        let resumed = try keys.rotate(database: server.database)
        #expect(try await resumed.wait(timeout: .seconds(120)) == 0, "\(resumed.stderr)")
        #expect(resumed.stderr.contains("of 1200 members"), "progress: \(resumed.stderr)")
        #expect(try await Self.envelopes(under: keys.old, database: server.database).values.allSatisfy { $0 == 0 })
        #expect(try await Self.envelopes(under: keys.new, database: server.database)["journal_entries.sealed"] == count)
        let restarted = AttestServicesProbe(database: server.database, kek: keys.new)
        let members = try await users.list(campus: north.id)
        var opened = 0
        for member in members {
            opened += try await restarted.journal.list(campus: north.id, user: member.id, after: nil, limit: 5).entries.count
        }
        #expect(opened == count)
        await restarted.pool.shutdown()
        await server.pool.shutdown()
    }

    @Test func aServerAcceptingThePreviousKeyAnswersThroughARotation() async throws {
        let keys = try Keys()
        defer { try? FileManager.default.removeItem(atPath: keys.directory) }
        let first = try await TestServer.make(kek: keys.old)
        let sealed = try await Self.sealEveryKind(first, kek: keys.old, members: 16)
        var issued: [String] = []
        for member in sealed.members {
            issued.append(try await SessionStore(client: first.pool).issue(campus: sealed.campus, user: member).token)
        }
        let tokens = issued
        // Restarted with the new key, the old one still opening.
        let server = try await TestServer.make(kek: keys.new.accepting([keys.old]), database: first.database)
        let statuses = Counts(), rotated = Flag()
        try await server.run { api in
            try await api.withConnections(tokens.count) { clients in
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for (client, token) in zip(clients, tokens) {
                        group.addTask {
                            var round = 0
                            while !Task.isCancelled, !rotated.value.load(ordering: .relaxed) || round < 3 {
                                round += 1
                                let requests: [(HTTPRequest.Method, String, String?)] = [
                                    (.get, "me/journal", nil), (.post, "me/journal", #"{"title": "during \#(round)"}"#),
                                    (.get, "me/episodes", nil), (.get, "me/badge", nil),
                                ]
                                for (method, path, json) in requests {
                                    let reply = try await client.send(
                                        method, "/v1/campuses/north/\(path)", template: "/v1/campuses/{campus}/\(path)", token: token,
                                        json: json)
                                    statuses.value.withLock { $0[reply.status, default: 0] += 1 }
                                }
                            }
                        }
                    }
                    group.addTask {
                        // Once the load is under way.
                        while statuses.value.withLock({ $0.values.reduce(0, +) }) < 64 { try await Task.sleep(for: .milliseconds(5)) }
                        let rotation = KeyRotation(
                            client: server.pool, columns: SealedColumns.all, from: keys.old, to: keys.new, batchSize: 3)
                        _ = try await rotation.run(campuses: [sealed.campus], actor: "test")
                        rotated.value.store(true, ordering: .relaxed)
                    }
                    try await group.waitForAll()
                }
            }
        }
        let seen = statuses.value.withLock { $0 }
        #expect(seen.keys.allSatisfy { $0 < 500 }, "\(seen)")
        #expect((seen[200] ?? 0) > 100 && (seen[201] ?? 0) > 30, "\(seen)")
        #expect(try await Self.envelopes(under: keys.old, database: first.database).values.allSatisfy { $0 == 0 })
        let restarted = AttestServicesProbe(database: first.database, kek: keys.new)
        try await Self.expectEveryValueOpensIgnoringNewEntries(restarted, sealed)
        await restarted.pool.shutdown()
        await first.pool.shutdown()
    }

    static func expectEveryValueOpensIgnoringNewEntries(_ services: AttestServicesProbe, _ sealed: Sealed) async throws {
        for (index, member) in sealed.members.enumerated() {
            let entries = try await services.journal.list(campus: sealed.campus.id, user: member, after: nil, limit: 100).entries
            #expect(entries.contains { $0.title == sealed.titles[index] } && entries.count > 1)
        }
        _ = try await services.badgeKeys.subjectKey(campus: sealed.campus.id)
    }
}

final class Flag: Sendable { let value = Atomic<Bool>(false) }
final class Counts: Sendable { let value = Mutex<[Int: Int]>([:]) }

@Suite("Plugins' secret settings")
struct PluginSecretTests {
    @Test func secretSettingsAreSealedHiddenAndOpenedForThePlugin() async throws {
        let database = try await TestDatabase.create()
        let url = TestDatabase.url(database: database)
        func attest(_ arguments: String..., kek: Bool = true) async throws -> (status: Int32, stdout: String, stderr: String) {
            try await ChildProcess.run(
                [ChildProcess.attestBinary] + arguments,
                environment: ["DATABASE_URL": url, "ATTEST_KEK": kek ? ChildProcess.testKEK : nil, "ATTEST_KEK_FILE": nil])
        }
        #expect(try await attest("campus", "create", "north", "--name", "North", "--timezone", "UTC").status == 0)
        let file = FileManager.default.temporaryDirectory.appending(path: "hook-\(UUID().uuidString.prefix(8)).json")
        try Data(#"{"url": "https://hooks.example.edu/in?apikey=KEY-77", "secret": "S3CRET-99-sixteen-long", "timeoutSeconds": 5}"#.utf8)
            .write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let refused = try await attest("plugin", "enable", "north", "sink", "webhook", "--settings", file.path, kek: false)
        #expect(
            refused.status == 1 && refused.stderr.contains("hold secrets (secret, url)") && refused.stderr.contains("--kek-file"),
            "\(refused.stderr)")
        #expect(try await attest("plugin", "enable", "north", "sink", "webhook", "--settings", file.path).status == 0)

        // In the database: neither in the clear, both in one envelope.
        let owner = TestDatabase.client(database: database, role: nil, maxConnections: 1)
        let row = try #require(
            try await owner.query("SELECT settings::text AS settings, secrets FROM campus_plugins WHERE plugin_id = 'webhook'").first)
        let plain: String = try row.decode("settings")
        #expect(!plain.contains("KEY-77") && !plain.contains("S3CRET-99-sixteen-long") && plain.contains("timeoutSeconds"), "\(plain)")
        let sealed: Data = try row.decode("secrets")
        #expect(sealed.range(of: Data("S3CRET-99-sixteen-long".utf8)) == nil && SealedSecret.kekID(of: sealed) != nil)
        // Listed as sealed, never shown.
        let listed = try await attest("plugin", "list", "north")
        #expect(listed.stdout.contains(#""secret":"(sealed)""#) && listed.stdout.contains(#""url":"(sealed)""#), "\(listed.stdout)")
        #expect(!listed.stdout.contains("S3CRET-99-sixteen-long") && !listed.stdout.contains("KEY-77"))
        // The server (which holds the key) builds the sink with them.
        let campus = try #require(try await CampusStore(client: owner).find(slug: "north"))
        let kek = try #require(KeyEncryptionKey(text: ChildProcess.testKEK))
        let settings = try await CampusPluginStore(client: owner, kek: kek).settings(campus: campus.id, kind: .sink, id: "webhook")
        #expect(
            settings?["secret"] == .string("S3CRET-99-sixteen-long")
                && settings?["url"] == .string("https://hooks.example.edu/in?apikey=KEY-77"))
        #expect(throws: Never.self) { _ = try PluginRegistry.builtin.makeSink(id: "webhook", settings: settings ?? .null) }

        // Settings stored in the clear before secrets were sealed are sealed as a server starts.
        try await owner.query(
            """
            UPDATE campus_plugins SET secrets = NULL,
                settings = '{"url": "https://hooks.example.edu/old?apikey=OLD-1", "secret": "OLD-2-sixteen-chars"}'::jsonb WHERE plugin_id = 'webhook'
            """)
        let registry = PluginRegistry.builtin
        let store = CampusPluginStore(client: owner, kek: kek)
        #expect(try await store.sealPlainSecrets(campus: campus.id) { registry.secretMembers(of: $2, kind: $0, id: $1) } == 1)
        let after = try await owner.query("SELECT settings::text AS settings FROM campus_plugins WHERE plugin_id = 'webhook'").first?
            .decode("settings", as: String.self)
        #expect(after == "{}")
        #expect(try await store.settings(campus: campus.id, kind: .sink, id: "webhook")?["secret"] == .string("OLD-2-sixteen-chars"))
        await owner.shutdown()
    }
}
