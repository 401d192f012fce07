import AttestPlugins
import Tenancy

/// Active questionnaires by campus, kept 5 s: every submission needs one.
public final class ActiveQuestionnaires: Sendable {
    let store: QuestionnaireStore
    private let cache = ExpiringCache<CampusID, Questionnaire?>(ttl: .seconds(5))
    private let guestCache = ExpiringCache<CampusID, Questionnaire?>(ttl: .seconds(5))

    public init(store: QuestionnaireStore) { self.store = store }

    public func active(campus: CampusID) async throws -> Questionnaire? {
        try await cache.value(for: campus) { [store] in try await store.active(campus: campus) }
    }

    /// What guests answer (`QuestionnaireStore.guests`), kept 5 s likewise.
    public func guests(campus: CampusID) async throws -> Questionnaire? {
        try await guestCache.value(for: campus) { [store] in try await store.guests(campus: campus) }
    }
}
