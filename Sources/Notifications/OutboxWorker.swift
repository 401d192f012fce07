import AttestPlugins
import AttestPostgres
import Foundation
import Logging
import Metrics
import ServiceLifecycle
import Synchronization
import Tenancy
import Tracing

/// Delivers the outbox: every server runs one. Workers claim due rows with
/// `FOR UPDATE SKIP LOCKED` and a lease (the row's next attempt moves past the delivery), so
/// two workers never hold the same row; a worker that dies mid-delivery leaves a lease that
/// runs out, and another worker tries again. Delivery is therefore at least once and, with
/// receivers up, once.
///
/// After each attempt: delivered, or tried again after an exponential backoff with jitter,
/// or dead-lettered (the sink rejected it, or it is older than `maxAge` counted from its
/// delivery window's start).
public final class OutboxWorker: Service, Sendable {
    public struct Configuration: Sendable {
        /// The longest an idle worker sleeps before it looks again (one read across campuses):
        /// what other servers' new events may wait, as this server's own wake the worker at
        /// once (`OutboxSignal`). Default 1 s.
        public var pollInterval: Duration = .seconds(1)
        /// Rows claimed per campus per round. Default 32.
        public var batchSize = 32
        /// A campus's claimed batches under way at once: the next is claimed and its messages
        /// rendered while the last one's are still being sent and recorded, so a channel's
        /// connections do not wait on the database between batches. Default 2.
        public var batchesInFlight = 2
        /// How long a claimed row is reserved for this worker's attempt. Default 2 min. A batch
        /// renews it every half lease while any of its rows is still being sent or waits to be
        /// recorded, so a slow receiver's batch is never claimed again meanwhile.
        public var lease: Duration = .seconds(120)
        /// Backoff after the first failure, doubling each time up to `maxDelay`. Default 2 s, 10 min.
        public var baseDelay: Duration = .seconds(2)
        public var maxDelay: Duration = .seconds(600)
        /// Past this age an event that still fails is dead-lettered. Default 24 h.
        public var maxAge: Duration = .seconds(86_400)
        /// Campuses whose reminders one round writes at most (the others in the next rounds).
        public var remindersPerRound = 100

        public init() {}
    }

    let client: PostgresClient
    let registry: PluginRegistry
    let context: PluginContext
    let configuration: Configuration
    let logger: Logger
    let clock: @Sendable () -> Date
    /// Rung by this server's writers when they commit events, and by finished deliveries.
    public let signal: OutboxSignal
    let reminders: Reminders
    /// `attest_notifications_total{outcome}`: delivery attempts that delivered, will be
    /// retried, or dead-lettered (no label names a campus or a recipient).
    private let delivered, retried, dead: Counter
    /// Campuses' batches under way: a round passes over a campus with `batchesInFlight`.
    private let busy = Mutex<[CampusID: Int]>([:])
    /// Where a sink's settings (the sealed ones opened with the key-encryption key) are read.
    let plugins: CampusPluginStore
    /// Built sinks by campus and id, kept 5 s (settings changes reach workers within that).
    private let sinks = ExpiringCache<String, (any NotificationSink)?>(ttl: .seconds(5))
    /// The channels that reach members (`email`, `terminal`), when the server can build them.
    let memberChannels: MemberChannelSinks?

    public init(
        client: PostgresClient, registry: PluginRegistry, http: any PluginHTTPClient, configuration: Configuration = .init(),
        logger: Logger, clock: @escaping @Sendable () -> Date = { Date() }, metrics: any MetricsFactory = MetricsSystem.factory,
        kek: KeyEncryptionKey? = nil, signal: OutboxSignal = OutboxSignal(), reminderAudience: ReminderAudience,
        reach: MemberReach? = nil
    ) {
        self.memberChannels = reach.map { MemberChannelSinks(reach: $0, client: client, kek: kek, clock: clock) }
        self.reminders = Reminders(client: client, audience: reminderAudience)
        self.plugins = CampusPluginStore(client: client, kek: kek)
        func outcome(_ name: String) -> Counter {
            Counter(label: "attest_notifications_total", dimensions: [("outcome", name)], factory: metrics)
        }
        self.delivered = outcome("delivered")
        self.retried = outcome("retried")
        self.dead = outcome("dead")
        self.clock = clock
        self.client = client
        self.registry = registry
        self.configuration = configuration
        self.logger = logger
        self.signal = signal
        var pluginLogger = logger
        pluginLogger[metadataKey: "component"] = "sink"
        self.context = PluginContext(http: http, logger: pluginLogger)
    }

