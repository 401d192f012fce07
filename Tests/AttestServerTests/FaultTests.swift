@testable import AttestHTTP
import AttestCLI
import AttestPlugins
import AttestPostgres
import AttestSchema
import AttestTestSupport
import Foundation
import HTTPTypes
import Identity
import Logging
import Surveys
import Synchronization
import Tenancy
import Testing
import AttestPluginsTesting

@Suite("Faults")
struct FaultTests {
    /// How PostgreSQL is stopped: as `pg_ctl stop` does, a signal to the postmaster.
    enum Stop: String, CaseIterable, Sendable, CustomTestStringConvertible {
        /// SIGINT (`-m fast`): sessions are ended with an error (57P01), then a checkpoint.
        case restart
        /// SIGQUIT (`-m immediate`): every process exits at once, no checkpoint; the next
        /// start replays the WAL, as after a crash.
        case crash

        var signal: Int32 { self == .restart ? SIGINT : SIGQUIT }
        var testDescription: String { rawValue }
    }

    /// DESIGN §9: PostgreSQL restarted, or crashed, under load. Requests fail fast with 503,
    /// the pool reconnects, and no acknowledged attestation is lost: every 201 is in the
    /// database afterwards, with its rollups and outbox event, and a retry with the same
    /// `Idempotency-Key` gets the one attestation stored, never a second.
    @Test(arguments: Stop.allCases)
    func aDatabaseStoppedUnderLoadLosesNoAcknowledgedAttestation(_ stop: Stop) async throws {
        let directory = URL(fileURLWithPath: "/tmp/attest-stop-\(UUID().uuidString.prefix(8))")
        let cluster = try EmbeddedPostgres(directory: directory)
        defer {
            try? cluster.stop()
            try? FileManager.default.removeItem(at: directory)
        }
        try cluster.initializeIfNeeded(logger: TestDatabase.testLogger, durable: false)
        // fsync stays off (this is the server's processes stopping, not the machine), but a
        // commit must reach the WAL before it is answered, as with PostgreSQL's defaults.
        let configuration = try FileHandle(forWritingTo: cluster.clusterDirectory.appending(path: "postgresql.conf"))
        try configuration.seekToEnd()
        try configuration.write(contentsOf: Data("synchronous_commit = on\n".utf8))
        try configuration.close()
        try cluster.start(logger: TestDatabase.testLogger)

        let url = cluster.connectionURL(database: "postgres")
        let owner = PostgresClient(
            configuration: PostgresConfiguration(connectionString: url), options: .init(maxConnections: 1), logger: TestDatabase.testLogger)
        _ = try await SchemaMigrator(logger: TestDatabase.testLogger).migrate(owner)
        #expect(try await owner.query("SHOW synchronous_commit")[0].decode("synchronous_commit", as: String.self) == "on")

        // The server's own log (503s are warnings) is kept, not printed; it must hold no 500.
        let capture = LogCapture()
        let logger = capture.logger(level: .warning)
        let pool = PostgresClient(
            configuration: PostgresConfiguration(connectionString: url, role: SchemaMigrator.applicationRole),
            options: .init(maxConnections: 8, leaseTimeout: .seconds(10)), logger: logger)
        let clock = try TestClock("2026-11-20T14:00:00Z")  // 09:00 in New York, on time
        let server = TestServer(
            database: "postgres", pool: pool,
            services: AttestServices(
                database: pool, configuration: ServerConfiguration(), registry: .builtin, kek: TestServer.kek, logger: logger, clock: clock.read))
        let campus = try await server.campus("north")
        _ = try await QuestionnaireStore(client: pool).publish(campus: campus, draft: AttestationTests.draft, actor: "test")
        try await CampusPluginStore(client: pool).enable(campus: campus, kind: .sink, id: "webhook", settings: .object([:]), actor: "test")
        var added: [(user: User, token: String)] = []
        for index in 0..<300 { added.append(try await server.user("m\(index)@example.edu", at: campus)) }
        let members = added.map(\.token)
        // Member 150's insert waits in PostgreSQL until the stop, so a batch is mid-write when
        // it comes and the submissions after it queue in the writer: the unknown outcomes.
        let held = 150
        try await owner.query(
            """
            CREATE FUNCTION hold_for_the_stop() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                IF NEW.user_id = '\(unsafeRaw: added[held].user.id.description)' THEN PERFORM pg_sleep(60); END IF;
                RETURN NEW;
            END $$
            """)
        try await owner.query(
            "CREATE TRIGGER hold_for_the_stop BEFORE INSERT ON attestations FOR EACH ROW EXECUTE FUNCTION hold_for_the_stop()")

        final class Progress: Sendable {
            let next = Atomic<Int>(0)
            private let stopped = Mutex(ContinuousClock.Instant.now)
            var stoppedAt: ContinuousClock.Instant {
                get { stopped.withLock { $0 } }
                set { stopped.withLock { $0 = newValue } }
            }
        }
        let progress = Progress()
        let submitter = Submitter(tokens: members)
        try await server.run(logger: logger) { api in
            // 24 clients go through the members once each. Once member 150's insert is waiting,
            // PostgreSQL is stopped, and it is started again when every member has had its one try.
            let firstTry = try await api.withConnections(24) { clients in
                try await withThrowingTaskGroup(of: [Int: Submitter.Reply].self) { group in
                    for client in clients {
                        group.addTask {
                            var replies: [Int: Submitter.Reply] = [:]
                            while true {
                                let member = progress.next.add(1, ordering: .relaxed).oldValue
                                guard member < members.count else { break }
                                replies[member] = try await submitter.submit(member, on: client)
                            }
                            return replies
                        }
                    }
                    group.addTask {
                        // Waits for the held insert (30 s at most: past that, the checks below fail).
                        for _ in 0..<3_000 {
                            let held = try await owner.query("SELECT count(*) AS n FROM pg_stat_activity WHERE wait_event = 'PgSleep'")
                            if try held[0].decode("n", as: Int.self) > 0 { break }
                            try await Task.sleep(for: .milliseconds(10))
                        }
                        progress.stoppedAt = .now
                        try Self.signalPostmaster(of: cluster, stop.signal)
                        return [:]
                    }
                    return try await group.reduce(into: [Int: Submitter.Reply]()) { $0.merge($1) { a, _ in a } }
                }
            }
            try cluster.start(logger: TestDatabase.testLogger)
            let restarted = PostgresClient(
                configuration: PostgresConfiguration(connectionString: url), options: .init(maxConnections: 1), logger: TestDatabase.testLogger)
            try await restarted.query("DROP TRIGGER hold_for_the_stop ON attestations")

            #expect(firstTry.count == members.count)
            let unavailable = firstTry.values.filter { $0.status == 503 }
            #expect(firstTry.values.allSatisfy { $0.status == 201 || $0.status == 503 }, "\(Set(firstTry.values.map(\.status)))")
            #expect(firstTry.values.filter { $0.status == 201 }.count >= 100)
            // The held member's batch died with the server, unanswered until then, and so did
            // everything queued behind it. Requests sent while the server was down were
            // refused, and quickly, not after a lease or connect timeout.
            #expect(firstTry[held]?.status == 503)
            let stoppedAt = progress.stoppedAt
            let afterwards = firstTry.values.filter { $0.started > stoppedAt }
            #expect(afterwards.count >= 100 && afterwards.allSatisfy { $0.status == 503 })
            #expect(unavailable.allSatisfy { $0.problemType == "/problems/database-unavailable" && $0.retryAfter != nil })
            let slowest = unavailable.map(\.seconds).max() ?? 0
            #expect(slowest < 3, "slowest 503: \(slowest) s")

            // Each refused member retries with its key until answered: the pool reconnects, and
            // a submission that was stored before its answer was lost is replayed, not repeated.
            var final = firstTry.filter { $0.value.status == 201 }.mapValues { $0.id }
            for member in firstTry.keys.sorted() where firstTry[member]?.status != 201 {
                final[member] = try await submitter.retryUntilAnswered(member, on: api)
            }

            // Every 201 ever given names the member's one stored attestation; the rollups and
            // the outbox count each exactly once.
            let stored = try await pool.query(
                "SELECT u.email, a.id::text AS id FROM attestations a JOIN users u ON u.id = a.user_id", campus: campus.id.rawValue
            ).reduce(into: [String: String]()) { $0[try $1.decode("email")] = try $1.decode("id") }
            #expect(stored.count == members.count)
            for (member, id) in final {
                #expect(id != nil && stored["m\(member)@example.edu"] == id?.lowercased(), "member \(member)")
            }
            let counts = try await pool.query(
                """
                SELECT (SELECT sum(submitted) FROM daily_stats) AS submitted,
                       (SELECT sum(count) FROM daily_answer_counts WHERE question_id = 'fever') AS fevers,
                       (SELECT count(*) FROM notification_outbox WHERE event = 'attestation.submitted') AS events,
                       (SELECT count(DISTINCT payload ->> 'attestationId') FROM notification_outbox) AS announced
                """, campus: campus.id.rawValue)[0]
            #expect(try counts.decode("submitted", as: Int.self) == members.count)
            #expect(try counts.decode("fevers", as: Int.self) == (members.count + 2) / 3)  // every third member has a fever
            #expect(try counts.decode("events", as: Int.self) == members.count)
            #expect(try counts.decode("announced", as: Int.self) == members.count)
            let unhandled = capture.lines.filter { $0.contains("unhandled") }
            #expect(unhandled.isEmpty, "\(unhandled)")
            await restarted.shutdown()
        }
        await owner.shutdown()
    }

