import AttestPostgres
import Foundation
import Tenancy

/// The sign-in use case, one call from a route or a browser's callback: the campus's issuers,
/// the ID token verified against them (and the nonce, when the sign-in was started with one),
/// the token admitted once, the member found or onboarded, a session issued.
public struct SignInService: Sendable {
    let issuers: OIDCIssuerStore
    let verifier: IDTokenVerifier
    let guardian: SignInGuard
    let users: UserStore
    let sessions: SessionStore

    public init(issuers: OIDCIssuerStore, verifier: IDTokenVerifier, guardian: SignInGuard, users: UserStore, sessions: SessionStore) {
        (self.issuers, self.verifier, self.guardian, self.users, self.sessions) = (issuers, verifier, guardian, users, sessions)
    }

    /// A session for the member `idToken` names at `campus`; throws `IdentityError` (a
    /// refusal, `refusesSignIn`, names the check that failed).
    public func signIn(campus: Campus, idToken: String, nonce: String?) async throws -> (token: String, expiresAt: Date, user: User) {
        let accepted = try await issuers.list(campus: campus.id)
        guard !accepted.isEmpty else { throw IdentityError.noIssuer }
        let identity = try await verifier.verify(idToken: idToken, campus: campus, issuers: accepted, nonce: nonce)
        try await guardian.admit(identity, campus: campus.id, nonce: nonce)
        let user = try await users.onboard(campus: campus, identity: identity)
        let issued = try await sessions.issue(campus: campus, user: user.id)
        return (issued.token, issued.expiresAt, user)
    }
}
