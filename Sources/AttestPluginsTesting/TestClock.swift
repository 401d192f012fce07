import Foundation
import Synchronization

/// A clock a test sets: pass `read` where the platform or a plugin takes `() -> Date`.
public final class TestClock: Sendable {
    private let now: Mutex<Date>

    public init(_ date: Date) { now = Mutex(date) }

    /// From an ISO 8601 instant (`2026-11-20T14:00:00Z`).
    public convenience init(_ text: String) throws { self.init(try Date(text, strategy: .iso8601)) }

    public func set(_ date: Date) { now.withLock { $0 = date } }

    public func set(_ text: String) throws {
        let date = try Date(text, strategy: .iso8601)
        now.withLock { $0 = date }
    }

    /// Moves the clock on by `seconds`.
    public func advance(by seconds: TimeInterval) { now.withLock { $0 = $0.addingTimeInterval(seconds) } }

    /// The clock as a function.
    public var read: @Sendable () -> Date { { self.now.withLock { $0 } } }
}
