import AttestPlugins
import AttestPostgres
import Foundation
import Logging
import Tenancy

/// A campus's community data: its provider (a plugin, or `imported` from the shared tables),
/// asked within a budget, and the figures by the documented rules (`CommunityFigures`).
public final class CommunityDirectory: Sendable {
    let client: PostgresClient
    let registry: PluginRegistry
    let context: PluginContext
    let providerBudget: Duration
    private let enabled = ExpiringCache<CampusID, CampusPluginStore.Enabled?>(ttl: .seconds(5))
    /// Series read, for a minute: a member's home page asks at every view. Keyed by the
    /// provider's own settings and the region, so campuses with one source share them.
    private let answers = ExpiringCache<String, CommunitySeries?>(ttl: .seconds(60))
    /// Built providers, by id and their own settings (without the campus's `riskThresholds`
    /// and `guidance`, which the platform applies per campus): campuses that read the same
    /// source share one provider and its one copy of the source.
    private let built = PluginInstances<any CommunityDataProvider>()

    /// Where the campus's provider and its settings (the sealed ones opened with `kek`) are read.
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

    /// Why there are no figures to show; each says how to mend it.
    public enum Failure: Error, Equatable, CustomStringConvertible {
        case notEnabled
        case noHomeRegion
        case unknownRegion(String)
        /// The provider failed or overran its budget, with no copy to serve.
        case unavailable(provider: String)

        public var description: String {
            switch self {
            case .notEnabled:
                "this campus shows no community data yet: an operator enables a provider with `attest plugin enable <campus> community-data <id> --settings …`"
            case .noHomeRegion:
                "this campus has no home region: give ?region=<id> (GET …/community/regions?search= finds one), or an operator sets one with `attest campus set <campus> region <id>`"
            case .unknownRegion(let id):
                "the campus's community data has no region \"\(id)\": GET …/community/regions?search= lists the regions it knows"
            case .unavailable(let provider):
                "the community-data provider \(provider) did not answer in time and has no earlier copy: retry in a minute"
            }
        }
    }

    /// What members see of a region.
    public struct Report: Sendable {
        public var region: CommunityRegion
        /// Whether it is the campus's home region.
        public var home: Bool
        public var figures: CommunityFigures
        public var guidance: String?
        public var thresholds: [Double]
        /// The provider's id, and who published the figures when the provider says.
        public var source: String
        public var attribution: String?
        public var stale: Bool
        /// The reported days, oldest first (at most the latest 400).
        public var days: [CommunityDay]
    }

    /// The figures of `region` (the campus's home region when nil), with the guidance for its
    /// risk level in the first of `languages` the campus wrote it in. Throws `Failure`.
    public func report(campus: Campus, region requested: String?, languages: [String]) async throws -> Report {
        let plugin = try await plugin(campus: campus)
        guard let regionID = requested ?? campus.communityRegion else { throw Failure.noHomeRegion }
        let settings = (try? CommunityRiskSettings(settings: plugin.settings)) ?? CommunityRiskSettings()
        let (series, attribution) = try await series(campus: campus, plugin: plugin, region: regionID)
        guard var series else { throw Failure.unknownRegion(regionID) }
        series.days = Array(series.days.suffix(400))
        let figures = CommunityFigures(series: series, settings: settings)
        return Report(
            region: series.region, home: regionID == campus.communityRegion, figures: figures,
            guidance: figures.risk.flatMap { settings.guidance(for: $0, languages: languages) }, thresholds: settings.thresholds,
            source: plugin.id, attribution: attribution, stale: series.stale, days: series.days)
    }

    /// Why a place is on a member's community page: the first that holds.
    public enum PlaceKind: String, Sendable {
        case home, nation, world, saved
    }

    /// A place on a member's community page: its report, or nil when the provider did not
    /// answer in time (`unavailable`) or no longer knows the region.
    public struct Place: Sendable {
        public var kind: PlaceKind
        public var id: String
        /// Whether the member follows it (a saved place may also be the home region).
        public var saved: Bool
        public var report: Report?
        public var unavailable: Bool
    }

    /// The campus's home region, its nation and the world (each when the provider knows it),
    /// then the member's `saved` regions, in that order and each once, asked at once. Throws
    /// `Failure.notEnabled` when the campus shows no community data.
    public func places(campus: Campus, saved: [String], languages: [String]) async throws -> [Place] {
        let plugin = try await plugin(campus: campus)
        let settings = (try? CommunityRiskSettings(settings: plugin.settings)) ?? CommunityRiskSettings()
        var wanted: [(kind: PlaceKind, id: String)] = []
        for (kind, id) in [(PlaceKind.home, campus.communityRegion), (.nation, settings.nation), (.world, settings.world)] {
            if let id, !wanted.contains(where: { $0.id == id }) { wanted.append((kind, id)) }
        }
        for id in saved where !wanted.contains(where: { $0.id == id }) { wanted.append((.saved, id)) }
        let answers = await withTaskGroup(of: (Int, Result<Report, any Error>).self) { group in
            for (index, place) in wanted.enumerated() {
                group.addTask {
                    do { return (index, .success(try await self.report(campus: campus, region: place.id, languages: languages))) } catch {
                        return (index, .failure(error))
                    }
                }
            }
            return await group.reduce(into: [Int: Result<Report, any Error>]()) { $0[$1.0] = $1.1 }
        }
        return wanted.enumerated().compactMap { index, place in
            let isSaved = saved.contains(place.id)
            switch answers[index] {
            case .success(let report)?:
                return Place(kind: place.kind, id: place.id, saved: isSaved, report: report, unavailable: false)
            case .failure(Failure.unavailable)?:
                return Place(kind: place.kind, id: place.id, saved: isSaved, report: nil, unavailable: true)
            default:
                // Not known (any more): a saved one is listed, to be removed; home, nation and world are left out.
                return isSaved ? Place(kind: place.kind, id: place.id, saved: true, report: nil, unavailable: false) : nil
            }
        }
    }