    /// Rounds until the server stops. After a round that delivered, the next at once; after an
    /// idle one, a sleep until the earliest due time it saw (a retry's, a campus's reminders)
    /// or `pollInterval`, whichever is sooner, cut short by the signal.
    public func run() async throws {
        await withDiscardingTaskGroup { deliveries in
            while !Task.isShuttingDownGracefully && !Task.isCancelled {
                var pause = configuration.pollInterval
                do {
                    let outcome = try await round(&deliveries)
                    if outcome.attempts > 0 || outcome.moreDue { continue }
                    if let wait = outcome.wait { pause = min(pause, wait) }
                } catch {
                    // Cancelled: the server is stopping (or could not start), not a failed round.
                    if Task.isCancelled { break }
                    logger.warning("outbox round failed", metadata: ["error": "\(error)"])
                }
                let sleep = pause
                try? await cancelWhenGracefulShutdown { await self.signal.wait(upTo: sleep) }
            }
        }
        await memberChannels?.smtp.shutdown()
    }

    /// One round, waiting for its deliveries: writes reminders that have come due, claims due
    /// rows, delivers them, records the outcomes. Returns how many delivery attempts it made.
    @discardableResult
    public func runOnce() async throws -> Int {
        try await withThrowingDiscardingTaskGroup { deliveries in try await round(&deliveries).attempts }
    }

    struct RoundOutcome {
        var attempts = 0
        /// Until the earliest due time seen that has not come yet.
        var wait: Duration?
        /// More campuses' reminders may be due than one round writes: the next round at once.
        var moreDue = false
    }

    /// Asks once, across campuses, which have due outbox rows or reminders
    /// (`attest_outbox_due`, `attest_schedule_due`): an idle server's round is that one read,
    /// whatever the number of campuses. Then writes the due reminders, claims the due rows of
    /// each campus and starts their deliveries in `deliveries` without waiting: a campus whose
    /// receiver is slow or hangs delays no other campus. A campus with `batchesInFlight`
    /// batches still under way is passed over until one ends.
    private func round<Group: TaskGroupAdding>(_ deliveries: inout Group) async throws -> RoundOutcome {
        let now = clock()
        let rows = try await client.query(
            """
            SELECT 'outbox' AS work, campus_id, due_at <= now() AS due, extract(epoch FROM due_at - now())::float8 AS wait
            FROM attest_outbox_due()
            UNION ALL
            SELECT 'reminder', campus_id, due_at <= \(now), extract(epoch FROM due_at - \(now))::float8
            FROM (\(CampusSchedule.select(.reminders, dueBy: now, atMost: configuration.remindersPerRound))) r
            """)
        var outcome = RoundOutcome()
        var outbox: [CampusID] = [], reminders: [CampusID] = []
        for row in rows {
            let campus = CampusID(try row.decode("campus_id")), isOutbox = try row.decode("work", as: String.self) == "outbox"
            if try row.decode("due", as: Bool.self) {
                if isOutbox { outbox.append(campus) } else { reminders.append(campus) }
            } else {
                let seconds = try row.decode("wait", as: Double.self)
                let wait = Duration.milliseconds(seconds.isFinite ? Int64(min(max(seconds, 0.01), 86_400) * 1_000) : 1_000)
                outcome.wait = min(outcome.wait ?? wait, wait)
            }
        }
        if !reminders.isEmpty {
            outcome.moreDue = reminders.count >= configuration.remindersPerRound
            try await remind(reminders, at: now)
            outbox = try await dueOutbox()  // the reminders just written are due now
        }
        for campus in outbox where startBatch(campus) {
            let claimed: [Claimed]
            do { claimed = try await claim(campus: campus) } catch {
                endBatch(campus)
                throw error
            }
            guard !claimed.isEmpty else {
                endBatch(campus)
                continue
            }
            outcome.attempts += claimed.count
            deliveries.add {
                // A full batch is followed by the campus's next, claimed here: a day's reminders
                // are not a round's look across campuses each (with the outbox's index full of
                // the rows just delivered, a third of PostgreSQL's work a reminder).
                var batch = claimed
                while true {
                    // The delivered ones are recorded together, in one statement when the batch ends.
                    let delivered = await self.deliverBatch(batch, campus: campus)
                    await self.recordDelivered(delivered, campus: campus)
                    guard batch.count >= self.configuration.batchSize, !Task.isCancelled, !Task.isShuttingDownGracefully else { break }
                    do { batch = try await self.claim(campus: campus) } catch {
                        self.logger.warning("cannot claim the next batch", metadata: ["error": "\(error)"])
                        break
                    }
                    if batch.isEmpty { break }
                }
                self.endBatch(campus)
                // What else the campus has due is claimed now, not at the next poll.
                self.signal.wake()
            }
        }
        return outcome
    }

