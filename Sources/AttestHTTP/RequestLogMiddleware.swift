import Hummingbird
import Logging

/// One structured log line per request: method, path, status, duration. Never headers,
/// query strings or bodies: they carry tokens and health answers.
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
                    "method": "\(request.method)", "path": "\(request.uri.path)", "status": "\(status)",
                    "ms": "\((milliseconds * 10).rounded() / 10)",
                ])
        }
        do {
            let response = try await next(request, context)
            log(response.status.code)
            return response
        } catch let error as any HTTPResponseError {
            log(error.status.code)
            throw error
        } catch {
            log(500)
            throw error
        }
    }
}
