import Foundation
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import Synchronization

/// A bounded pool of libpq connections, and the API the rest of the platform talks to.
///
/// It is a `Service`: run it in the application's `ServiceGroup`; on graceful shutdown it
/// closes every connection. Connections open lazily, are checked before reuse (a connection
/// the server dropped is replaced, not handed out), and blocking libpq calls run on the
/// client's own thread pool, never on the cooperative pool or an event loop.
public final class PostgresClient: Service, Sendable {
    /// Pool options. Every field has a default.
    public struct Options: Sendable {
        /// Most connections open at once. Default 10.
        public var maxConnections: Int
        /// How long a caller waits for a free connection before `poolTimeout`. Default 10 s.
        public var leaseTimeout: Duration

        public init(maxConnections: Int = 10, leaseTimeout: Duration = .seconds(10)) {
            self.maxConnections = max(1, maxConnections)
            self.leaseTimeout = leaseTimeout
        }
    }

    private struct Waiter {
        let id: Int
        /// False for a caller whose own connection PostgreSQL refused while the pool had
        /// others: it waits for one of those to come back, and is handed a slot to open one
        /// of its own only when the pool has no other connection left.
        let takesSlot: Bool
        /// Resumed with a connection, or with nil: "a slot is yours, open one".
        let continuation: CheckedContinuation<LibPQConnection?, any Error>
    }

    private struct State {
        var idle: [LibPQConnection] = []
        /// Connections open or opening, leased ones included.
        var open = 0
        var waiters: [Waiter] = []
        var nextWaiterID = 0
        var closed = false
    }

    public let configuration: PostgresConfiguration
    public let options: Options
    private let logger: Logger
    private let threadPool: NIOThreadPool
    private let state = Mutex(State())
    /// Where the threads that run blocking libpq calls are. Under a lock, not a flag swapped
    /// atomically: with a flag, a caller that lost the swap could run a call before the
    /// winner had started the threads, and be told the pool was shut down (the CLI's first
    /// query racing `run()` under load).
    private let threads = Mutex(Threads.notStarted)
    private enum Threads { case notStarted, started, shutDown }

    /// Makes a client; it starts nothing (no thread, no connection) until it runs or is used.
    public init(configuration: PostgresConfiguration, options: Options = Options(), logger: Logger) {
        self.configuration = configuration
        self.options = options
        self.logger = logger
        self.threadPool = NIOThreadPool(numberOfThreads: options.maxConnections)
    }

    /// Starts the pool's threads, keeps the pool until graceful shutdown or cancellation,
    /// then closes every connection.
    public func run() async throws {
        startThreadsIfNeeded()
        try? await gracefulShutdown()
        await shutdown()
    }

    /// A client used before its service runs (a test, a one-off read) starts its threads at
    /// its first connection.
    private func startThreadsIfNeeded() {
        threads.withLock { threads in
            guard threads == .notStarted else { return }
            threadPool.start()
            threads = .started
        }
    }

    /// Closes idle connections, fails waiting callers, and closes leased ones as they return.
    public func shutdown() async {
        let (idle, waiters) = state.withLock { state -> ([LibPQConnection], [Waiter]) in
            if state.closed { return ([], []) }
            state.closed = true
            defer {
                state.idle = []
                state.waiters = []
            }
            state.open -= state.idle.count
            return (state.idle, state.waiters)
        }
        for waiter in waiters { waiter.continuation.resume(throwing: Self.closedError) }
        for connection in idle { connection.close() }
        // Never started after this: a call still on its way finds the pool closed.
        threads.withLock { $0 = .shutDown }
        try? await threadPool.shutdownGracefully()
    }

    // MARK: Using connections