    /// Counts a batch of the campus's as under way; false when it has `batchesInFlight`.
    private func startBatch(_ campus: CampusID) -> Bool {
        busy.withLock { busy in
            let under = busy[campus, default: 0]
            guard under < max(configuration.batchesInFlight, 1) else { return false }
            busy[campus] = under + 1
            return true
        }
    }

    private func endBatch(_ campus: CampusID) {
        busy.withLock { busy in
            let left = busy[campus, default: 1] - 1
            busy[campus] = left > 0 ? left : nil
        }
    }

    private func dueOutbox() async throws -> [CampusID] {
        try await client.query("SELECT campus_id FROM attest_outbox_due() WHERE due_at <= now()").map {
            CampusID(try $0.decode("campus_id"))
        }
    }

    /// Writes the reminders each due campus's members are due up to now (claimed per campus,
    /// day and minute, so once however many servers do this) and moves its due time on to the
    /// next minute a member (or the campus) chose. A campus that fails is looked at again in a
    /// minute.
    private func remind(_ campuses: [CampusID], at now: Date) async throws {
        let store = CampusStore(client: client), schedule = CampusSchedule(client: client)
        for id in campuses {
            guard let campus = try await store.find(id: id) else { continue }
            var next = now.addingTimeInterval(60)
            do {
                if let count = try await reminders.remind(campus, at: now), count > 0 {
                    logger.info("reminders written", metadata: ["campus": "\(campus.slug)", "members": "\(count)"])
                }
                next = try await reminders.nextDue(campus, after: now)
            } catch {
                if Task.isCancelled { throw error }
                logger.warning(
                    "cannot write reminders; trying again in a minute", metadata: ["campus": "\(campus.slug)", "error": "\(error)"])
                next = now.addingTimeInterval(60)
            }
            try await schedule.schedule(.reminders, campus: id, at: next)
        }
    }

    struct Claimed: Sendable {
        var id: UUID
        var sink: String
        var payload: String
        var attempts: Int
        var windowStart: Date
        /// The trace of what caused the event (`OutboxTrace`), when it was traced.
        var traceParent: String?
        /// Its `next_attempt_at` as the claim set it (`leaseMicros`): until then it is this worker's.
        var leaseMicros: Int64

        struct Key: Hashable, Sendable {
            var id: UUID
            var sink: String
        }

        var key: Key { Key(id: id, sink: sink) }
    }

