import AttestPlugins
import AttestPostgres
import Foundation
import Logging
import Tenancy

/// Merges a campus's testing-location providers: `static` (its own table) and plugins.
public final class TestingLocationDirectory: Sendable {
    let client: PostgresClient
    let registry: PluginRegistry
    let context: PluginContext
    let providerBudget: Duration
    private let enabled = ExpiringCache<CampusID, [CampusPluginStore.Enabled]>(ttl: .seconds(5))
    /// Built providers, kept while their settings stay the same (they keep their own caches).
    private let built = PluginInstances<any TestingLocationProvider>()

    /// Where the campus's providers and their settings (the sealed ones opened with `kek`) are read.
    let plugins: CampusPluginStore

    public init(
        client: PostgresClient, registry: PluginRegistry, http: any PluginHTTPClient, logger: Logger,
        providerBudget: Duration = .seconds(2),
        kek: KeyEncryptionKey? = nil
    ) {
        self.client = client
        self.plugins = CampusPluginStore(client: client, kek: kek)
        self.registry = registry
        self.context = PluginContext(http: http, logger: logger)
        self.providerBudget = providerBudget
    }

    /// A location as the look-up answers it: where from, whether that copy is stale, and how
    /// far from the point asked about (km, two decimals), when one was.
    public struct Found: Sendable {
        public var provider: String
        public var location: TestingLocation
        public var stale: Bool
        public var distanceKm: Double?
    }

    /// The testing-locations use case: every enabled provider's locations merged, nearest to
    /// `point` first (by name without one), at most `limit`, and the providers that failed or
    /// overran their budget.
    public func nearest(
        campus: Campus, to point: (latitude: Double, longitude: Double)?, limit: Int
    ) async throws -> (locations: [Found], unavailable: [String]) {
        let found = try await locations(campus: campus)
        var items = found.locations.map { provider, location, stale in
            Found(
                provider: provider, location: location, stale: stale,
                distanceKm: point.map { (location.distance(toLatitude: $0.latitude, longitude: $0.longitude) * 100).rounded() / 100 })
        }
        items.sort { ($0.distanceKm ?? 0, $0.location.name) < ($1.distanceKm ?? 0, $1.location.name) }
        return (Array(items.prefix(max(0, limit))), found.unavailable)
    }

    /// Every enabled provider's locations (provider id, location, stale), and the providers
    /// that failed or overran. A campus that enabled none is served by `static`.
    public func locations(campus: Campus) async throws -> (locations: [(String, TestingLocation, Bool)], unavailable: [String]) {
        var providers = try await enabled.value(for: campus.id) { [plugins] in
            try await plugins.list(campus: campus.id, kind: .testingLocations)
        }.map { ($0.id, $0.settings) }
        if providers.isEmpty { providers = [(PluginRegistry.staticProviderID, .null)] }
        let answers = await withTaskGroup(of: (String, ProvidedLocations?).self) { group in
            for (id, settings) in providers {
                group.addTask { (id, await self.ask(id: id, settings: settings, campus: campus)) }
            }
            return await group.reduce(into: [(String, ProvidedLocations?)]()) { $0.append($1) }
        }
        var locations: [(String, TestingLocation, Bool)] = [], unavailable: [String] = []
        for (id, answer) in answers.sorted(by: { $0.0 < $1.0 }) {
            guard let answer else {
                unavailable.append(id)
                continue
            }
            locations += answer.locations.map { (id, $0, answer.stale) }
        }
        return (locations, unavailable)
    }

    /// One provider's answer within the budget, or nil.
    private func ask(id: String, settings: JSONValue, campus: Campus) async -> ProvidedLocations? {
        do {
            if id == PluginRegistry.staticProviderID {
                return ProvidedLocations(locations: try await TestingLocationStore(client: client).list(campus: campus.id).map(\.location))
            }
            let provider = try provider(id: id, settings: settings, campus: campus)
            let context = self.context
            switch await result(within: providerBudget, { try await provider.locations(context: context) }) {
            case .success(let answer)?: return answer
            case .failure(let error)?:
                context.logger.warning("testing-location provider failed", metadata: ["provider": "\(id)", "error": "\(error)"])
            case nil:
                context.logger.warning("testing-location provider unavailable", metadata: ["provider": "\(id)"])
            }
            return nil
        } catch {
            context.logger.warning("testing-location provider failed", metadata: ["provider": "\(id)", "error": "\(error)"])
            return nil
        }
    }

    private func provider(id: String, settings: JSONValue, campus: Campus) throws -> any TestingLocationProvider {
        try built.instance(key: "\(campus.id)/" + PluginInstances<any TestingLocationProvider>.key(id: id, settings: settings)) {
            guard let made = try registry.makeTestingLocationProvider(id: id, settings: settings) else {
                throw PluginSettingsError("\(id) is served by the platform")
            }
            return made
        }
    }
}
