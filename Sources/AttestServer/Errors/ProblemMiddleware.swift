import AttestPostgres
import Foundation
import Hummingbird
import Identity
import Journal
import Records
import Surveys
import Tenancy

/// The one place errors become responses: `Problem`s pass through, the core modules' errors
/// (Surveys', Identity's, Tenancy's, Journal's and the episodes') are mapped by `Problem+Core`, Hummingbird's own errors (unknown route, wrong method, body
/// too large) and database outages are mapped here, anything else is logged and answered
/// with a bare 500 that leaks nothing.
public struct ProblemMiddleware<Context: RequestContext>: RouterMiddleware {
    /// The methods of each path, for 405 rather than 404 when only the method is wrong.
    package let routeMethods: RouteMethods

    public init(routeMethods: RouteMethods = RouteMethods()) { self.routeMethods = routeMethods }

    public func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let problem as Problem {
            throw problem
        } catch let error as HTTPError {
            if error.status == .notFound, let allowed = routeMethods.allowed(path: request.uri.path),
                !allowed.contains(request.method.rawValue)
            {
                throw Self.problem(for: HTTPError(.methodNotAllowed, headers: [.allow: allowed.joined(separator: ", ")]), request: request)
            }
            throw Self.problem(for: error, request: request)
        } catch let error as SurveysError {
            let problem = Problem(error)
            if problem.status.code >= 500 { context.logger.error("request failed", metadata: ["error": "\(error)"]) }
            throw problem
        } catch let error as IdentityError {
            if error.refusesSignIn { context.logger.info("sign-in refused", metadata: ["reason": "\(error.logReason)"]) }
            throw Problem(error)
        } catch let error as CampusError {
            throw Problem(error)
        } catch let error as GuestError {
            throw Problem(error)
        } catch let error as JournalError {
            throw Problem(error)
        } catch let error as EpisodeError {
            throw Problem(error)
        } catch let error as RecordsError {
            throw Problem(error)
        } catch let error as SmartHealthCards.Refused {
            throw Problem(error)
        } catch let error as MemberQuotas.Exceeded {
            throw Problem(error)
        } catch let error as PostgresError where error.code == .encoding {
            // A value the database cannot hold (a text with a NUL), which the wrapper refuses to
            // send and no reader refused first: the client's to mend, not the server's. Readers
            // name the field where they can (ObjectReader.text).
            context.logger.info("a value the database cannot hold", metadata: ["error": "\(error.code)"])
            throw Problem(
                .unprocessableContent, slug: "validation", title: "Invalid request",
                detail: "A text in the request holds a character that cannot be stored (such as NUL, \\u0000): remove it and send again.")
        } catch let error as PostgresError where error.isForeignKeyViolation {
            // What the request writes refers to a row gone since it was read: a member or a
            // campus erased while the request ran (its session was read just before). Not the
            // server's fault, and nothing was kept.
            context.logger.warning("a row the request refers to was removed meanwhile", metadata: ["table": "\(error.table ?? "")"])
            throw Problem.goneMeanwhile
        } catch let error as PostgresError where error.isTransient {
            context.logger.warning("database unavailable", metadata: ["error": "\(error)"])
            throw Problem.databaseUnavailable
        } catch {
            context.logger.error("unhandled error", metadata: ["error": "\(String(reflecting: type(of: error))): \(error)"])
            throw Problem.internalError
        }
    }

    package static func problem(for error: HTTPError, request: Request) -> Problem {
        switch error.status {
        case .notFound:
            return .notFound("Nothing is served at \(request.uri.path). The API lives under /v1; see /openapi.yaml.")
        case .methodNotAllowed:
            return Problem(
                .methodNotAllowed, slug: "method-not-allowed", title: "Method not allowed",
                detail:
                    "\(request.method) is not supported on \(request.uri.path); it answers \(error.headers[.allow] ?? "other methods") (see /openapi.yaml).",
                headers: error.headers)
        case .contentTooLarge:
            return Problem(
                .contentTooLarge, slug: "body-too-large", title: "Request body too large",
                detail: "The request body is larger than this server accepts. Send a smaller body.")
        default:
            return Problem(
                error.status, slug: "http-\(error.status.code)", title: error.status.reasonPhrase,
                detail: error.body ?? error.status.reasonPhrase, headers: error.headers)
        }
    }
}
