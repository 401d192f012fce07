import AttestFoundation
import AttestPlugins
import AttestPostgres
import AttestServer
import Foundation
import HTTPTypes
import Hummingbird
import Surveys
import Tenancy

/// Badges: the member's own (`GET …/me/badge`), the campus's public keys
/// (`GET …/badge-keys`) and the door check (`POST …/badges/verify`, screeners and admins).
struct BadgeRoutes: Sendable {
    let services: AttestServices

    /// The member's badge as JSON, written directly.
    static func response(_ badge: Badge) -> Response {
        var json = JSONBytes(capacity: 96 + badge.reason.utf8.count + badge.token.utf8.count)
        json.literal(#"{"color":"#)
        json.string(badge.color.rawValue)
        json.literal(#","date":"#)
        json.string(badge.date.description)
        json.literal(#","validUntil":"#)
        json.string(PostgresDate.timestamp(badge.validUntil))
        json.literal(#","reason":"#)
        json.string(badge.reason)
        json.literal(#","token":"#)
        json.string(badge.token)
        json.literal("}")
        return Response(status: .ok, headers: responseHeaders, body: ResponseBody(byteBuffer: ByteBuffer(bytes: json.bytes)))
    }

    private static let responseHeaders: HTTPFields = [.contentType: "application/json; charset=utf-8", .cacheControl: "no-store"]

    struct KeySet: ResponseEncodable {
        var keys: [[String: String]]
    }

    struct VerificationBody: ResponseEncodable {
        var valid: Bool
        var color: String?
        var date: String?
        var validUntil: String?
        var reason: String?
        var detail: String?
        /// A guest's day pass: the name of the member the guest visits ("Guest of …").
        var guest: String?
    }

    func register(campus: RouterGroup<AttestRequestContext>, signedIn: RouterGroup<AttestRequestContext>) {
        signedIn.get("me/badge") { request, context -> Response in
            let campus = try context.requireCampus()
            if let visit = context.guest { return Self.response(try await GuestHTTP.badge(visit, campus: campus, services: services)) }
            let session = try context.requireSession()
            let badge = try await services.badges.today(campus: campus, user: session.user.id, now: services.clock(), kept: session)
            return Self.response(badge)
        }

        campus.get("badge-keys") { request, context -> Response in
            let campus = try context.requireCampus()
            let keys = try await services.badges.keys.keys(campus: campus.id)
            var response = try KeySet(keys: keys.map(\.jwk)).response(from: request, context: context)
            response.headers[.cacheControl] = "public, max-age=300"
            return response
        }

        let checks = campus.group("badges").add(middleware: AuthenticationMiddleware(services: services, roles: [.screener, .admin]))
        checks.post("verify") { request, context -> VerificationBody in
            let campus = try context.requireCampus()
            let session = try context.requireSession()
            let (token, door) = try await BadgeHTTP.verification(request, context)
            return Self.body(try await BadgeHTTP.verify(token, campus: campus, door: door, screener: session.user.id, services: services))
        }
        // A photo or camera frame of the badge's QR code, read on the server (`BadgeImage`) for
        // the browsers that cannot read one; answered as `verify` answers the code's token.
        checks.post("scan") { request, context -> VerificationBody in
            let campus = try context.requireCampus()
            let session = try context.requireSession()
            let door = try BadgeHTTP.door(request)
            let token = try await BadgeHTTP.scannedToken(request, context, services: services, screener: session.user.id)
            let verdict = try await BadgeHTTP.verify(
                token, campus: campus, door: door, screener: session.user.id, scanned: true, services: services)
            if verdict == .invalid(.malformed) {
                throw Problem(
                    .unprocessableContent, slug: "not-a-badge", title: "Not a badge",
                    detail: "The image's QR code is not a member's badge (it holds something else): ask the member to show the badge.")
            }
            return Self.body(verdict)
        }
    }

    private static func body(_ verdict: BadgeVerification) -> VerificationBody {
        switch verdict {
        case .valid(let claims):
            return VerificationBody(
                valid: true, color: claims.color, date: claims.date,
                validUntil: Date(timeIntervalSince1970: TimeInterval(claims.exp)).ISO8601Format(), guest: claims.guest)
        case .invalid(let rejection):
            return VerificationBody(valid: false, reason: rejection.rawValue, detail: rejection.detail)
        }
    }

}