    /// Runs `body` with a connection leased for its duration.
    public func withConnection<Result: Sendable>(
        _ body: (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        let raw = try await lease()
        defer { release(raw) }
        return try await body(PostgresConnection(raw: raw, threadPool: threadPool))
    }

    /// Runs `body` inside `BEGIN … COMMIT`, rolling back if it throws; `settings` are made
    /// first (`SET LOCAL` semantics).
    public func withTransaction<Result: Sendable>(
        settings: TransactionSettings = .none, _ body: (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        try await withConnection { connection in
            try await connection.transaction(settings: settings, body)
        }
    }

    /// Runs one statement. With `settings`, it runs in a transaction that makes them first,
    /// in the same round trip.
    @discardableResult
    public func query(_ sql: SQL, settings: TransactionSettings = .none) async throws -> PostgresRows {
        try await withConnection { connection in
            guard !settings.values.isEmpty else { return try await connection.query(sql) }
            let outcome = try await connection.pipeline([PipelineUnit(settings: settings, statements: [sql])])
            return try outcome[0].get()[0]
        }
    }

    // MARK: Pool

    private static let closedError = PostgresError(code: .poolClosed, message: "the database connection pool is shut down")

    private enum LeaseStep {
        case reuse(LibPQConnection)
        case open
        case wait
    }

    private func lease() async throws -> LibPQConnection {
        let deadline = ContinuousClock.now + options.leaseTimeout
        while true {
            let step = try state.withLock { state -> LeaseStep in
                if state.closed { throw Self.closedError }
                if let connection = state.idle.popLast() { return .reuse(connection) }
                if state.open < options.maxConnections {
                    state.open += 1
                    return .open
                }
                return .wait
            }
            let connection: LibPQConnection
            switch step {
            case .reuse(let idle): connection = idle
            case .open: connection = try await openConnection(until: deadline)
            case .wait:
                let options = self.options
                let timeout: @Sendable () -> PostgresError = {
                    PostgresError(
                        code: .poolTimeout,
                        message: "all \(options.maxConnections) database connections stayed busy for \(options.leaseTimeout); "
                            + "raise the pool size (--db-pool-size) or look for slow queries")
                }
                if let handed = try await waitForConnection(until: deadline, takingSlot: true, orFail: timeout) {
                    connection = handed
                } else {
                    connection = try await openConnection(until: deadline)
                }
            }
            if connection.isAlive() { return connection }
            logger.info("replacing a database connection the server closed", metadata: ["target": "\(connection.target)"])
            discard(connection)
        }
    }

    /// Opens a connection in a slot already counted in `open`, giving the slot up on failure.
    /// When PostgreSQL refuses it while the pool has other connections (the server is at
    /// `max_connections`, or the role at its `CONNECTION LIMIT`), the caller waits for one of
    /// those until `deadline` rather than failing a request another moment would have served.
    private func openConnection(until deadline: ContinuousClock.Instant) async throws -> LibPQConnection {
        do {
            return try await connect()
        } catch let refused as PostgresError where refused.code == .connectionFailed && Self.saysFull(refused) {
            let others = state.withLock { $0.open }
            guard others > 0 else { throw refused }
            logger.warning(
                "PostgreSQL refused a new connection; waiting for one of the pool's own",
                metadata: ["open": "\(others)", "error": "\(refused.message)"])
            let leaseTimeout = options.leaseTimeout
            let timeout: @Sendable () -> PostgresError = {
                PostgresError(
                    code: .connectionFailed,
                    message: "\(refused.message); none of the pool's \(others) other connections came free within "
                        + "\(leaseTimeout). Raise PostgreSQL's max_connections or lower the pool size (--db-pool-size)",
                    sqlState: refused.sqlState)
            }
            guard let connection = try await waitForConnection(until: deadline, takingSlot: false, orFail: timeout) else {
                return try await connect()
            }
            return connection
        }
    }

    /// Whether PostgreSQL refused a connection because it is full, not down or failing over
    /// (those fail the caller at once, for a prompt 503). libpq gives no SQLSTATE for a
    /// connection, so this reads PostgreSQL's messages (53300, in English: a server set to
    /// other `lc_messages` fails such callers at once, as before).
    static func saysFull(_ error: PostgresError) -> Bool {
        ["too many clients", "too many connections", "remaining connection slots are reserved"].contains {
            error.message.contains($0)
        }
    }

    /// Connects in a slot already counted in `open`; gives the slot up on failure.
    private func connect() async throws -> LibPQConnection {
        do {
            let configuration = self.configuration
            let logger = self.logger
            startThreadsIfNeeded()
            return try await threadPool.runIfActive { try LibPQConnection.connect(configuration, logger: logger) }
        } catch {
            releaseSlot()
            if error is PostgresError { throw error }
            throw Self.closedError
        }
    }

    private enum ReleaseStep {
        case handOver(Waiter)
        case keptIdle
        case close
    }

    private func release(_ connection: LibPQConnection) {
        guard connection.isReusable else {
            discard(connection)
            return
        }
        let step = state.withLock { state -> ReleaseStep in
            if state.closed {
                state.open -= 1
                return .close
            }
            if !state.waiters.isEmpty { return .handOver(state.waiters.removeFirst()) }
            state.idle.append(connection)
            return .keptIdle
        }
        switch step {
        case .handOver(let waiter): waiter.continuation.resume(returning: connection)
        case .keptIdle: break
        case .close: connection.close()
        }
    }

    /// Closes a broken connection and passes its slot on.
    private func discard(_ connection: LibPQConnection) {
        connection.close()
        releaseSlot()
    }

    /// A slot freed: hand it to the first waiter that takes slots (who opens a connection),
    /// or, when it was the pool's last connection, to the first waiter of any kind; or shrink.
    private func releaseSlot() {
        let waiter = state.withLock { state -> Waiter? in
            if !state.closed, let index = state.waiters.firstIndex(where: { $0.takesSlot || state.open == 1 }) {
                return state.waiters.remove(at: index)
            }
            state.open -= 1
            return nil
        }
        waiter?.continuation.resume(returning: nil)
    }

    /// Waits for a connection handed back, or (`takingSlot`) for a slot to open one (nil),
    /// until `deadline`, then fails with `timeout()` (made only then: an exhausted pool under
    /// load waits often). A connection released, or a slot freed, between the caller's look at
    /// the pool and this wait is taken here, not missed.
    private func waitForConnection(
        until deadline: ContinuousClock.Instant, takingSlot: Bool, orFail timeout: @escaping @Sendable () -> PostgresError
    ) async throws -> LibPQConnection? {
        let id = state.withLock { state -> Int in
            state.nextWaiterID += 1
            return state.nextWaiterID
        }
        let timer = Task { [weak self] in
            try await timerSleep(for: deadline - .now)
            self?.removeWaiter(id, failing: timeout())
        }
        defer { timer.cancel() }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let now = state.withLock { state -> Result<LibPQConnection?, any Error>? in
                    if state.closed { return .failure(Self.closedError) }
                    if Task.isCancelled { return .failure(CancellationError()) }
                    if let connection = state.idle.popLast() { return .success(connection) }
                    if takingSlot, state.open < options.maxConnections {
                        state.open += 1
                        return .success(nil)
                    }
                    state.waiters.append(Waiter(id: id, takesSlot: takingSlot, continuation: continuation))
                    return nil
                }
                if let now { continuation.resume(with: now) }
            }
        } onCancel: {
            removeWaiter(id, failing: CancellationError())
        }
    }

