import AttestPlugins
import Foundation
import Synchronization

/// A notification sink that keeps what it is given and answers as a test says: `.delivered`
/// by default, or the results queued with `answer(_:)`, in order.
public final class RecordingSink: NotificationSink {
    private let state = Mutex<(received: [AttestNotification], payloads: [Data], results: [DeliveryResult])>(([], [], []))

    public init() {}

    /// The notifications delivered to it, in order.
    public var received: [AttestNotification] { state.withLock { $0.received } }
    /// The payloads, as the sink was handed them.
    public var payloads: [Data] { state.withLock { $0.payloads } }

    /// The results of the next deliveries, in order; `.delivered` once they run out.
    public func answer(_ results: DeliveryResult...) { state.withLock { $0.results.append(contentsOf: results) } }

    public func deliver(_ notification: AttestNotification, payload: Data, context: PluginContext) async -> DeliveryResult {
        state.withLock { state in
            state.received.append(notification)
            state.payloads.append(payload)
            return state.results.isEmpty ? .delivered : state.results.removeFirst()
        }
    }
}
