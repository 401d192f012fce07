import AttestPlugins
import AttestServer
import Foundation
import Hummingbird
import Notifications
import Tenancy

/// Web Push for the member's browsers: `GET /v1/campuses/{campus}/push-key` (the campus's
/// VAPID public key, for `PushManager.subscribe`'s `applicationServerKey`), `POST
/// …/me/push-subscriptions` with the browser's `PushSubscription` JSON, and `DELETE
/// …/me/push-subscriptions?endpoint=…` when the browser unsubscribes.
struct PushRoutes: Sendable {
    let services: AttestServices

    struct Key: ResponseEncodable {
        var publicKey: String
    }

    struct Added: ResponseEncodable {
        var id: UUID
    }

    func register(on signedIn: RouterGroup<AttestRequestContext>) {
        let (keys, subscriptions) = (services.pushKeys, services.pushSubscriptions)
        signedIn.get("push-key") { request, context -> Response in
            let campus = try context.requireCampus()
            let query = QueryParameters(request, accepting: [])
            guard query.problems.isEmpty else { throw Problem.validation(query.problems) }
            return try JournalRoutes.private(Key(publicKey: try await keys.publicKey(campus: campus.id)), request, context)
        }
        signedIn.post("me/push-subscriptions") { request, context -> Response in
            let (campus, user) = try JournalRoutes.member(context)
            let object = try await request.jsonObject(context: context)
            var reader = ObjectReader(object, fields: ["endpoint", "expirationTime", "keys", "applicationServerKey"])
            let sent = PushHTTP.subscription(object)
            reader.add(sent.problems)
            try reader.finish()
            guard let subscription = sent.subscription else {
                throw Problem.validation(sent.problems.map { .init(field: $0.field, message: $0.message) })
            }
            let id = try await PushHTTP.add(subscription, madeWith: sent.madeWith, campus: campus.id, user: user, to: subscriptions)
            var response = try JournalRoutes.private(Added(id: id), request, context)
            response.status = .created
            return response
        }
        signedIn.delete("me/push-subscriptions") { request, context -> Response in
            let (campus, user) = try JournalRoutes.member(context)
            let query = QueryParameters(request, accepting: ["endpoint"])
            guard query.problems.isEmpty else { throw Problem.validation(query.problems) }
            guard let text = query["endpoint"], let endpoint = URL(string: text), text.utf8.count <= 2048 else {
                throw Problem.validation([.init(field: "endpoint", message: "is required: the subscription's endpoint URL")])
            }
            guard try await subscriptions.remove(campus: campus.id, user: user, endpoint: endpoint) else {
                throw Problem.notFound("this browser has no push subscription here: nothing to remove")
            }
            return Response(status: .noContent, headers: [.cacheControl: "private, no-store"])
        }
    }

}
