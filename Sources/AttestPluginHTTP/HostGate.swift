import NIOCore
import NIOPosix
import Synchronization

/// At most `limit` requests to one host at once; the rest wait their turn in order, each at
/// most its own timeout. A request's deadline starts when it has its turn, so time spent
/// queued behind other requests to the host is not taken from it (async-http-client counts
/// a deadline from the call, the wait for one of the host's connections included).
final class HostGate: Sendable {
    private enum Ticket {
        /// Given a number, not yet waiting.
        case numbered
        case waiting(CheckedContinuation<Bool, Never>)
        /// Cancelled or timed out before it waited.
        case abandoned
    }

    private struct State {
        let limit: Int
        var available: Int
        var next: UInt64 = 0
        var tickets: [UInt64: Ticket] = [:]
        /// Waiting tickets in arrival order; those abandoned since are skipped.
        var queue: [UInt64] = []
    }

    private let state: Mutex<State>

    init(limit: Int) { state = Mutex(State(limit: max(1, limit), available: max(1, limit))) }

    /// No turn taken and nobody waiting or about to: the gate can be let go.
    var isIdle: Bool { state.withLock { $0.available == $0.limit && $0.tickets.isEmpty } }

    /// Takes a turn, waiting for one at most `timeout`: false when none came in time or the
    /// task was cancelled (then there is no turn to give back). A true must be matched by
    /// `leave()`.
    func enter(within timeout: TimeAmount) async -> Bool {
        let number: UInt64? = state.withLock { state in
            if state.available > 0 {
                state.available -= 1
                return nil
            }
            state.next &+= 1
            state.tickets[state.next] = .numbered
            return state.next
        }
        guard let number else { return true }
        let timer = MultiThreadedEventLoopGroup.singleton.any().scheduleTask(in: timeout) { self.abandon(number) }
        defer { timer.cancel() }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let answer: Bool? = state.withLock { state in
                    if case .abandoned? = state.tickets[number] {
                        state.tickets[number] = nil
                        return false
                    }
                    if state.available > 0 {
                        state.available -= 1
                        state.tickets[number] = nil
                        return true
                    }
                    state.tickets[number] = .waiting(continuation)
                    state.queue.append(number)
                    return nil
                }
                if let answer { continuation.resume(returning: answer) }
            }
        } onCancel: {
            abandon(number)
        }
    }

    /// How many wait for a turn now.
    var waiting: Int {
        state.withLock { state in
            state.tickets.values.reduce(0) { count, ticket in
                if case .waiting = ticket { count + 1 } else { count }
            }
        }
    }

    /// Gives a turn back: to the longest waiting, if any waits.
    func leave() {
        let next: CheckedContinuation<Bool, Never>? = state.withLock { state in
            while !state.queue.isEmpty {
                let number = state.queue.removeFirst()
                if case .waiting(let continuation)? = state.tickets.removeValue(forKey: number) { return continuation }
            }
            state.available += 1
            return nil
        }
        next?.resume(returning: true)
    }

    private func abandon(_ number: UInt64) {
        let waiting: CheckedContinuation<Bool, Never>? = state.withLock { state in
            switch state.tickets[number] {
            case .numbered?:
                state.tickets[number] = .abandoned
                return nil
            case .waiting(let continuation)?:
                state.tickets[number] = nil
                return continuation
            case .abandoned?, nil:
                return nil  // already given a turn, or already abandoned
            }
        }
        waiting?.resume(returning: false)
    }
}
