import AttestServer
import Foundation
import Hummingbird
import Identity
import Tenancy

/// The JSON shape of a user in responses.
struct UserBody: ResponseEncodable, Codable {
    var id: String
    var email: String
    var displayName: String
    var roles: [String]

    init(_ user: User) {
        id = user.id.description
        email = user.email
        displayName = user.displayName
        roles = user.roles.map(\.rawValue)
    }
}

/// Sign-in, sign-out and the signed-in user's profile.
struct SessionRoutes: Sendable {
    let services: AttestServices

    struct SessionCreated: ResponseEncodable {
        var token: String
        var expiresAt: String
        var user: UserBody
    }

    struct Me: ResponseEncodable {
        struct CampusInfo: Codable {
            var slug: String
            var name: String
            var timeZone: String
        }
        var id: String
        var email: String
        var displayName: String
        var roles: [String]
        var campus: CampusInfo
        /// The campus-local date right now.
        var today: String
    }

    struct NonceIssued: ResponseEncodable {
        var nonce: String
        var expiresAt: String
    }

    func register(on campusRoutes: RouterGroup<AttestRequestContext>) {
        campusRoutes.post("sessions") { request, context -> EditedResponse<SessionCreated> in
            try await signIn(request, context)
        }
        // A nonce for a sign-in the client starts with its identity provider: the ID token it
        // brings back must carry it, and it is good once, for ten minutes.
        campusRoutes.post("sessions/nonces") { _, context -> EditedResponse<NonceIssued> in
            let campus = try context.requireCampus()
            try services.limiters.admitSignIn(address: context.clientAddress, campus: campus.slug)
            let issued = try await services.signIns.issueNonce(campus: campus.id)
            var response = EditedResponse(
                status: .created, response: NonceIssued(nonce: issued.nonce, expiresAt: issued.expiresAt.ISO8601Format()))
            response.headers[.cacheControl] = "no-store"
            return response
        }
        let signedIn = campusRoutes.group().add(middleware: AuthenticationMiddleware(services: services))
        signedIn.delete("sessions/current") { request, context -> Response in
            let campus = try context.requireCampus()
            let token = String(request.headers[.authorization]?.split(separator: " ", maxSplits: 1).last ?? "")
            try await services.sessions.revoke(campus: campus.id, token: token)
            return Response(status: .noContent)
        }
        signedIn.get("me") { _, context -> Me in
            let campus = try context.requireCampus()
            let user = try context.requireSession().user
            return Me(
                id: user.id.description, email: user.email, displayName: user.displayName, roles: user.roles.map(\.rawValue),
                campus: .init(slug: campus.slug, name: campus.name, timeZone: campus.timeZone),
                today: campus.localDate(at: Date()).description)
        }
    }

    private func signIn(_ request: Request, _ context: AttestRequestContext) async throws -> EditedResponse<SessionCreated> {
        let campus = try context.requireCampus()
        try services.limiters.admitSignIn(address: context.clientAddress, campus: campus.slug)
        // The schema lets a client send more (an identity provider's library may): not refused.
        var reader = ObjectReader(try await request.jsonObject(context: context), fields: nil)
        let idToken = reader.value("idToken", required: "the ID token from your sign-in provider", wrong: "must be a non-empty string") {
            if case .string(let text) = $0, !text.isEmpty { text } else { nil }
        }
        let nonce = reader.value("nonce", wrong: "must be a nonce from POST …/sessions/nonces, unchanged") {
            if case .string(let text) = $0, SessionStore.isWellFormed(text) { text } else { nil }
        }
        try reader.finish()
        guard let idToken else { throw Problem.validation(reader.problems) }
        let session = try await services.signIn.signIn(campus: campus, idToken: idToken, nonce: nonce)
        return EditedResponse(
            status: .created,
            response: SessionCreated(token: session.token, expiresAt: session.expiresAt.ISO8601Format(), user: UserBody(session.user)))
    }
}
