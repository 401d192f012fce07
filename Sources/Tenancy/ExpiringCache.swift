import AttestPostgres
import Synchronization

/// Values kept for a fixed time, for data that changes rarely but is read on every request
/// (campuses by slug, active questionnaires, built badge rules, verified sessions). Negative
/// answers can be stored too (`Value` optional), so probing for unknown keys costs nothing
/// either.
///
/// Entries are kept in two generations: new ones belong to the current one, and every half
/// `ttl` (or once `limit / 2` have been stored in it) the older generation is dropped whole
/// and the current one takes its place. So memory holds about one `ttl`'s worth of distinct
/// keys, never more than `limit`; an entry is served while it is younger than `ttl`, and may
/// be dropped once older than half of it (its next read loads). Both generations live in one
/// table, told apart by when their entries were read: dropping the older one is one pass over
/// the table every half `ttl` at most, and the table's spare capacity is paid for once, not
/// per generation (a server keeps 100,000 sessions in one of these).
public final class ExpiringCache<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    /// A value and when it was read, in nanoseconds after `origin`. A struct, not a tuple: this
    /// class is generic and used unspecialised from other modules, and a tuple's type metadata
    /// was looked up on every read (`swift_getTupleTypeMetadata2` in a profile of submissions).
    @usableFromInline
    struct Entry {
        @usableFromInline let value: Value
        @usableFromInline let at: Int64
    }

    @usableFromInline
    struct State {
        @usableFromInline var entries: [Key: Entry] = [:]
        /// When the current generation began (nanoseconds after `origin`); older entries are
        /// the previous generation.
        var currentSince: Int64 = 0
        var storedSince = 0
        /// The latest `at` stored: a new generation begins after it.
        var latest: Int64 = -1
        /// Loads under way: a miss that finds one waits for it instead of loading again.
        /// Only the load itself removes its entry, so a new one starts after it ends.
        var loading: [Key: Task<Value, any Error>] = [:]
    }

    @usableFromInline let state = Mutex(State())
    let ttl: Duration
    let limit: Int
    @usableFromInline let origin = ContinuousClock.now
    @usableFromInline let ttlNanoseconds: Int64

    public init(ttl: Duration, limit: Int = 10_000) {
        self.ttl = ttl
        self.limit = limit
        self.ttlNanoseconds = ttl.clampedNanoseconds
    }

    @inlinable
    func nanoseconds(at instant: ContinuousClock.Instant) -> Int64 { (instant - origin).clampedNanoseconds }

    /// The value stored for `key` less than `ttl` ago. Inlinable, as `value(for:orLoad:)`'s
    /// hit is: each caller's module specialises it for its key and value (unspecialised, the
    /// cache's hashing and metadata lookups were about 4% of a submission's server CPU).
    @inlinable
    public func value(for key: Key) -> Value? {
        let now = nanoseconds(at: .now)
        return state.withLock { fresh($0.entries[key], now: now) }
    }

    /// The value stored for `key` less than `ttl` ago, and the instant it was stored as of:
    /// what is made from it is no fresher than that.
    @inlinable
    public func entry(for key: Key) -> (value: Value, at: ContinuousClock.Instant)? {
        let now = nanoseconds(at: .now)
        return state.withLock { state in
            guard let entry = state.entries[key], let value = fresh(entry, now: now) else { return nil }
            return (value, origin.advanced(by: .nanoseconds(entry.at)))
        }
    }

    /// Stores `value` as of `instant`: a value read from the database is as fresh as the
    /// moment the read began, not the moment it ended.
    public func store(_ value: Value, for key: Key, at instant: ContinuousClock.Instant = .now) {
        state.withLock { store(value, for: key, at: instant, in: &$0) }
    }

    /// Forgets `key` (a revoked session, say), so the next read loads.
    public func remove(_ key: Key) {
        state.withLock { _ = $0.entries.removeValue(forKey: key) }
    }

    /// How many entries are held, stale ones included (for tests).
    public var count: Int { state.withLock { $0.entries.count } }

    /// The cached value, or `load`'s (stored for next time). Concurrent misses for one key
    /// share one load, so when an entry expires under load the database sees one query,
    /// not one per waiting request. A failed load is not stored: every waiter gets its
    /// error, and the next call loads again. The load runs on in its own task when a
    /// waiter is cancelled, for the others.
    ///
    /// A hit is inlined into the caller and specialised there; only a miss calls the generic
    /// loading path (a hit went from 0.56–0.60 µs to about 0.15 µs, measured alone).
    @inlinable
    public func value(for key: Key, orLoad load: @escaping @Sendable () async throws -> Value) async throws -> Value {
        if let value = value(for: key) { return value }
        return try await loadValue(for: key, load)
    }

    /// `value(for:orLoad:)`'s miss: the value stored meanwhile, a load under way, or a new one.
    @usableFromInline
    func loadValue(for key: Key, _ load: @escaping @Sendable () async throws -> Value) async throws -> Value {
        let now = nanoseconds(at: .now)
        let found = state.withLock { state -> Found in
            if let value = fresh(state.entries[key], now: now) { return .cached(value) }
            if let loading = state.loading[key] { return .loading(loading) }
            // The task cannot finish before it is registered: its last step needs this lock.
            let task = Task { [self] in
                defer { self.state.withLock { _ = $0.loading.removeValue(forKey: key) } }
                let started = ContinuousClock.now
                let value = try await load()
                self.state.withLock { self.store(value, for: key, at: started, in: &$0) }
                return value
            }
            state.loading[key] = task
            return .loading(task)
        }
        switch found {
        case .cached(let value): return value
        case .loading(let task): return try await task.value
        }
    }

    private enum Found {
        case cached(Value)
        /// A load under way, this caller's own or an earlier one's.
        case loading(Task<Value, any Error>)
    }

    @inlinable
    func fresh(_ entry: Entry?, now: Int64) -> Value? {
        guard let entry, now - entry.at < ttlNanoseconds else { return nil }
        return entry.value
    }

    private func store(_ value: Value, for key: Key, at instant: ContinuousClock.Instant, in state: inout State) {
        let now = nanoseconds(at: .now)
        let at = min(nanoseconds(at: instant), now)
        if now - state.currentSince >= ttlNanoseconds / 2 || state.storedSince >= max(limit / 2, 1) {
            // The older generation goes, and the current one becomes the older. The new one
            // begins after every entry stored so far (one read earlier than that, rarely,
            // counts as older and goes a generation early: its next read loads).
            let threshold = state.currentSince
            let older = state.entries.compactMap { $0.value.at < threshold ? $0.key : nil }
            for key in older { state.entries.removeValue(forKey: key) }
            state.currentSince = max(at, state.latest + 1)
            state.storedSince = 0
        }
        state.latest = max(state.latest, at)
        state.entries[key] = Entry(value: value, at: at)
        state.storedSince += 1
    }
}
