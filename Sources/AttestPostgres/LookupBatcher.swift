import Synchronization

/// Runs concurrent lookups of one group as one query: while a batch of a group is in flight,
/// later lookups of that group queue, and when it returns the next batch takes them all.
/// Under light load a lookup runs at once and alone; under heavy load one round trip serves
/// many requests, which is what keeps the database's per-query cost off the hot path.
///
/// A group with lookups to do has one task that runs its batches, one after another (the
/// first lookup of an idle group starts it; it ends when nobody waits). Between two batches
/// it only resumes the first one's callers, which is queueing them, and sends the next at
/// once. When the next batch's first caller sent it instead, it did so only after the
/// executor had run the callers resumed before it, and the database stood idle meanwhile
/// (docs/performance.md, "Issue 34, fourth round"). The task is nobody's request,
/// so a caller's cancellation (its client went away) fails nobody else's lookup.
///
/// `load` gets each key once and returns the values found; a key it leaves out is nil for its
/// callers. If `load` throws, every caller of that batch gets the error.
public final class LookupBatcher<Group: Hashable & Sendable, Key: Hashable & Sendable, Value: Sendable>: Sendable {
    public typealias Load = @Sendable (Group, [Key]) async throws -> [Key: Value]

    private struct Waiter {
        let key: Key
        let continuation: CheckedContinuation<Value?, any Error>
    }

    private let load: Load
    private let maxBatch: Int
    /// Groups whose task runs, and who waits for its next batch.
    private let state = Mutex<[Group: [Waiter]]>([:])

    public init(maxBatch: Int = 256, load: @escaping Load) {
        precondition(maxBatch > 0)
        self.maxBatch = maxBatch
        self.load = load
    }

    /// The value of `key` in `group`, nil when `load` found none.
    public func value(for key: Key, in group: Group) async throws -> Value? {
        try await withCheckedThrowingContinuation { continuation in
            let start = state.withLock { groups -> Bool in
                let idle = groups[group] == nil
                groups[group, default: []].append(Waiter(key: key, continuation: continuation))
                return idle
            }
            if start { Task { await self.run(group) } }
        }
    }

    /// How many callers of `group` wait for the next batch (for tests).
    func waiting(in group: Group) -> Int { state.withLock { $0[group]?.count ?? 0 } }

    /// Loads `group`'s batches until nobody waits; the group is then idle.
    private func run(_ group: Group) async {
        while let batch = next(of: group) {
            var keys = Set<Key>(minimumCapacity: batch.count)
            for waiter in batch { keys.insert(waiter.key) }
            let result: Result<[Key: Value], any Error>
            do { result = .success(try await load(group, Array(keys))) } catch { result = .failure(error) }
            for waiter in batch { waiter.continuation.resume(with: result.map { $0[waiter.key] }) }
        }
    }

    /// The next batch of `group` (up to `maxBatch` callers, first come first), or nil, and the
    /// group idle, when nobody waits.
    private func next(of group: Group) -> [Waiter]? {
        state.withLock { groups in
            guard let waiting = groups[group], !waiting.isEmpty else {
                groups[group] = nil
                return nil
            }
            let batch = Array(waiting.prefix(maxBatch))
            groups[group] = Array(waiting.dropFirst(batch.count))
            return batch
        }
    }
}
