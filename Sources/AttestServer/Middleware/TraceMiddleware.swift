import HTTPTypes
import Hummingbird
import Tracing

/// A server span for each request (OpenTelemetry's HTTP conventions), continuing the caller's
/// trace when the request carries a `traceparent` (a proxy's, a client's). Added only when
/// `serve` or `dev` export traces. Like the request log, it names the matched route
/// (`/v1/campuses/{campus}/shared/{token}`), never the path or the query, which can hold a
/// shared link's token, an id or an email; no header or body is recorded.
struct TraceMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var parent = ServiceContext.current ?? .topLevel
        InstrumentationSystem.instrument.extract(request.headers, into: &parent, using: HTTPFieldsExtractor())
        let span = startSpan("\(request.method)", context: parent, ofKind: .server)
        span.attributes["http.request.method"] = request.method.rawValue
        func finish(_ status: Int) {
            let route = RequestSeries.route(context.endpointPath)
            span.operationName = "\(request.method) \(route)"
            span.updateAttributes { attributes in
                attributes["http.route"] = route
                attributes["http.response.status_code"] = status
            }
            if status >= 500 { span.setStatus(.init(code: .error)) }
        }
        do {
            var response = try await ServiceContext.$current.withValue(span.context) {
                try await answering({ try await next(request, context) }, then: finish)
            }
            // Ended once the body is written: a streamed export's time is the request's.
            let body = response.body
            response.body = ResponseBody(contentLength: body.contentLength) { writer in
                defer { span.end() }
                try await body.write(writer)
            }
            return response
        } catch {
            span.recordError(error)
            span.end()
            throw error
        }
    }
}

/// Reads a tracer's propagation fields (`traceparent`, `tracestate`) from request headers.
struct HTTPFieldsExtractor: Extractor {
    func extract(key: String, from headers: HTTPFields) -> String? {
        HTTPField.Name(key).flatMap { headers[$0] }
    }
}