    private func removeWaiter(_ id: Int, failing error: any Error) {
        let waiter = state.withLock { state -> Waiter? in
            guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
            return state.waiters.remove(at: index)
        }
        waiter?.continuation.resume(throwing: error)
    }

    /// Connections open right now, how many of them are idle, and how many callers wait for
    /// one (for `/metrics` and tests).
    public var statistics: (open: Int, idle: Int, waiting: Int) { state.withLock { ($0.open, $0.idle.count, $0.waiters.count) } }
}

extension PostgresClient {
    /// Whether a trivial query answers within `timeout`; the error says why not. A blocking
    /// connect is not interrupted, but the caller stops waiting for it at the deadline.
    public func ping(timeout: Duration) async -> PostgresError? {
        let outcome = FirstOutcome<PostgresError?>()
        return await withCheckedContinuation { continuation in
            outcome.set(continuation)
            let probe = Task {
                do {
                    try await self.query("SELECT 1")
                    outcome.finish(nil)
                } catch let error as PostgresError {
                    outcome.finish(error)
                } catch {
                    outcome.finish(PostgresError(code: .connectionFailed, message: "\(error)"))
                }
            }
            outcome.setTimer(
                Task {
                    try await Task.sleep(for: timeout)
                    outcome.finish(PostgresError(code: .connectionFailed, message: "no answer from PostgreSQL within \(timeout)"))
                    probe.cancel()
                })
        }
    }
}

/// Resumes a continuation with whichever of two outcomes comes first (a result, or a
/// deadline's), and cancels the deadline's timer when the result wins. For waiting on work
/// that cannot itself be interrupted, such as a blocking call or a plugin's computation.
public final class FirstOutcome<Value: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<Value, Never>?
        var timer: Task<Void, any Error>?
        var finished = false
    }
    private let state = Mutex(State())

    public init() {}

    public func set(_ continuation: CheckedContinuation<Value, Never>) { state.withLock { $0.continuation = continuation } }

    public func setTimer(_ timer: Task<Void, any Error>) {
        let finished = state.withLock { state -> Bool in
            state.timer = timer
            return state.finished
        }
        if finished { timer.cancel() }
    }

    /// The first call resumes the waiter; later calls do nothing.
    public func finish(_ value: Value) {
        let (continuation, timer) = state.withLock { state in
            state.finished = true
            defer {
                state.continuation = nil
                state.timer = nil
            }
            return (state.continuation, state.timer)
        }
        timer?.cancel()
        continuation?.resume(returning: value)
    }
}

/// Sleeps for `duration` on a NIO timer; cancelling the task ends it at once and frees the
/// timer. `Task.sleep` does the first, not the second: a sleep cancelled early keeps about
/// 750 bytes until its deadline (measured with Swift 6.3 on Linux), which at thousands of
/// requests a second, each with a 10 s timer, held 75 MB. Throws when cancelled.
public func timerSleep(for duration: Duration) async throws {
    let timer = MultiThreadedEventLoopGroup.singleton.any().scheduleTask(in: .nanoseconds(duration.clampedNanoseconds)) {}
    try await withTaskCancellationHandler {
        try await timer.futureResult.get()
    } onCancel: {
        timer.cancel()
    }
}
