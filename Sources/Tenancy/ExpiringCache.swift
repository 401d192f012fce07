import Synchronization

/// Values kept for a fixed time, for data that changes rarely but is read on every request
/// (campuses by slug, active questionnaires, built badge rules). Negative answers can be
/// stored too (`Value` optional), so probing for unknown keys costs nothing either. Past
/// `limit` entries it starts over rather than growing.
public final class ExpiringCache<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private let entries = Mutex<[Key: (value: Value, at: ContinuousClock.Instant)]>([:])
    let ttl: Duration
    let limit: Int

    public init(ttl: Duration, limit: Int = 10_000) {
        self.ttl = ttl
        self.limit = limit
    }

    /// The value stored for `key` less than `ttl` ago.
    public func value(for key: Key) -> Value? {
        entries.withLock { entries in
            guard let entry = entries[key], ContinuousClock.now - entry.at < ttl else { return nil }
            return entry.value
        }
    }

    public func store(_ value: Value, for key: Key) {
        entries.withLock { entries in
            if entries.count >= limit { entries.removeAll(keepingCapacity: true) }
            entries[key] = (value, .now)
        }
    }

    /// The cached value, or `load`'s (stored for next time).
    public func value(for key: Key, orLoad load: () async throws -> Value) async rethrows -> Value {
        if let cached = value(for: key) { return cached }
        let loaded = try await load()
        store(loaded, for: key)
        return loaded
    }
}