    /// Attempts a claimed batch's events at once and answers those delivered, for the caller to
    /// record. Meanwhile the batch's lease is renewed every half lease for the rows still being
    /// sent and those delivered but not yet recorded: a batch can outlive its lease (two
    /// batches of 32 messages queued for four connections to a relay that takes 7.5 s a
    /// message), and another server would claim its rows again and send them twice.
    private func deliverBatch(_ batch: [Claimed], campus: CampusID) async -> [Claimed] {
        let held = HeldLeases(batch)
        return await withTaskGroup(of: Void.self) { renewal in
            renewal.addTask { await self.renewLeases(held, campus: campus) }
            let delivered = await withTaskGroup(of: Claimed?.self) { group in
                for entry in batch {
                    group.addTask {
                        let delivered = await self.attempt(entry, campus: campus)
                        // An outcome other than delivered is recorded already, with its own next attempt.
                        if !delivered { held.release(entry.key) }
                        return delivered ? entry : nil
                    }
                }
                var delivered: [Claimed] = []
                for await entry in group { if let entry { delivered.append(entry) } }
                return delivered
            }
            renewal.cancelAll()
            return delivered
        }
    }

    /// Every half lease until cancelled: the rows in `held` reserved for another lease, those
    /// still reserved as this worker left them (the same `next_attempt_at`, to the
    /// microsecond). A row another worker claimed after the lease ran out, or whose attempt
    /// recorded a retry meanwhile, keeps its own time.
    private func renewLeases(_ held: HeldLeases, campus: CampusID) async {
        while true {
            do { try await Task.sleep(for: max(configuration.lease / 2, .milliseconds(50))) } catch { return }
            let leases = held.current
            guard !leases.isEmpty else { continue }
            do {
                let rows = try await client.query(
                    """
                    UPDATE notification_outbox o
                    SET next_attempt_at = now() + make_interval(secs => \(Self.seconds(configuration.lease)))
                    FROM unnest(\(leases.map { $0.key.id }), \(leases.map { $0.key.sink }), \(leases.map { $0.lease })) AS d(id, sink_id, lease_us)
                    WHERE o.campus_id = \(campus) AND o.id = d.id AND o.sink_id = d.sink_id
                      AND o.delivered_at IS NULL AND o.dead_at IS NULL
                      AND \(Self.leaseMicros) = d.lease_us
                    RETURNING o.id, o.sink_id, \(Self.leaseMicros) AS lease_us
                    """, campus: campus.rawValue)
                let renewed = try rows.map { row in
                    (Claimed.Key(id: try row.decode("id"), sink: try row.decode("sink_id")), try row.decode("lease_us", as: Int64.self))
                }
                held.renewed(renewed)
            } catch {
                if Task.isCancelled { return }
                logger.warning("cannot renew a batch's lease", metadata: ["events": "\(leases.count)", "error": "\(error)"])
            }
        }
    }

    /// A reserved row's `next_attempt_at` as whole microseconds since 1970: the lease as the
    /// worker compares it, exactly (`extract` answers `numeric`).
    private static let leaseMicros = SQL(unsafeSQL: "(extract(epoch FROM o.next_attempt_at) * 1000000)::int8")

    private func claim(campus: CampusID) async throws -> [Claimed] {
        let rows = try await client.query(
            """
            WITH due AS (
                SELECT id, sink_id FROM notification_outbox
                WHERE campus_id = \(campus) AND delivered_at IS NULL AND dead_at IS NULL AND next_attempt_at <= now()
                ORDER BY next_attempt_at
                LIMIT \(configuration.batchSize)
                FOR UPDATE SKIP LOCKED
            )
            UPDATE notification_outbox o
            SET attempts = o.attempts + 1, next_attempt_at = now() + make_interval(secs => \(Self.seconds(configuration.lease)))
            FROM due
            WHERE o.campus_id = \(campus) AND o.id = due.id AND o.sink_id = due.sink_id
            RETURNING o.id, o.sink_id, o.payload::text AS payload, o.attempts, o.window_start, o.trace_parent,
                \(Self.leaseMicros) AS lease_us
            """, campus: campus.rawValue)
        return try rows.map { row in
            Claimed(
                id: try row.decode("id"), sink: try row.decode("sink_id"), payload: try row.decode("payload"),
                attempts: try row.decode("attempts"), windowStart: try row.decode("window_start"),
                traceParent: try row.decode("trace_parent"), leaseMicros: try row.decode("lease_us"))
        }
    }