    /// Each member's one submission, with its own `Idempotency-Key`.
    struct Submitter: Sendable {
        let tokens: [String]

        struct Reply: Sendable {
            var started: ContinuousClock.Instant
            var status: Int
            var id: String?
            var seconds: Double
            var problemType: String?
            var retryAfter: String?
        }

        func submit(_ member: Int, on api: APIClient) async throws -> Reply {
            let started = ContinuousClock.now
            let reply = try await api.send(
                .post, "/v1/campuses/north/attestations", template: AttestationTests.path, token: tokens[member],
                json: AttestationTests.body(member % 3 == 0 ? #"{"fever": true, "cough": false}"# : AttestationTests.healthy),
                headers: [HTTPField.Name("Idempotency-Key")!: "stop-\(member)"])
            let elapsed = ContinuousClock.now - started
            return Reply(
                started: started, status: reply.status, id: reply.json["id"] as? String,
                seconds: Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18,
                problemType: reply.json["type"] as? String, retryAfter: reply.headers[.retryAfter])
        }

        /// Submits again, with the same key, while the answer is 503; the id of the 201.
        func retryUntilAnswered(_ member: Int, on api: APIClient) async throws -> String? {
            var reply = try await submit(member, on: api)
            var attempts = 1
            while reply.status == 503, attempts < 100 {
                try await Task.sleep(for: .milliseconds(100))
                reply = try await submit(member, on: api)
                attempts += 1
            }
            #expect(reply.status == 201, "member \(member) after \(attempts) tries")
            return reply.id
        }
    }

    /// Stops the cluster as `pg_ctl stop` does, by signalling the postmaster (`Stop`), without
    /// waiting for anything but the postmaster to be gone.
    static func signalPostmaster(of cluster: EmbeddedPostgres, _ signal: Int32) throws {
        let pidFile = try String(contentsOf: cluster.clusterDirectory.appending(path: "postmaster.pid"), encoding: .utf8)
        guard let pid = pidFile.split(separator: "\n").first.flatMap({ pid_t($0) }) else {
            throw TestEnvironmentError("no postmaster pid in \(cluster.clusterDirectory.path)/postmaster.pid")
        }
        guard kill(pid, signal) == 0 else { throw TestEnvironmentError("cannot signal the postmaster \(pid): errno \(errno)") }
        for _ in 0..<600 {  // 6 s at most
            if kill(pid, 0) != 0 { return }
            usleep(10_000)
        }
    }
}
