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
    static let latencyBuckets: [Duration] = [
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
    func exposition(pool: PostgresClient) -> [UInt8] {
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
    func register<Context: RequestContext>(on router: Router<Context>, pool: PostgresClient) {
        router.get("metrics") { _, _ -> Response in
            Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(bytes: self.exposition(pool: pool))))
        }
    }
}

/// A request's series: the method as labelled, the router's path, the status.
struct RequestKey: Hashable {
    var method: String
    var route: String?
    var status: Int

    /// Methods no route has (WebDAV's, say) are one key, `other`, so neither the series nor
    /// this cache grow with what clients try.
    init(method: HTTPRequest.Method, route: String?, status: Int) {
        self.method = RequestSeries.methods.contains(method) ? method.rawValue : "other"
        self.route = route
        self.status = status
    }
}

/// The two series of each method, route and status, made once.
final class RequestSeries: Sendable {
    let factory: PrometheusMetricsFactory
    let made = Mutex<[RequestKey: (requests: CoreMetrics.Counter, latency: CoreMetrics.Timer)]>([:])
    init(factory: PrometheusMetricsFactory) { self.factory = factory }

    func callAsFunction(_ key: RequestKey) -> (requests: CoreMetrics.Counter, latency: CoreMetrics.Timer) {
        if let found = made.withLock({ $0[key] }) { return found }
        // Hummingbird names a path no route matched "NotFound".
        let route = key.route.flatMap { $0 == "NotFound" ? nil : Self.template($0) } ?? "unmatched"
        let method = key.method
        let series = (
            CoreMetrics.Counter(
                label: "attest_http_requests_total", dimensions: [("method", method), ("route", route), ("status", "\(key.status)")],
                factory: factory),
            CoreMetrics.Timer(label: "attest_http_request_seconds", dimensions: [("method", method), ("route", route)], factory: factory)
        )
        made.withLock { $0[key] = series }
        return series
    }

    static let methods: Set<HTTPRequest.Method> = [.get, .head, .post, .put, .patch, .delete, .options]

    /// `/v1/campuses/:campus/me` → `/v1/campuses/{campus}/me`, as in the OpenAPI document.
    static func template(_ path: String) -> String {
        "/" + path.split(separator: "/").map { $0.hasPrefix(":") ? "{\($0.dropFirst())}" : String($0) }.joined(separator: "/")
    }
}

/// Counts every request and times it: `attest_http_requests_total{method, route, status}`
/// and `attest_http_request_seconds{method, route}` (a histogram). The route is the matched
/// template, or `unmatched` for a path no route has; a method outside the usual seven is `other`.
struct RequestMetricsMiddleware<Context: RequestContext>: RouterMiddleware {
    let series: RequestSeries

    init(factory: PrometheusMetricsFactory) { series = RequestSeries(factory: factory) }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let start = ContinuousClock.now
        func record(_ status: Int) {
            let (requests, latency) = series(RequestKey(method: request.method, route: context.endpointPath, status: status))
            requests.increment()
            latency.record(duration: ContinuousClock.now - start)
        }
        return try await answering({ try await next(request, context) }, then: record)
    }
}
