import AttestFoundation
import AttestPlugins
import AttestServer
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import Notifications
import Surveys
import Tenancy

/// One-click unsubscribe (RFC 8058), no session: `GET /v1/campuses/{campus}/unsubscribe?token=`
/// shows a page with a button and changes nothing (a mail scanner fetching every link stops
/// nothing); `POST` the same URL (what a mail client sends for `List-Unsubscribe-Post:
/// List-Unsubscribe=One-Click`, or the page's button) turns that channel off for that member.
/// An unknown, altered or other campus's token is one 404, and an address trying many is slowed.
struct UnsubscribeRoutes: Sendable {
    let services: AttestServices

    /// The tokens of `campus`, keyed from its sealed subject key (HKDF with a label of their own).
    static func tokens(_ services: AttestServices, campus: Campus) async throws -> UnsubscribeTokens {
        UnsubscribeTokens(campusSecret: try await services.badges.keys.subjectKey(campus: campus.id))
    }

    func register(on campus: RouterGroup<AttestRequestContext>) {
        let store = NotificationPreferenceStore(client: services.database)
        campus.get("unsubscribe") { request, context -> Response in
            let (campusValue, _, channel) = try await read(request, context)
            return Self.page(campus: campusValue, channel: channel, done: false)
        }
        campus.post("unsubscribe") { request, context -> Response in
            let (campusValue, user, channel) = try await read(request, context)
            if request.headers[.contentType] != nil {
                // RFC 8058's body, or the page's button: nothing else.
                let form = try await WebForm.read(request, context: context, limit: 1_024)
                for field in form.fields where field.name != "List-Unsubscribe" {
                    throw Problem.validation([
                        .init(field: FieldProblem.name(field.name), message: "is not a field here (only List-Unsubscribe)")
                    ])
                }
            }
            try await store.turnOff(campus: campusValue, user: user, channel: channel, now: services.clock())
            return Self.page(campus: campusValue, channel: channel, done: true)
        }
    }

    private func read(_ request: Request, _ context: AttestRequestContext) async throws -> (Campus, UserID, NotificationChannel) {
        let campus = try context.requireCampus()
        let query = QueryParameters(request, accepting: ["token"])
        guard query.problems.isEmpty else { throw Problem.validation(query.problems) }
        let address = context.clientAddress ?? "unknown"
        let limiter = services.limiters.unknownTokensByAddress
        if let wait = limiter.exhausted(address) {
            throw Problem.tooManyRequests("Too many unsubscribe links this campus does not know came from your address.", retryAfter: wait)
        }
        guard let token = query["token"],
            let (user, channel) = try await Self.tokens(services, campus: campus).read(token, campus: campus.id),
            try await services.users.find(campus: campus.id, id: user) != nil
        else {
            _ = limiter.take(address)
            throw Problem.notFound(
                "This unsubscribe link does not name anyone at this campus: it was copied wrong. Open the settings page of the campus to choose your messages."
            )
        }
        return (campus, user, channel)
    }

    static func page(campus: Campus, channel: NotificationChannel, done: Bool) -> Response {
        let escape = HTMLText.escape
        let what = channel == .email ? "email" : "push notifications"
        let body =
            done
            ? "<h1>Unsubscribed</h1><p>\(escape(campus.name)) will send you no more \(what). You can turn them on again on the campus's settings page.</p>"
            : "<h1>Stop \(what)?</h1><p>\(escape(campus.name)) sends you reminders and notices by \(what). One click stops them; the settings page turns them on again.</p><form method=\"post\"><input type=\"hidden\" name=\"List-Unsubscribe\" value=\"One-Click\"><p><button type=\"submit\">Stop \(what)</button></p></form>"
        let page = """
            <!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">\
            <title>\(done ? "Unsubscribed" : "Unsubscribe") · \(escape(campus.name))</title></head><body><main>\(body)</main></body></html>
            """
        return StandalonePage.response(page)
    }
}
