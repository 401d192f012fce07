import Hummingbird
import Metrics
import Prometheus
import Synchronization

/// A request's series: the method as labelled, the router's path, the status.
package struct RequestKey: Hashable {
    package var method: String
    package var route: String?
    package var status: Int

    /// Methods no route has (WebDAV's, say) are one key, `other`, so neither the series nor
    /// this cache grow with what clients try.
    package init(method: HTTPRequest.Method, route: String?, status: Int) {
        self.method = RequestSeries.methods.contains(method) ? method.rawValue : "other"
        self.route = route
        self.status = status
    }
}

/// The two series of each method, route and status, made once.
package final class RequestSeries: Sendable {
    package let factory: PrometheusMetricsFactory
    package let made = Mutex<[RequestKey: (requests: CoreMetrics.Counter, latency: CoreMetrics.Timer)]>([:])
    package init(factory: PrometheusMetricsFactory) { self.factory = factory }

    package func callAsFunction(_ key: RequestKey) -> (requests: CoreMetrics.Counter, latency: CoreMetrics.Timer) {
        if let found = made.withLock({ $0[key] }) { return found }
        let route = Self.route(key.route)
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

    package static let methods: Set<HTTPRequest.Method> = [.get, .head, .post, .put, .patch, .delete, .options]

    /// The template of a matched route, `unmatched` for a path no route has (Hummingbird
    /// names it "NotFound") or none.
    package static func route(_ endpointPath: String?) -> String {
        endpointPath.flatMap { $0 == "NotFound" ? nil : template($0) } ?? "unmatched"
    }

    /// `/v1/campuses/:campus/me` → `/v1/campuses/{campus}/me`, as in the OpenAPI document.
    package static func template(_ path: String) -> String {
        "/" + path.split(separator: "/").map { $0.hasPrefix(":") ? "{\($0.dropFirst())}" : String($0) }.joined(separator: "/")
    }
}

/// Counts every request and times it: `attest_http_requests_total{method, route, status}`
/// and `attest_http_request_seconds{method, route}` (a histogram). The route is the matched
/// template, or `unmatched` for a path no route has; a method outside the usual seven is `other`.
package struct RequestMetricsMiddleware<Context: RequestContext>: RouterMiddleware {
    package let series: RequestSeries

    package init(factory: PrometheusMetricsFactory) { series = RequestSeries(factory: factory) }

    package func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let start = ContinuousClock.now
        func record(_ status: Int) {
            let (requests, latency) = series(RequestKey(method: request.method, route: context.endpointPath, status: status))
            requests.increment()
            latency.record(duration: ContinuousClock.now - start)
        }
        return try await answering({ try await next(request, context) }, then: record)
    }
}
