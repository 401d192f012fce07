import Hummingbird
import Identity

/// In front of a member's own private data (journal, episodes, exports, links, keeping,
/// profile, health records), after `AuthenticationMiddleware`: a session an operator minted is
/// refused (403 `/problems/operator-session`), and each member's requests there are counted in this
/// server's memory (`RateLimits.ownDataRequestsPerMember`), so that one member looping on
/// refused writes or exports is refused before anything reaches the database. The refusal
/// waits (until the allowance is back, at most a second) before it is sent: a loop on one
/// connection then costs the server one cheap answer a second, not thousands.
package struct OwnDataMiddleware: RouterMiddleware {
    package typealias Context = AttestRequestContext
    package let limiters: RequestLimiters

    package init(limiters: RequestLimiters) { self.limiters = limiters }

    package func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let session = try context.requireSession()
        guard !session.byOperator else { throw Problem.operatorSession }
        let user = session.user
        if let wait = limiters.ownDataByMember.take("\(user.campusID)/\(user.id)") {
            try await Task.sleep(for: min(wait, .seconds(1)))
            throw Problem.tooManyRequests(
                "You sent more requests for your own private data (journal, episodes, links, health records) than a member may at once.",
                retryAfter: wait)
        }
        return try await next(request, context)
    }
}
