import Hummingbird
import Logging

/// One structured log line per request: method, route, status, duration. The route is the
/// matched template (`/v1/campuses/{campus}/shared/{token}`), as the metrics label it, never
/// the path: a path can hold a shared link's token, an id or an email. Never headers, query
/// strings or bodies: they carry tokens and health answers.
public struct RequestLogMiddleware<Context: RequestContext>: RouterMiddleware {
    public init() {}

    public func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        let start = ContinuousClock.now
        func log(_ status: Int) {
            let elapsed = ContinuousClock.now - start
            let milliseconds = Double(elapsed.components.attoseconds) / 1e15 + Double(elapsed.components.seconds) * 1000
            context.logger.info(
                "request",
                metadata: [
                    "method": "\(request.method)", "route": "\(RequestSeries.route(context.endpointPath))", "status": "\(status)",
                    "ms": "\((milliseconds * 10).rounded() / 10)",
                ])
        }
        return try await answering({ try await next(request, context) }, then: log)
    }
}

/// Runs `respond` and then calls `finished` with the status the client gets: the response's,
/// an `HTTPResponseError`'s, or 500 for any other error. What it answers or throws passes through.
package func answering(_ respond: () async throws -> Response, then finished: (Int) -> Void) async throws -> Response {
    do {
        let response = try await respond()
        finished(response.status.code)
        return response
    } catch let error as any HTTPResponseError {
        finished(error.status.code)
        throw error
    } catch {
        finished(500)
        throw error
    }
}
