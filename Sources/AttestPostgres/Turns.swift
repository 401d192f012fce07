import Foundation
import Synchronization

/// Work that must run one at a time for each key (a campus), in this process and in the
/// order it came, waiting before it takes a database connection: work that would otherwise
/// take its connection and then wait for a transaction-level advisory lock waits here, not
/// holding a connection from the pool. (Sixteen laboratory deliveries for one campus at once
/// took every one of a server's connections while fifteen of them waited for the campus's
/// records lock; the pool's other requests waited too.) The advisory lock still orders the
/// work across servers.
public final class Turns<Key: Hashable & Sendable>: Sendable {
    private struct Waiter {
        var id: Int
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        /// The keys whose turn is taken, each with the work waiting for it, first first.
        var queues: [Key: [Waiter]] = [:]
        var next = 0
    }

    private let state = Mutex(State())

    private enum Taking { case go, cancelled, wait }

    public init() {}

    /// Runs `body` in `key`'s turn: after all work that asked for it before. Throws
    /// `CancellationError` when the task is cancelled while it waits.
    public func inTurn<Result>(of key: Key, _ body: () async throws -> Result) async throws -> Result {
        try await take(key)
        defer { pass(key) }
        return try await body()
    }

    private func take(_ key: Key) async throws {
        let id = state.withLock { state in
            defer { state.next &+= 1 }
            return state.next
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let now = state.withLock { state -> Taking in
                    if Task.isCancelled { return .cancelled }
                    guard state.queues[key] != nil else {
                        state.queues[key] = []
                        return .go
                    }
                    state.queues[key]?.append(Waiter(id: id, continuation: continuation))
                    return .wait
                }
                switch now {
                case .go: continuation.resume()
                case .cancelled: continuation.resume(throwing: CancellationError())
                case .wait: break
                }
            }
        } onCancel: {
            // Still waiting: leave the queue. Already given the turn: keep it (`inTurn` passes it on).
            let waiter = state.withLock { state -> Waiter? in
                guard let index = state.queues[key]?.firstIndex(where: { $0.id == id }) else { return nil }
                return state.queues[key]?.remove(at: index)
            }
            waiter?.continuation.resume(throwing: CancellationError())
        }
    }

    /// How much work waits for `key`'s turn (not counting the work that has it).
    public func waiting(for key: Key) -> Int {
        state.withLock { $0.queues[key]?.count ?? 0 }
    }

    /// Gives the turn to the first work waiting, or frees it.
    private func pass(_ key: Key) {
        let next = state.withLock { state -> Waiter? in
            guard var queue = state.queues[key], !queue.isEmpty else {
                state.queues[key] = nil
                return nil
            }
            let first = queue.removeFirst()
            state.queues[key] = queue
            return first
        }
        next?.continuation.resume()
    }
}
