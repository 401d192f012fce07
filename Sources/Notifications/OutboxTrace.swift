import Tracing

/// The trace an event was caused in, kept with the event (`notification_outbox.trace_parent`)
/// so that its delivery, later and on any server, continues that trace: a submission's trace
/// runs from its request through its batch to the webhook's receiver.
public enum OutboxTrace {
    /// The current span's W3C `traceparent`, or "" when nothing is traced (no tracer
    /// bootstrapped, or no span here): an event then keeps none.
    public static func current() -> String {
        guard let context = ServiceContext.current else { return "" }
        var carrier: [String: String] = [:]
        InstrumentationSystem.instrument.inject(context, into: &carrier, using: FieldInjector())
        return carrier["traceparent"] ?? ""
    }

    /// Whether a tracer is bootstrapped (`serve` with `OTEL_EXPORTER_OTLP_ENDPOINT`):
    /// deliveries are spans only then.
    static var isOn: Bool { !(InstrumentationSystem.tracer is NoOpTracer) }

    /// The context a delivery's span continues: the stored `traceparent`'s, or a new trace.
    static func context(traceParent: String?) -> ServiceContext {
        var context = ServiceContext.topLevel
        if let traceParent, !traceParent.isEmpty {
            InstrumentationSystem.instrument.extract(["traceparent": traceParent], into: &context, using: FieldExtractor())
        }
        return context
    }

    struct FieldInjector: Injector {
        func inject(_ value: String, forKey key: String, into carrier: inout [String: String]) { carrier[key] = value }
    }

    struct FieldExtractor: Extractor {
        func extract(key: String, from carrier: [String: String]) -> String? { carrier[key] }
    }
}
