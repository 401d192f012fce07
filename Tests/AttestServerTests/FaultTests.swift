import AttestCLI
import AttestPlugins
import AttestPluginsTesting
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

@testable import AttestAPI
@testable import AttestServer
@testable import AttestWeb

@Suite("Faults")
struct FaultTests {
    /// How PostgreSQL is stopped: as `pg_ctl stop` does, a signal to the postmaster.
    enum Stop: String, CaseIterable, Sendable, CustomTestStringConvertible {
        /// SIGINT (`-m fast`): sessions are ended with an error (57P01), then a checkpoint.
        case restart
        /// SIGQUIT (`-m immediate`): every process exits at once, no checkpoint; the next
        /// start replays the WAL, as after a crash.
        case crash
        /// SIGKILL to the postmaster and every one of its processes: nothing of PostgreSQL
        /// gets to say anything; the next start replays the WAL.
        case kill

        var signal: Int32 {
            switch self {
            case .restart: SIGINT
            case .crash: SIGQUIT
            case .kill: SIGKILL
            }
        }
        var testDescription: String { rawValue }
    }

    /// DESIGN §9: PostgreSQL restarted, or crashed, under load. Requests fail fast with 503,
    /// the pool reconnects, and no acknowledged attestation is lost: every 201 is in the
    /// database afterwards, with its rollups and outbox event, and a retry with the same
    /// `Idempotency-Key` gets the one attestation stored, never a second.
    @Test(arguments: Stop.allCases)
    func aDatabaseStoppedUnderLoadLosesNoAcknowledgedAttestation(_ stop: Stop) async throws {
        let rig = try await Rig.make(members: 300)
        defer { rig.remove() }
        let (cluster, owner, pool, server, campus, capture, logger, url) =
            (rig.cluster, rig.owner, rig.pool, rig.server, rig.campus, rig.capture, rig.logger, rig.url)
        let added = rig.added
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
                        try await offThePool { try Self.signalPostmaster(of: cluster, stop.signal) }
                        return [:]
                    }
                    return try await group.reduce(into: [Int: Submitter.Reply]()) { $0.merge($1) { a, _ in a } }
                }
            }
            try await offThePool { try cluster.start(logger: TestDatabase.testLogger) }
            let restartedAt = ContinuousClock.now
            let loggedBeforeRestart = capture.lines.count
            let restarted = PostgresClient(
                configuration: PostgresConfiguration(connectionString: url), options: .init(maxConnections: 1),
                logger: TestDatabase.testLogger)
            try await restarted.query("DROP TRIGGER hold_for_the_stop ON attestations")

            #expect(firstTry.count == members.count)
            let unavailable = firstTry.values.filter { $0.status == 503 }
            let stored = firstTry.values.filter { $0.status == 201 }.count
            #expect(firstTry.values.allSatisfy { $0.status == 201 || $0.status == 503 }, "\(Set(firstTry.values.map(\.status)))")
            #expect(stored >= 100, "first tries answered 201: \(stored)")
            // The held member's batch died with the server, unanswered until then, and so did
            // everything queued behind it. Requests sent while the server was down were
            // refused, and quickly, not after a lease or connect timeout.
            #expect(firstTry[held]?.status == 503, "the held member's answer: \(firstTry[held].map { "\($0.status)" } ?? "none")")
            let stoppedAt = progress.stoppedAt
            let afterwards = firstTry.values.filter { $0.started > stoppedAt }
            #expect(
                afterwards.count >= 100 && afterwards.allSatisfy { $0.status == 503 },
                "begun after the stop: \(afterwards.count), answered \(Set(afterwards.map(\.status)))")
            let problems = Set(unavailable.map { "\($0.problemType ?? "no type") Retry-After \($0.retryAfter ?? "none")" })
            #expect(unavailable.allSatisfy { $0.problemType == "/problems/database-unavailable" && $0.retryAfter != nil }, "\(problems)")
            // Counted from the stop (or the request, if later): a request waiting behind the
            // held insert had been waiting since before, which says nothing of failing fast.
            let slowest =
                unavailable.map { reply -> Double in
                    let waited = reply.finished - max(reply.started, stoppedAt)
                    return Double(waited.components.seconds) + Double(waited.components.attoseconds) / 1e18
                }.max() ?? 0
            #expect(slowest < 3, "slowest 503, from the stop: \(slowest) s")

            // Each refused member retries with its key until answered: the pool reconnects, and
            // a submission that was stored before its answer was lost is replayed, not repeated.
            var final = firstTry.filter { $0.value.status == 201 }.mapValues { $0.id }
            var recovered: Duration?
            for member in firstTry.keys.sorted() where firstTry[member]?.status != 201 {
                final[member] = try await submitter.retryUntilAnswered(member, on: api)
                if recovered == nil { recovered = ContinuousClock.now - restartedAt }
            }

            // Every 201 ever given names the member's one stored attestation; the rollups and
            // the outbox count each exactly once.
            let figures = try await rig.verify(acknowledged: final)
            #expect(figures.stored == members.count)
            #expect(figures.duplicates == 0)
            let fevers = try await pool.query(
                "SELECT sum(count) AS n FROM daily_answer_counts WHERE question_id = 'fever' AND answer = 'true'",
                campus: campus.id.rawValue)
            #expect(try fevers[0].decode("n", as: Int.self) == (members.count + 2) / 3)  // every third member has a fever
            let how =
                switch stop {
                case .restart: "pg_ctl stop -m fast"
                case .crash: "pg_ctl stop -m immediate"
                case .kill: "SIGKILL to every process"
                }
            let unhandled = capture.lines.filter { $0.contains("unhandled") }
            #expect(unhandled.isEmpty, "\(unhandled)")
            // What the server said of the 503s after the restart, should there be any: the
            // figures above and this are on the one line a CI log always shows.
            let afterRestart = capture.lines.dropFirst(loggedBeforeRestart).first.map { " (\($0.prefix(300)))" } ?? ""
            let detail =
                "first tries 201 \(stored), 503 \(unavailable.count) (\(afterwards.count) begun after the stop), "
                + "the held member's \(firstTry[held].map { "\($0.status)" } ?? "none"), the slowest 503 "
                + String(format: "%.2f s", slowest) + " after the stop, problems \(problems.sorted()), "
                + "logged after the restart \(capture.lines.count - loggedBeforeRestart)\(afterRestart), unhandled \(unhandled.count)"
            FaultFigures.report(
                "PostgreSQL stopped under load (\(how)); started again once every member had tried (recovery: from its start to the first 201)",
                sent: firstTry.count + submitter.retries.load(ordering: .relaxed), acknowledged: final.count,
                found: final.count - figures.lost.count, lost: figures.lost.count, duplicates: figures.duplicates,
                unavailable: unavailable.count + submitter.unavailableRetries.load(ordering: .relaxed), recovery: recovered, detail: detail)
            await restarted.shutdown()
        }
        await owner.shutdown()
    }

    /// Issue 33, fault 3: PostgreSQL restarted with `pg_ctl restart -m fast` five times within
    /// a minute while members keep submitting, each retrying a 503 with its key. Every
    /// acknowledged attestation is stored once, with its rollups and event.
    @Test func fiveFastRestartsInAMinuteLoseNothing() async throws {
        let rig = try await Rig.make(members: 1_200)
        defer { rig.remove() }
        let members = rig.added.map(\.token)
        final class Shared: Sendable {
            let next = Atomic<Int>(0)
            let done = Atomic<Bool>(false)
            let acknowledged = Mutex<[(member: Int, id: String?, at: ContinuousClock.Instant)]>([])
            let restarts = Mutex<[ContinuousClock.Instant]>([])
        }
        let shared = Shared()
        let submitter = Submitter(tokens: members)
        try await rig.server.run(logger: rig.logger) { api in
            try await api.withConnections(8) { clients in
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for client in clients {
                        group.addTask {
                            // About 30 new members a second in all, each until answered.
                            while !shared.done.load(ordering: .relaxed) {
                                let member = shared.next.add(1, ordering: .relaxed).oldValue
                                guard member < members.count else { break }
                                let id = try await submitter.retryUntilAnswered(member, on: client)
                                shared.acknowledged.withLock { $0.append((member, id, .now)) }
                                try await Task.sleep(for: .milliseconds(250))
                            }
                        }
                    }
                    group.addTask {
                        for _ in 0..<5 {
                            try await Task.sleep(for: .seconds(5))
                            try await offThePool {
                                try Self.signalPostmaster(of: rig.cluster, SIGINT)
                                try rig.cluster.start(logger: TestDatabase.testLogger)
                            }
                            shared.restarts.withLock { $0.append(.now) }
                        }
                        try await Task.sleep(for: .seconds(3))
                        shared.done.store(true, ordering: .relaxed)
                    }
                    try await group.waitForAll()
                }
            }
            let acknowledged = shared.acknowledged.withLock { $0 }
            let restartedAt = shared.restarts.withLock { $0 }
            #expect(restartedAt.count == 5)
            if let first = restartedAt.first, let last = restartedAt.last { #expect(last - first < .seconds(60)) }
            #expect(acknowledged.count >= 200, "only \(acknowledged.count) members were answered")
            #expect(acknowledged.allSatisfy { $0.id != nil })
            let figures = try await rig.verify(acknowledged: Dictionary(acknowledged.map { ($0.member, $0.id) }) { a, _ in a })
            #expect(figures.stored == acknowledged.count && figures.duplicates == 0)
            // Recovery: after each restart, how long until a submission was answered 201 again.
            let recoveries = restartedAt.compactMap { restart in acknowledged.map(\.at).filter { $0 > restart }.min().map { $0 - restart } }
            #expect(recoveries.count == 5)
            let unhandled = rig.capture.lines.filter { $0.contains("unhandled") }
            #expect(unhandled.isEmpty, "\(unhandled)")
            FaultFigures.report(
                "PostgreSQL restarted (pg_ctl restart -m fast) 5 times in \(restartedAt.count == 5 ? "\((restartedAt[4] - restartedAt[0]).components.seconds) s" : "?") under load",
                sent: submitter.retries.load(ordering: .relaxed), acknowledged: acknowledged.count,
                found: acknowledged.count - figures.lost.count,
                lost: figures.lost.count, duplicates: figures.duplicates,
                unavailable: submitter.unavailableRetries.load(ordering: .relaxed),
                recovery: recoveries.max())
        }
        await rig.owner.shutdown()
    }

    /// A cluster of the test's own (the faults stop it), migrated, with a campus, its webhook
    /// sink enabled, `members` members and a server on the application role.
    struct Rig: Sendable {
        let directory: URL
        let cluster: EmbeddedPostgres
        let url: String
        let owner: PostgresClient
        let pool: PostgresClient
        let server: TestServer
        let campus: Campus
        let added: [(user: User, token: String)]
        /// The server's own log (503s are warnings) is kept, not printed; it must hold no 500.
        let capture: LogCapture
        let logger: Logger

        static func make(members: Int) async throws -> Rig {
            let directory = URL(fileURLWithPath: "/tmp/attest-stop-\(UUID().uuidString.prefix(8))")
            let cluster = try EmbeddedPostgres(directory: directory)
            try await offThePool { try cluster.initializeIfNeeded(logger: TestDatabase.testLogger, durable: false) }
            // fsync stays off (this is the server's processes stopping, not the machine), but a
            // commit must reach the WAL before it is answered, as with PostgreSQL's defaults.
            let configuration = try FileHandle(forWritingTo: cluster.clusterDirectory.appending(path: "postgresql.conf"))
            try configuration.seekToEnd()
            try configuration.write(contentsOf: Data("synchronous_commit = on\n".utf8))
            try configuration.close()
            try await offThePool { try cluster.start(logger: TestDatabase.testLogger) }

            let url = cluster.connectionURL(database: "postgres")
            let owner = PostgresClient(
                configuration: PostgresConfiguration(connectionString: url), options: .init(maxConnections: 1),
                logger: TestDatabase.testLogger)
            _ = try await SchemaMigrator(logger: TestDatabase.testLogger).migrate(owner)
            #expect(try await owner.query("SHOW synchronous_commit")[0].decode("synchronous_commit", as: String.self) == "on")

            let capture = LogCapture()
            let logger = capture.logger(level: .warning)
            let pool = PostgresClient(
                configuration: PostgresConfiguration(connectionString: url, role: SchemaMigrator.applicationRole),
                options: .init(maxConnections: 8, leaseTimeout: .seconds(10)), logger: logger)
            let clock = try TestClock("2026-11-20T14:00:00Z")  // 09:00 in New York, on time
            let server = TestServer(
                database: "postgres", pool: pool,
                services: AttestServices(
                    database: pool, configuration: ServerConfiguration(), registry: .builtin, kek: TestServer.kek, logger: logger,
                    clock: clock.read))
            let campus = try await server.campus("north")
            _ = try await QuestionnaireStore(client: pool).publish(campus: campus, draft: AttestationTests.draft, actor: "test")
            try await CampusPluginStore(client: pool).enable(
                campus: campus, kind: .sink, id: "webhook", settings: .object([:]), actor: "test")
            var added: [(user: User, token: String)] = []
            for index in 0..<members { added.append(try await server.user("m\(index)@example.edu", at: campus)) }
            return Rig(
                directory: directory, cluster: cluster, url: url, owner: owner, pool: pool, server: server, campus: campus, added: added,
                capture: capture, logger: logger)
        }

        func remove() {
            try? cluster.stop()
            try? FileManager.default.removeItem(at: directory)
        }

        /// Every acknowledged attestation stored as acknowledged, each member's at most once, and
        /// the rollups and outbox counting exactly what is stored (a recount). Returns the
        /// figures: (stored, lost members, duplicate rows).
        func verify(acknowledged: [Int: String?]) async throws -> (stored: Int, lost: [Int], duplicates: Int) {
            let rows = try await pool.query(
                "SELECT u.email, a.id::text AS id FROM attestations a JOIN users u ON u.id = a.user_id", campus: campus.id.rawValue)
            var stored: [String: String] = [:]
            for row in rows { stored[try row.decode("email")] = try row.decode("id") }
            let lost = acknowledged.filter { member, id in id == nil || stored["m\(member)@example.edu"] != id?.lowercased() }.keys.sorted()
            #expect(lost.isEmpty, "acknowledged but not stored as acknowledged: members \(lost)")
            let counts = try await pool.query(
                """
                SELECT (SELECT count(*) FROM attestations) AS attestations,
                       (SELECT coalesce(sum(submitted), 0) FROM daily_stats) AS submitted,
                       (SELECT coalesce(sum(green), 0) + coalesce(sum(yellow), 0) + coalesce(sum(red), 0) FROM daily_stats) AS colored,
                       (SELECT count(*) FROM attestations WHERE color IN ('green', 'yellow', 'red')) AS colored_rows,
                       (SELECT coalesce(sum(count), 0) FROM daily_answer_counts WHERE question_id = 'fever' AND answer = 'true') AS fevers,
                       (SELECT count(*) FROM attestations WHERE answers ->> 'fever' = 'true') AS fever_rows,
                       (SELECT count(*) FROM notification_outbox WHERE event = 'attestation.submitted') AS events,
                       (SELECT count(DISTINCT payload ->> 'attestationId') FROM notification_outbox
                        WHERE event = 'attestation.submitted') AS announced
                """, campus: campus.id.rawValue)[0]
            let attestations = try counts.decode("attestations", as: Int.self)
            #expect(try counts.decode("submitted", as: Int.self) == attestations, "daily_stats.submitted against a recount")
            #expect(try counts.decode("colored", as: Int.self) == counts.decode("colored_rows", as: Int.self), "colours against a recount")
            #expect(
                try counts.decode("fevers", as: Int.self) == counts.decode("fever_rows", as: Int.self), "answer counts against a recount")
            #expect(try counts.decode("events", as: Int.self) == attestations, "one submitted event per attestation")
            #expect(try counts.decode("announced", as: Int.self) == attestations, "no attestation announced twice")
            return (stored.count, lost, attestations - stored.count)
        }
    }

    /// Each member's one submission, with its own `Idempotency-Key`.
    final class Submitter: Sendable {
        let tokens: [String]
        /// Submissions sent again after a 503, and the 503s they got.
        let retries = Atomic<Int>(0)
        let unavailableRetries = Atomic<Int>(0)

        init(tokens: [String]) { self.tokens = tokens }

        struct Reply: Sendable {
            var started: ContinuousClock.Instant
            var finished: ContinuousClock.Instant
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
            let finished = ContinuousClock.now
            let elapsed = finished - started
            return Reply(
                started: started, finished: finished, status: reply.status, id: reply.json["id"] as? String,
                seconds: Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18,
                problemType: reply.json["type"] as? String, retryAfter: reply.headers[.retryAfter])
        }

        /// Submits again, with the same key, while the answer is 503; the id of the 201.
        func retryUntilAnswered(_ member: Int, on api: APIClient) async throws -> String? {
            var reply = try await submit(member, on: api)
            var attempts = 1
            retries.add(1, ordering: .relaxed)
            while reply.status == 503, attempts < 100 {
                unavailableRetries.add(1, ordering: .relaxed)
                try await Task.sleep(for: .milliseconds(100))
                reply = try await submit(member, on: api)
                retries.add(1, ordering: .relaxed)
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
        // SIGKILL reaches the backends too: a postmaster killed alone leaves them running,
        // holding the shared memory the next start needs.
        let children = signal == SIGKILL ? Self.children(of: pid) : []
        guard kill(pid, signal) == 0 else { throw TestEnvironmentError("cannot signal the postmaster \(pid): errno \(errno)") }
        for child in children { kill(child, SIGKILL) }
        for _ in 0..<600 {  // 6 s at most
            if kill(pid, 0) != 0, children.allSatisfy({ kill($0, 0) != 0 }) { return }
            usleep(10_000)
        }
    }

    /// The processes whose parent is `parent` (from /proc).
    static func children(of parent: pid_t) -> [pid_t] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { entry -> pid_t? in
            guard let pid = pid_t(entry),
                let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { return nil }
            // "pid (name) state ppid …": the name may hold spaces and parentheses.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            return fields.count > 1 && pid_t(fields[1]) == parent ? pid : nil
        }
    }
}
