import AttestPlugins
import AttestPostgres
import Foundation
import Logging
import Metrics
import ServiceLifecycle
import Synchronization
import Tenancy

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
        /// How often an idle worker looks for due events. Default 1 s.
        public var pollInterval: Duration = .seconds(1)
        /// Rows claimed per campus per round. Default 32.
        public var batchSize = 32
        /// How long a claimed row is reserved for this worker's attempt. Default 2 min.
        public var lease: Duration = .seconds(120)
        /// Backoff after the first failure, doubling each time up to `maxDelay`. Default 2 s, 10 min.
        public var baseDelay: Duration = .seconds(2)
        public var maxDelay: Duration = .seconds(600)
        /// Past this age an event that still fails is dead-lettered. Default 24 h.
        public var maxAge: Duration = .seconds(86_400)

        public init() {}
    }

    let client: PostgresClient
    let registry: PluginRegistry
    let context: PluginContext
    let configuration: Configuration
    let logger: Logger
    let clock: @Sendable () -> Date
    /// `attest_notifications_total{outcome}`: delivery attempts that delivered, will be
    /// retried, or dead-lettered (no label names a campus or a recipient).
    private let delivered, retried, dead: Counter
    /// Campuses with deliveries under way: the next round passes them over.
    private let busy = Mutex<Set<CampusID>>([])
    /// Campus days whose reminders are known to be written (by this server or another).
    private let remindedDays = Mutex<Set<String>>([])
    /// Built sinks by campus and id, kept 5 s (settings changes reach workers within that).
    /// Where a sink's settings (the sealed ones opened with the key-encryption key) are read.
    let plugins: CampusPluginStore
    private let sinks = ExpiringCache<String, (any NotificationSink)?>(ttl: .seconds(5))

    public init(
        client: PostgresClient, registry: PluginRegistry, http: any PluginHTTPClient, configuration: Configuration = .init(),
        logger: Logger, clock: @escaping @Sendable () -> Date = { Date() }, metrics: any MetricsFactory = MetricsSystem.factory,
        kek: KeyEncryptionKey? = nil
    ) {
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
        var pluginLogger = logger
        pluginLogger[metadataKey: "component"] = "sink"
        self.context = PluginContext(http: http, logger: pluginLogger)
    }

    public func run() async throws {
        await withDiscardingTaskGroup { deliveries in
            while !Task.isShuttingDownGracefully && !Task.isCancelled {
                var worked = false
                do {
                    worked = try await round(&deliveries) > 0
                } catch {
                    // Cancelled: the server is stopping (or could not start), not a failed round.
                    if Task.isCancelled { break }
                    logger.warning("outbox round failed", metadata: ["error": "\(error)"])
                }
                if !worked {
                    try? await cancelWhenGracefulShutdown { try await Task.sleep(for: self.configuration.pollInterval) }
                }
            }
        }
    }

    /// One round over every campus, waiting for its deliveries: writes reminders that have
    /// come due, claims due rows, delivers them, records the outcomes. Returns how many
    /// delivery attempts it made.
    @discardableResult
    public func runOnce() async throws -> Int {
        try await withThrowingDiscardingTaskGroup { deliveries in try await round(&deliveries) }
    }

    /// Claims each campus's due rows and starts their deliveries in `deliveries` without
    /// waiting: a campus whose receiver is slow or hangs delays no other campus. A campus
    /// with deliveries still under way is passed over until they end.
    private func round<Group: TaskGroupAdding>(_ deliveries: inout Group) async throws -> Int {
        let campuses = try await CampusStore(client: client).list()
        try await remind(campuses)
        var attempts = 0
        for campus in campuses.map(\.id) where busy.withLock({ $0.insert(campus).inserted }) {
            let claimed: [Claimed]
            do { claimed = try await claim(campus: campus) } catch {
                busy.withLock { _ = $0.remove(campus) }
                throw error
            }
            guard !claimed.isEmpty else {
                busy.withLock { _ = $0.remove(campus) }
                continue
            }
            attempts += claimed.count
            deliveries.add {
                await withTaskGroup(of: Void.self) { group in
                    for entry in claimed { group.addTask { await self.attempt(entry, campus: campus) } }
                }
                self.busy.withLock { _ = $0.remove(campus) }
            }
        }
        return attempts
    }

    private func remind(_ campuses: [Campus]) async throws {
        let now = clock()
        let pending = campuses.filter { campus in
            Reminders.isDue(campus, at: now) && !remindedDays.withLock { $0.contains("\(campus.id)/\(campus.localDate(at: now))") }
        }
        guard !pending.isEmpty else { return }
        let written = try await Reminders(client: client).run(campuses: pending, at: now)
        for (slug, count) in written { logger.info("reminders written", metadata: ["campus": "\(slug)", "members": "\(count)"]) }
        remindedDays.withLock { days in
            if days.count > 100_000 { days.removeAll() }
            for campus in pending { days.insert("\(campus.id)/\(campus.localDate(at: now))") }
        }
    }

    struct Claimed: Sendable {
        var id: UUID
        var sink: String
        var payload: String
        var attempts: Int
        var windowStart: Date
    }

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
            RETURNING o.id, o.sink_id, o.payload::text AS payload, o.attempts, o.window_start
            """, campus: campus.rawValue)
        return try rows.map { row in
            Claimed(
                id: try row.decode("id"), sink: try row.decode("sink_id"), payload: try row.decode("payload"),
                attempts: try row.decode("attempts"), windowStart: try row.decode("window_start"))
        }
    }

    private func attempt(_ entry: Claimed, campus: CampusID) async {
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
        do {
            try await record(result, for: entry, campus: campus)
        } catch {
            // The lease runs out and the event is tried again: at least once.
            logger.warning("cannot record a delivery outcome", metadata: ["event": "\(entry.id)", "error": "\(error)"])
        }
    }

    private func record(_ result: DeliveryResult, for entry: Claimed, campus: CampusID) async throws {
        let key: SQL = "campus_id = \(campus) AND id = \(entry.id) AND sink_id = \(entry.sink)"
        switch result {
        case .delivered:
            try await client.query(
                "UPDATE notification_outbox SET delivered_at = now(), last_error = NULL WHERE \(key)", campus: campus.rawValue)
            delivered.increment()
        case .reject(let reason):
            logger.warning("notification dead-lettered", metadata: ["event": "\(entry.id)", "sink": "\(entry.sink)", "reason": "\(reason)"])
            try await client.query(
                "UPDATE notification_outbox SET dead_at = now(), last_error = \(reason) WHERE \(key)", campus: campus.rawValue)
            dead.increment()
        case .retry(let reason):
            let age = Date().timeIntervalSince(entry.windowStart)
            if age >= Self.seconds(configuration.maxAge) {
                logger.warning(
                    "notification dead-lettered after retrying", metadata: ["event": "\(entry.id)", "sink": "\(entry.sink)", "reason": "\(reason)"])
                try await client.query(
                    "UPDATE notification_outbox SET dead_at = now(), last_error = \(reason) WHERE \(key)", campus: campus.rawValue)
                dead.increment()
                return
            }
            let delay = backoff(afterAttempt: entry.attempts)
            logger.info("notification will be retried", metadata: ["event": "\(entry.id)", "sink": "\(entry.sink)", "in": "\(delay)s", "reason": "\(reason)"])
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
        let (plugins, registry) = (plugins, registry)
        return try await sinks.value(for: "\(campus)/\(id)") {
            guard let settings = try await plugins.settings(campus: campus, kind: .sink, id: id) else { return nil }
            return try registry.makeSink(id: id, settings: settings)
        }
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
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
