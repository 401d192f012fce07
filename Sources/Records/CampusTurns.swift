import Foundation
import Synchronization

/// Changes to one campus's records, one at a time in this process, in the order they came:
/// the turn is taken before a database connection, so that changes waiting for the campus's
/// records lock wait here, not each holding a connection from the pool. (Sixteen deliveries
/// for one campus at once took every one of a server's connections while fifteen of them
/// waited for the lock; the pool's other requests then waited too.) The advisory lock still
/// orders changes across servers.
final class CampusTurns: Sendable {
    private struct Waiter {
        var id: Int
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        /// The campuses whose turn is taken, each with the changes waiting for it, first first.
        var queues: [UUID: [Waiter]] = [:]
        var next = 0
    }

    private let state = Mutex(State())

    /// Runs `body` in `campus`'s turn: after every change that asked for it before. Throws
    /// `CancellationError` when the task is cancelled while it waits.
    func inTurn<Result>(of campus: UUID, _ body: () async throws -> Result) async throws -> Result {
        try await take(campus)
        defer { pass(campus) }
        return try await body()
    }

    private func take(_ campus: UUID) async throws {
        let id = state.withLock { state in
            defer { state.next &+= 1 }
            return state.next
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                enum Now { case go, cancelled, wait }
                let now = state.withLock { state -> Now in
                    if Task.isCancelled { return .cancelled }
                    guard state.queues[campus] != nil else {
                        state.queues[campus] = []
                        return .go
                    }
                    state.queues[campus]?.append(Waiter(id: id, continuation: continuation))
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
                guard let index = state.queues[campus]?.firstIndex(where: { $0.id == id }) else { return nil }
                return state.queues[campus]?.remove(at: index)
            }
            waiter?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Gives the turn to the first change waiting, or frees it.
    private func pass(_ campus: UUID) {
        let next = state.withLock { state -> Waiter? in
            guard var queue = state.queues[campus], !queue.isEmpty else {
                state.queues[campus] = nil
                return nil
            }
            let first = queue.removeFirst()
            state.queues[campus] = queue
            return first
        }
        next?.continuation.resume()
    }
}
