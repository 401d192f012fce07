import Synchronization

/// Values kept for a fixed time, for data that changes rarely but is read on every request
/// (campuses by slug, active questionnaires, built badge rules). Negative answers can be
/// stored too (`Value` optional), so probing for unknown keys costs nothing either. Past
/// `limit` entries it starts over rather than growing.
public final class ExpiringCache<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private struct State {
        var entries: [Key: (value: Value, at: ContinuousClock.Instant)] = [:]
        /// Loads under way: a miss that finds one waits for it instead of loading again.
        /// Only the load itself removes its entry, so a new one starts after it ends.
        var loading: [Key: Task<Value, any Error>] = [:]
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
        state.withLock { Self.fresh($0.entries[key], ttl: ttl) }
    }

    public func store(_ value: Value, for key: Key) {
        state.withLock { Self.store(value, for: key, in: &$0, limit: limit) }
    }

    /// The cached value, or `load`'s (stored for next time). Concurrent misses for one key
    /// share one load, so when an entry expires under load the database sees one query,
    /// not one per waiting request. A failed load is not stored: every waiter gets its
    /// error, and the next call loads again. The load runs on in its own task when a
    /// waiter is cancelled, for the others.
    public func value(for key: Key, orLoad load: @escaping @Sendable () async throws -> Value) async throws -> Value {
        let found = state.withLock { state -> Found in
            if let value = Self.fresh(state.entries[key], ttl: ttl) { return .cached(value) }
            if let loading = state.loading[key] { return .loading(loading) }
            // The task cannot finish before it is registered: its last step needs this lock.
            let task = Task { [self] in
                defer { self.state.withLock { _ = $0.loading.removeValue(forKey: key) } }
                let value = try await load()
                self.state.withLock { Self.store(value, for: key, in: &$0, limit: self.limit) }
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

    private static func store(_ value: Value, for key: Key, in state: inout State, limit: Int) {
        if state.entries.count >= limit { state.entries.removeAll(keepingCapacity: true) }
        state.entries[key] = (value, .now)
    }
}
