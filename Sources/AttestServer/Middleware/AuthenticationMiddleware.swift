import AttestPlugins
import Foundation
import Hummingbird
import Identity
import Tenancy

/// Requires `Authorization: Bearer <session token>` valid at this campus; otherwise 401
/// with `WWW-Authenticate: Bearer`. With `roles`, the user must hold one of them (else 403).
/// A client address whose unknown tokens used up its allowance (each costs a database read)
/// gets 429 for any token this server does not hold in memory, until its bucket refills.
package struct AuthenticationMiddleware: RouterMiddleware {
    package typealias Context = AttestRequestContext
    package let sessions: SessionStore
    package let bearer: BearerAuthentication
    package var roles: Set<Role> = []

    package init(services: AttestServices, roles: Set<Role> = []) {
        sessions = services.sessions
        bearer = BearerAuthentication(services: services)
        self.roles = roles
    }

    package func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let campus = try context.requireCampus()
        if let visit = try await bearer.guest(request, context) {
            // A guest's day pass: only routes open to every member take it, and of those only
            // the survey, the submission and the badge read it (the others need `session`: 401).
            guard roles.isEmpty else {
                throw Problem.unauthorized(Problem.guestPassScope, error: "insufficient_scope")
            }
            var context = context
            context.guest = visit
            return try await next(request, context)
        }
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

/// A session token to what it stands for at the request's campus, one rule for the API's
/// bearer tokens and the pages' cookies: a session this server keeps costs no query; any
/// other is read from the database unless the client address's allowance of unknown tokens
/// (each costs a read) is spent, and a read that finds nothing spends from it. A token this
/// server still recognises (kept, though no longer trusted: its campus's generation moved)
/// is read even when the allowance is spent, so a member is not refused for their neighbours.
package struct SessionResolver: Sendable {
    package let unknownTokens: RateLimiter
    package let sessions: SessionStore

    package init(services: AttestServices) { (unknownTokens, sessions) = (services.limiters.unknownTokensByAddress, services.sessions) }

    package enum Outcome<Found> {
        case found(Found)
        /// Unknown here, expired or revoked (or not the shape of a token).
        case unknown
        /// Not asked of the database: the address's allowance is spent for this long.
        case limited(Duration)
    }

    /// `kept` answers from memory; `read` asks the database. A malformed token (nil) is asked
    /// of neither and counted as unknown.
    package func resolve<Found>(
        _ token: SessionStore.SessionToken?, campus: CampusID, address: String?, kept: (SessionStore.SessionToken) -> Found?,
        read: (SessionStore.SessionToken) async throws -> Found?
    ) async throws -> Outcome<Found> {
        if let found = token.flatMap(kept) { return .found(found) }
        let address = address ?? "unknown"
        if let wait = unknownTokens.exhausted(address), !(token.map { sessions.recognises(campus: campus, token: $0) } ?? false) {
            return .limited(wait)
        }
        if let token, let found = try await read(token) { return .found(found) }
        _ = unknownTokens.take(address)
        return .unknown
    }
}

/// A request's bearer token to what it stands for at the request's campus (`SessionResolver`),
/// or the 401 or 429 that says why not: for the middleware, and for a route that reads the
/// session together with something else (the submission reads the member's past with it).
package struct BearerAuthentication: Sendable {
    package let resolver: SessionResolver

    let guests: GuestStore
    let clock: @Sendable () -> Date

    package init(services: AttestServices) {
        resolver = SessionResolver(services: services)
        (guests, clock) = (services.guests, services.clock)
    }

    /// The guest's visit when the request's bearer token is a guest's day pass (`guest.…`),
    /// nil for any other token; 401 for a pass this campus does not know or that has expired.
    /// An unknown pass spends from the address's allowance as an unknown session token does.
    package func guest(_ request: Request, _ context: AttestRequestContext) async throws -> GuestVisit? {
        guard let header = request.headers[.authorization] else { return nil }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer", GuestStore.isGuestToken(String(parts[1])) else { return nil }
        let campus = try context.requireCampus()
        let address = context.clientAddress ?? "unknown"
        if let wait = resolver.unknownTokens.exhausted(address) {
            throw Problem.tooManyRequests(
                "Too many requests with session tokens this campus does not know came from your address.", retryAfter: wait)
        }
        guard let visit = try await guests.session(campus: campus.id, token: String(parts[1]), now: clock()) else {
            _ = resolver.unknownTokens.take(address)
            throw Problem.unauthorized(
                "The guest pass is not valid at this campus: it is unknown here or its day is over. Register the visit again.",
                error: "invalid_token")
        }
        return visit
    }

    package func authenticate<Found>(
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
        switch try await resolver.resolve(
            token, campus: try context.requireCampus().id, address: context.clientAddress, kept: kept, read: read)
        {
        case .found(let found): return found
        case .limited(let wait):
            throw Problem.tooManyRequests(
                "Too many requests with session tokens this campus does not know came from your address.", retryAfter: wait)
        case .unknown:
            throw Problem.unauthorized(
                "The session token is not valid at this campus: it is unknown here, expired or revoked. Sign in again.",
                error: "invalid_token")
        }
    }
}

extension Problem {
    /// What a guest's day pass is told on a route that does not take it.
    package static let guestPassScope = "A guest's pass opens the survey and the guest's badge, nothing else."

    /// 401 with the `WWW-Authenticate: Bearer` challenge (RFC 6750).
    package static func unauthorized(_ detail: String, error: String? = nil) -> Problem {
        var challenge = "Bearer realm=\"campus-attest\""
        if let error { challenge += ", error=\"\(error)\"" }
        return Problem(
            .unauthorized, slug: "unauthorized", title: "Unauthorized", detail: detail,
            headers: [.wwwAuthenticate: challenge])
    }
}
