import AttestPlugins
import Foundation
import Notifications
import Tenancy

/// What the API and the settings page both read of a browser's push subscription, and keep.
package enum PushHTTP {
    /// The subscription (`PushSubscription.toJSON()`) and the campus key it was made with when
    /// the client says so (`applicationServerKey`); the problems name each field.
    package static func subscription(_ object: [String: JSONValue]) -> (
        subscription: PushSubscription?, madeWith: String?, problems: [(field: String, message: String)]
    ) {
        let parsed = PushSubscription.parse(.object(object)), madeWith = PushSubscription.madeWith(.object(object))
        let problems = parsed.problems + (madeWith.problem.map { [$0] } ?? [])
        return (problems.isEmpty ? parsed.subscription : nil, madeWith.key, problems)
    }

    /// Keeps the subscription; one made with a key the campus has renewed since is a 409
    /// `push-key-renewed`, nothing kept.
    package static func add(
        _ subscription: PushSubscription, madeWith: String?, campus: CampusID, user: UserID, to store: PushSubscriptionStore
    ) async throws -> UUID {
        do {
            return try await store.add(campus: campus, user: user, subscription, madeWith: madeWith)
        } catch is PushSubscriptionStore.KeyRenewed {
            throw Problem(
                .conflict, slug: "push-key-renewed", title: "Push key renewed",
                detail: "This browser subscribed with the campus's previous push key, renewed since (attest push keys new): "
                    + "unsubscribe it, then subscribe again with the key GET …/push-key gives now.")
        }
    }
}
