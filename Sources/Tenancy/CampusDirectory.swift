import AttestPostgres
import Foundation

/// Campuses by slug, each kept for a few seconds: every campus route resolves its slug,
/// and campuses change rarely. Unknown slugs are remembered too, so probing costs no queries.
public final class CampusDirectory: Sendable {
    let store: CampusStore
    private let cache: ExpiringCache<String, Campus?>

    public init(store: CampusStore, ttl: Duration) {
        self.store = store
        self.cache = ExpiringCache(ttl: ttl)
    }

    public func campus(slug: String) async throws -> Campus? {
        try await cache.value(for: slug) { [store] in try await store.find(slug: slug) }
    }
}