    /// One delivery attempt, a span that continues the trace of what caused the event (a
    /// submission's request): the sink's outbound call is its child and carries it on. True
    /// when the event was delivered, for the caller to record with the rest of its batch; any
    /// other outcome is recorded here.
    private func attempt(_ entry: Claimed, campus: CampusID) async -> Bool {
        guard OutboxTrace.isOn else { return await deliver(entry, campus: campus, span: nil) }
        return await withSpan("outbox.deliver", context: OutboxTrace.context(traceParent: entry.traceParent), ofKind: .consumer) { span in
            if span.isRecording {
                span.updateAttributes { attributes in
                    attributes["attest.sink"] = entry.sink
                    attributes["attest.delivery.attempt"] = entry.attempts
                }
            }
            return await deliver(entry, campus: campus, span: span)
        }
    }

    private func deliver(_ entry: Claimed, campus: CampusID, span: (any Span)?) async -> Bool {
        let result: DeliveryResult
        do {
            let payload = Data(entry.payload.utf8)
            let notification = try JSONDecoder().decode(AttestNotification.self, from: payload)
            if let sink = try await sink(entry.sink, campus: campus) {
                result = await sink.deliver(notification, payload: payload, context: context)
            } else {
                result = .reject("the sink \(entry.sink) is no longer enabled at this campus")
            }
        } catch {
            result = .retry("cannot deliver yet: \(error)")
        }
        if case .delivered = result { return true }
        span?.setStatus(.init(code: .error))
        do {
            try await record(result, for: entry, campus: campus)
        } catch {
            // The lease runs out and the event is tried again: at least once.
            logger.warning("cannot record a delivery outcome", metadata: ["event": "\(entry.id)", "error": "\(error)"])
        }
        return false
    }

    /// Records a batch's delivered events in one statement (a reminder's own `UPDATE` was a
    /// fifth of the server's work a message).
    private func recordDelivered(_ entries: [Claimed], campus: CampusID) async {
        guard !entries.isEmpty else { return }
        do {
            try await client.query(
                """
                UPDATE notification_outbox o SET delivered_at = now(), last_error = NULL
                FROM unnest(\(entries.map(\.id)), \(entries.map(\.sink))) AS d(id, sink_id)
                WHERE o.campus_id = \(campus) AND o.id = d.id AND o.sink_id = d.sink_id
                """, campus: campus.rawValue)
            delivered.increment(by: entries.count)
        } catch {
            // The lease runs out and the events are tried again: at least once.
            logger.warning("cannot record delivered events", metadata: ["events": "\(entries.count)", "error": "\(error)"])
        }
    }

    private func record(_ result: DeliveryResult, for entry: Claimed, campus: CampusID) async throws {
        let key: SQL = "campus_id = \(campus) AND id = \(entry.id) AND sink_id = \(entry.sink)"
        switch result {
        case .delivered:
            await recordDelivered([entry], campus: campus)
        case .reject(let reason):
            logger.warning(
                "notification dead-lettered", metadata: ["event": "\(entry.id)", "sink": "\(entry.sink)", "reason": "\(reason)"])
            try await client.query(
                "UPDATE notification_outbox SET dead_at = now(), last_error = \(reason) WHERE \(key)", campus: campus.rawValue)
            dead.increment()
        case .retry(let reason):
            let age = Date().timeIntervalSince(entry.windowStart)
            if age >= Self.seconds(configuration.maxAge) {
                logger.warning(
                    "notification dead-lettered after retrying",
                    metadata: ["event": "\(entry.id)", "sink": "\(entry.sink)", "reason": "\(reason)"])
                try await client.query(
                    "UPDATE notification_outbox SET dead_at = now(), last_error = \(reason) WHERE \(key)", campus: campus.rawValue)
                dead.increment()
                return
            }
            let delay = backoff(afterAttempt: entry.attempts)
            logger.info(
                "notification will be retried",
                metadata: ["event": "\(entry.id)", "sink": "\(entry.sink)", "in": "\(delay)s", "reason": "\(reason)"])
            try await client.query(
                """
                UPDATE notification_outbox SET next_attempt_at = now() + make_interval(secs => \(delay)), last_error = \(reason)
                WHERE \(key)
                """, campus: campus.rawValue)
            retried.increment()
        }
    }