    /// What is wrong with `regions` as a member's saved places, by field (`regions[2]`): more
    /// than `PlaceStore.limit`, an id that cannot be one, one given twice, or one the campus's
    /// provider does not know. Throws `Failure` when the provider cannot say.
    public func problems(places regions: [String], campus: Campus) async throws -> [(field: String, message: String)] {
        if regions.count > PlaceStore.limit {
            return [("regions", "must hold at most \(PlaceStore.limit) regions; remove one before adding another")]
        }
        var problems: [(String, String)] = []
        for (index, id) in regions.enumerated() {
            let field = "regions[\(index)]"
            if !CommunityRegion.isValidID(id) {
                problems.append((field, "must be a region id: 1 to 64 letters, digits or ._:- (GET …/community/regions?search= finds one)"))
            } else if regions[..<index].contains(id) {
                problems.append((field, "\(id) is given twice"))
            } else {
                do { _ = try await report(campus: campus, region: id, languages: []) } catch Failure.unknownRegion {
                    problems.append(
                        (field, "the campus's community data has no region \"\(id)\" (GET …/community/regions?search= finds one)"))
                }
            }
        }
        return problems
    }

    /// Regions the campus's provider knows whose name contains `search`, by name.
    public func regions(campus: Campus, matching search: String, limit: Int) async throws -> (regions: [CommunityRegion], source: String) {
        let plugin = try await plugin(campus: campus)
        if plugin.id == PluginRegistry.importedProviderID {
            return (
                try await CommunityStore(client: client).regions(datasets: Self.datasets(plugin.settings), matching: search, limit: limit),
                plugin.id
            )
        }
        let provider = try provider(campus: campus, plugin: plugin)
        let context = self.context
        guard let found = await within(providerBudget, { try await provider.regions(matching: search, limit: limit, context: context) })
        else {
            throw Failure.unavailable(provider: plugin.id)
        }
        return (Array(found.prefix(limit)), plugin.id)
    }

    private func plugin(campus: Campus) async throws -> CampusPluginStore.Enabled {
        let found = try await enabled.value(for: campus.id) { [plugins] in
            try await plugins.list(campus: campus.id, kind: .communityData).first
        }
        guard let found else { throw Failure.notEnabled }
        return found
    }

    private func series(
        campus: Campus, plugin: CampusPluginStore.Enabled, region: String
    ) async throws -> (CommunitySeries?, attribution: String?) {
        let key = "\(Self.key(plugin))/\(region)"
        if plugin.id == PluginRegistry.importedProviderID {
            let datasets = Self.datasets(plugin.settings)
            let series = try await answers.value(for: key) { [client] in
                try await CommunityStore(client: client).series(datasets: datasets, region: region)
            }
            return (series, nil)
        }
        let provider = try provider(campus: campus, plugin: plugin)
        if let kept = answers.value(for: key) { return (kept, provider.attribution) }
        let context = self.context
        guard let answer = await within(providerBudget, { try await provider.series(region: region, context: context) }) else {
            throw Failure.unavailable(provider: plugin.id)
        }
        // A stale copy is not kept: the next request asks the provider again.
        if answer?.stale != true { answers.store(answer, for: key) }
        return (answer, provider.attribution)
    }

    static func datasets(_ settings: JSONValue) -> [String] {
        PluginRegistry.importedDatasets(settings) ?? []
    }

    /// The provider's answer within `budget`, or nil when it threw or overran (logged). The
    /// call runs on its own: a provider that overruns keeps fetching for the next request.
    /// The provider's answer within `budget`, or nil when it threw or overran (logged).
    private func within<Value: Sendable>(_ budget: Duration, _ call: @escaping @Sendable () async throws -> Value) async -> Value? {
        switch await result(within: budget, call) {
        case .success(let value)?: return value
        case .failure(let error)?:
            context.logger.warning("community-data provider failed", metadata: ["error": "\(error)"])
            return nil
        case nil:
            context.logger.warning("community-data provider overran its budget", metadata: ["budget": "\(budget)"])
            return nil
        }
    }

    /// The provider's id and its own settings, as sorted JSON.
    static func key(_ plugin: CampusPluginStore.Enabled) -> String {
        var settings = plugin.settings
        if case .object(let members) = settings {
            settings = .object(members.filter { !CommunityRiskSettings.names.contains($0.key) })
        }
        return PluginInstances<any CommunityDataProvider>.key(id: plugin.id, settings: settings)
    }

    private func provider(campus: Campus, plugin: CampusPluginStore.Enabled) throws -> any CommunityDataProvider {
        try built.instance(key: Self.key(plugin)) {
            guard let made = try registry.makeCommunityDataProvider(id: plugin.id, settings: plugin.settings) else {
                throw PluginSettingsError("\(plugin.id) is served by the platform")
            }
            return made
        }
    }
}
