import Synchronization

/// Runs concurrent lookups of one group as one query: while a batch of a group is in flight,
/// later lookups of that group queue, and when it returns the next batch takes them all.
/// Under light load a lookup runs at once and alone; under heavy load one round trip serves
/// many requests, which is what keeps the database's per-query cost off the hot path.
///
/// No extra task runs the batches: the caller that finds its group idle leads its batch,
/// and on finishing hands the lead to the first caller of the next batch. `load` gets each
/// key once and returns the values found; a key it leaves out is nil for its callers. If
/// `load` throws, every caller of that batch gets the error.
public final class LookupBatcher<Group: Hashable & Sendable, Key: Hashable & Sendable, Value: Sendable>: Sendable {
    public typealias Load = @Sendable (Group, [Key]) async throws -> [Key: Value]

    private enum Wake {
        case value(Value?)
        /// This caller leads the batch: its own key plus these waiting callers.
        case lead([Waiter])
    }

    private struct Waiter {
        let key: Key
        let continuation: CheckedContinuation<Wake, any Error>
    }

    private struct GroupState {
        var queue: [Waiter] = []
    }

    private let load: Load
    private let maxBatch: Int
    /// Groups with a batch in flight, and who waits for the next one.
    private let state = Mutex<[Group: GroupState]>([:])

    public init(maxBatch: Int = 256, load: @escaping Load) {
        precondition(maxBatch > 0)
        self.maxBatch = maxBatch
        self.load = load
    }

    /// The value of `key` in `group`, nil when `load` found none.
    public func value(for key: Key, in group: Group) async throws -> Value? {
        let wake = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Wake, any Error>) in
            let lead = state.withLock { groups -> Bool in
                if groups[group] != nil {
                    groups[group]!.queue.append(Waiter(key: key, continuation: continuation))
                    return false
                }
                groups[group] = GroupState()
                return true
            }
            if lead { continuation.resume(returning: .lead([])) }
        }
        switch wake {
        case .value(let value):
            return value
        case .lead(let waiters):
            let keys = Array(Set([key] + waiters.map(\.key)))
            // The load serves other requests too: it runs in its own task, so this caller's
            // cancellation (its client went away) does not fail theirs.
            let load = self.load
            let result = await Task { () -> Result<[Key: Value], any Error> in
                do { return .success(try await load(group, keys)) } catch { return .failure(error) }
            }.value
            for waiter in waiters {
                waiter.continuation.resume(with: result.map { .value($0[waiter.key]) })
            }
            handOver(group)
            return try result.get()[key]
        }
    }

    /// How many callers of `group` wait for the next batch (for tests).
    func waiting(in group: Group) -> Int { state.withLock { $0[group]?.queue.count ?? 0 } }

    /// The next batch's first caller leads it; with nobody waiting the group goes idle.
    private func handOver(_ group: Group) {
        let next = state.withLock { groups -> (Waiter, [Waiter])? in
            guard var waiting = groups[group], let first = waiting.queue.first else {
                groups[group] = nil
                return nil
            }
            let batch = Array(waiting.queue.prefix(maxBatch))
            waiting.queue.removeFirst(batch.count)
            groups[group] = waiting
            return (first, Array(batch.dropFirst()))
        }
        if let (leader, followers) = next { leader.continuation.resume(returning: .lead(followers)) }
    }
}
