import Synchronization

/// Values kept for a fixed time, for data that changes rarely but is read on every request
/// (campuses by slug, active questionnaires, built badge rules, verified sessions). Negative
/// answers can be stored too (`Value` optional), so probing for unknown keys costs nothing
/// either.
///
/// Entries are kept in two generations: new ones go into the current one, and every half
/// `ttl` (or when it holds `limit / 2` entries) the older generation is dropped whole and the
/// current one takes its place. So memory holds about one `ttl`'s worth of distinct keys,
/// never more than `limit`, without scanning for stale entries; an entry is served while it
/// is younger than `ttl`, and may be dropped once older than half of it (its next read loads).
public final class ExpiringCache<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private typealias Entry = (value: Value, at: ContinuousClock.Instant)

    private struct State {
        var current: [Key: Entry] = [:]
        /// The generation before `current`, begun at most a half `ttl` before it.
        var previous: [Key: Entry] = [:]
        var currentSince = ContinuousClock.now
        /// Loads under way: a miss that finds one waits for it instead of loading again.
        /// Only the load itself removes its entry, so a new one starts after it ends.
        var loading: [Key: Task<Value, any Error>] = [:]

        func entry(_ key: Key) -> Entry? { current[key] ?? previous[key] }
    }

    private let state = Mutex(State())
    let ttl: Duration
    let limit: Int

    public init(ttl: Duration, limit: Int = 10_000) {
        self.ttl = ttl
        self.limit = limit
    }

    /// The value stored for `key` less than `ttl` ago.
    public func value(for key: Key) -> Value? {
        state.withLock { Self.fresh($0.entry(key), ttl: ttl) }
    }

    /// Stores `value` as of `instant`: a value read from the database is as fresh as the
    /// moment the read began, not the moment it ended.
    public func store(_ value: Value, for key: Key, at instant: ContinuousClock.Instant = .now) {
        state.withLock { store(value, for: key, at: instant, in: &$0) }
    }

    /// Forgets `key` (a revoked session, say), so the next read loads.
    public func remove(_ key: Key) {
        state.withLock { state in
            state.current[key] = nil
            state.previous[key] = nil
        }
    }

    /// How many entries are held, stale ones included (for tests).
    public var count: Int { state.withLock { $0.current.count + $0.previous.count } }

    /// The cached value, or `load`'s (stored for next time). Concurrent misses for one key
    /// share one load, so when an entry expires under load the database sees one query,
    /// not one per waiting request. A failed load is not stored: every waiter gets its
    /// error, and the next call loads again. The load runs on in its own task when a
    /// waiter is cancelled, for the others.
    public func value(for key: Key, orLoad load: @escaping @Sendable () async throws -> Value) async throws -> Value {
        let found = state.withLock { state -> Found in
            if let value = Self.fresh(state.entry(key), ttl: ttl) { return .cached(value) }
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

    private static func fresh(_ entry: (value: Value, at: ContinuousClock.Instant)?, ttl: Duration) -> Value? {
        guard let entry, ContinuousClock.now - entry.at < ttl else { return nil }
        return entry.value
    }

    private func store(_ value: Value, for key: Key, at instant: ContinuousClock.Instant, in state: inout State) {
        let now = ContinuousClock.now
        if now - state.currentSince >= ttl / 2 || state.current.count >= max(limit / 2, 1) {
            // The older generation goes; its storage is reused for the new one.
            swap(&state.current, &state.previous)
            state.current.removeAll(keepingCapacity: true)
            state.currentSince = now
        }
        state.current[key] = (value, instant)
    }
}
