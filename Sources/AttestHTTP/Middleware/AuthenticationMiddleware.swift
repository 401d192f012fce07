import Hummingbird
import Identity
import Tenancy

/// Requires `Authorization: Bearer <session token>` valid at this campus; otherwise 401
/// with `WWW-Authenticate: Bearer`. With `roles`, the user must hold one of them (else 403).
/// A client address whose unknown tokens used up its allowance (each costs a database read)
/// gets 429 for any token this server does not hold in memory, until its bucket refills.
struct AuthenticationMiddleware: RouterMiddleware {
    typealias Context = AttestRequestContext
    let sessions: SessionStore
    let bearer: BearerAuthentication
    var roles: Set<Role> = []

    init(services: AttestServices, roles: Set<Role> = []) {
        sessions = services.sessions
        bearer = BearerAuthentication(services: services)
        self.roles = roles
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let campus = try context.requireCampus()
        let session = try await bearer.authenticate(
            request, context, kept: { sessions.cached(campus: campus.id, token: $0) },
            read: { try await sessions.authenticate(campus: campus.id, token: $0) })
        if !roles.isEmpty, !session.user.roles.contains(where: roles.contains) {
            throw Problem(
                .forbidden, slug: "forbidden", title: "Forbidden",
                detail: "This needs the role \(roles.map(\.rawValue).sorted().joined(separator: " or ")); "
                    + "ask a campus administrator to grant it.")
        }
        var context = context
        context.session = session
        return try await next(request, context)
    }
}

/// A request's bearer token to what it stands for at the request's campus, or the 401 or 429
/// that says why not: for the middleware, and for a route that reads the session together
/// with something else (the submission reads the member's past with it).
struct BearerAuthentication: Sendable {
    let unknownTokens: RateLimiter
    let sessions: SessionStore

    init(services: AttestServices) { (unknownTokens, sessions) = (services.limiters.unknownTokensByAddress, services.sessions) }

    /// `kept` answers from memory; `read` asks the database, and counts against the client
    /// address's allowance of unknown tokens when it finds nothing (a malformed token is one
    /// neither is asked about, counted the same). A token this server still recognises (kept,
    /// though no longer trusted) is read even when the allowance is spent.
    func authenticate<Found>(
        _ request: Request, _ context: AttestRequestContext, kept: (SessionStore.SessionToken) -> Found?,
        read: (SessionStore.SessionToken) async throws -> Found?
    ) async throws -> Found {
        guard let header = request.headers[.authorization] else {
            throw Problem.unauthorized("Send the session token as Authorization: Bearer <token>.", error: nil)
        }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else {
            throw Problem.unauthorized("The Authorization header must be Bearer <token>.", error: "invalid_request")
        }
        let token = SessionStore.SessionToken(String(parts[1]))
        var known = token.flatMap(kept)
        if known == nil {
            let address = context.clientAddress ?? "unknown"
            if let wait = unknownTokens.exhausted(address),
                !(try token.map { sessions.recognises(campus: try context.requireCampus().id, token: $0) } ?? false)
            {
                throw Problem.tooManyRequests(
                    "Too many requests with session tokens this campus does not know came from your address.", retryAfter: wait)
            }
            if let token { known = try await read(token) }
            if known == nil { _ = unknownTokens.take(address) }
        }
        guard let known else {
            throw Problem.unauthorized(
                "The session token is not valid at this campus: it is unknown here, expired or revoked. Sign in again.",
                error: "invalid_token")
        }
        return known
    }
}

extension Problem {
    /// 401 with the `WWW-Authenticate: Bearer` challenge (RFC 6750).
    static func unauthorized(_ detail: String, error: String? = nil) -> Problem {
        var challenge = "Bearer realm=\"campus-attest\""
        if let error { challenge += ", error=\"\(error)\"" }
        return Problem(
            .unauthorized, slug: "unauthorized", title: "Unauthorized", detail: detail,
            headers: [.wwwAuthenticate: challenge])
    }
}
