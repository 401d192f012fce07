import AttestPostgres
import Hummingbird
import Metrics
import Prometheus
import Surveys
import Synchronization

/// One server's metrics, in one Prometheus registry: what the routes, the submission path,
/// the outbox and the connection pool count. `GET /metrics` writes it out as Prometheus text.
///
/// Labels are only ever methods, route templates (`/v1/campuses/{campus}/attestations`,
/// never a slug), status codes and fixed outcome names, so their number is bounded whatever
/// clients send, and no label names a campus, a member, a token or an answer.
public final class ServerMetrics: Sendable {
    public let registry: PrometheusCollectorRegistry
    /// The swift-metrics factory the server's services record through.
    public let factory: PrometheusMetricsFactory
    private let connectionsOpen, connectionsIdle, connectionsWaiting: Prometheus.Gauge

    /// Latency buckets from 1 ms (a cached read) to 5 s (a request that gave up waiting).
    package static let latencyBuckets: [Duration] = [
        .milliseconds(1), .microseconds(2_500), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50),
        .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(2_500), .seconds(5),
    ]

    public init(registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry()) {
        self.registry = registry
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = Self.latencyBuckets
        factory.valueHistogramBuckets["attest_write_batch_size"] = SubmissionMetrics.batchSizeBuckets
        self.factory = factory
        func pool(_ state: String) -> Prometheus.Gauge {
            registry.makeGauge(
                descriptor: MetricNameDescriptor(
                    metricName: "attest_db_connections", unitName: "",
                    helpText: "Database connections of this server's pool: open, idle, and callers waiting for one."),
                labels: [("state", state)])
        }
        connectionsOpen = pool("open")
        connectionsIdle = pool("idle")
        connectionsWaiting = pool("waiting")
    }

    /// Prometheus text (version 0.0.4), with the pool's figures read now.
    package func exposition(pool: PostgresClient) -> [UInt8] {
        let now = pool.statistics
        connectionsOpen.set(Int64(now.open))
        connectionsIdle.set(Int64(now.idle))
        connectionsWaiting.set(Int64(now.waiting))
        var buffer: [UInt8] = []
        buffer.reserveCapacity(16_384)
        registry.emit(into: &buffer)
        return buffer
    }

    /// `GET /metrics` on `router`.
    package func register<Context: RequestContext>(on router: Router<Context>, pool: PostgresClient) {
        router.get("metrics") { _, _ -> Response in
            Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(bytes: self.exposition(pool: pool))))
        }
    }
}