    /// base · 2^(attempt-1), at most maxDelay, times a random factor in [0.5, 1] so that
    /// receivers coming back are not hit by every retry at once.
    func backoff(afterAttempt attempt: Int) -> Double {
        let base = Self.seconds(configuration.baseDelay), cap = Self.seconds(configuration.maxDelay)
        let exponential = min(cap, base * pow(2, Double(min(max(attempt - 1, 0), 30))))
        return exponential * Double.random(in: 0.5...1.0)
    }

    private func sink(_ id: String, campus: CampusID) async throws -> (any NotificationSink)? {
        let (plugins, registry, channels) = (plugins, registry, memberChannels)
        return try await sinks.value(for: "\(campus)/\(id)") {
            guard let settings = try await plugins.settings(campus: campus, kind: .sink, id: id) else { return nil }
            if PluginRegistry.memberChannelIDs.contains(id) {
                guard let channels else { throw PluginSettingsError("this server reaches no members (no MemberReach)") }
                return try channels.make(id: id, settings: settings, campus: campus)
            }
            return try registry.makeSink(id: id, settings: settings)
        }
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}

/// A batch's rows this worker still holds, each with its lease as last set (`leaseMicros`).
final class HeldLeases: Sendable {
    private let leases: Mutex<[OutboxWorker.Claimed.Key: Int64]>

    init(_ batch: [OutboxWorker.Claimed]) {
        leases = Mutex(Dictionary(batch.map { ($0.key, $0.leaseMicros) }, uniquingKeysWith: { first, _ in first }))
    }

    var current: [(key: OutboxWorker.Claimed.Key, lease: Int64)] { leases.withLock { $0.map { ($0.key, $0.value) } } }

    func release(_ key: OutboxWorker.Claimed.Key) { _ = leases.withLock { $0.removeValue(forKey: key) } }

    /// The new leases of the rows renewed; those released meanwhile stay released.
    func renewed(_ rows: [(OutboxWorker.Claimed.Key, Int64)]) {
        leases.withLock { leases in
            for (key, lease) in rows where leases[key] != nil { leases[key] = lease }
        }
    }
}

/// The two task groups a round adds deliveries to: the worker's own (it runs them while it
/// goes on) and a round's of `runOnce` (which waits for them).
protocol TaskGroupAdding {
    mutating func add(_ operation: sending @escaping @isolated(any) () async -> Void)
}

extension DiscardingTaskGroup: TaskGroupAdding {
    mutating func add(_ operation: sending @escaping @isolated(any) () async -> Void) { addTask(operation: operation) }
}

extension ThrowingDiscardingTaskGroup: TaskGroupAdding where Failure == any Error {
    mutating func add(_ operation: sending @escaping @isolated(any) () async -> Void) { addTask { await operation() } }
}

/// Wakes an outbox worker at once: rung by the server's attestation writer when a batch it
/// committed wrote events, and by the worker itself when a campus's deliveries end. A ring
/// while nobody waits is kept (one), so none is lost between a round and its sleep; a ring
/// wakes every waiter.
public final class OutboxSignal: Sendable {
    private struct State {
        var rung = false
        var next = 0
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
    }

    private let state = Mutex(State())

    public init() {}

    public func wake() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            guard !state.waiters.isEmpty else {
                state.rung = true
                return []
            }
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once rung (at once when rung since the last wait), after `timeout`, or when
    /// the task is cancelled.
    public func wait(upTo timeout: Duration) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await Task.sleep(for: timeout) }
            group.addTask { await self.rung() }
            await group.next()
            group.cancelAll()
        }
    }

    private func rung() async {
        let id = state.withLock { state in
            defer { state.next &+= 1 }
            return state.next
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state -> Bool in
                    if state.rung || Task.isCancelled {
                        state.rung = false
                        return true
                    }
                    state.waiters[id] = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
            waiter?.resume()
        }
    }
}
