import Foundation

/// Runs blocking work (a socket read, `initdb`, `pg_ctl`) on a thread of its own and awaits
/// it. Swift Testing runs tests on the cooperative pool, which has one thread per core (two
/// here): a test blocking on one of them while another test blocks the other leaves every
/// in-process server in the test process without a thread. Their servers then stop accepting
/// connections (Hummingbird takes each from an async sequence), and timing tests elsewhere
/// waited 15 s for an answer.
public func offThePool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try work() }) }.start()
    }
}
