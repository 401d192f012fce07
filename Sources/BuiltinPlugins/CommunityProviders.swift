import AttestFoundation
import AttestPlugins
import Foundation
import Synchronization

/// A source's last good copy, fetched again at most once per `ttl`, one fetch at a time. The
/// fetch runs on its own, so a caller that stops waiting (the platform's 2 s budget) leaves it
/// to finish and fill the copy for the next. When a fetch fails (the source is down or answers
/// nonsense) the failure is logged, the last good copy is served marked stale, and the source
/// is not asked again for a minute (or the TTL, if shorter); with no copy yet, it throws.
final class KeptSource<Value: Sendable>: Sendable {
    let ttl: Duration
    let describe: String
    private struct State {
        var value: Value?
        var fetchedAt: ContinuousClock.Instant?
        var failedAt: ContinuousClock.Instant?
        var failure: String?
        var fetching: Task<Value, any Error>?
    }
    private let state = Mutex(State())

    init(ttl: Duration, describe: String) {
        self.ttl = ttl
        self.describe = describe
    }

    func value(context: PluginContext, fetch: @escaping @Sendable () async throws -> Value) async throws -> (value: Value, stale: Bool) {
        let now = ContinuousClock.now
        let (kept, fetching) = state.withLock { state -> (State, Task<Value, any Error>?) in
            if state.value != nil, let fetchedAt = state.fetchedAt, now - fetchedAt < ttl { return (state, nil) }
            if let failedAt = state.failedAt, now - failedAt < min(ttl, .seconds(60)) { return (state, nil) }
            if state.fetching == nil {
                state.fetching = Task { try await self.refresh(context: context, fetch: fetch) }
            }
            return (state, state.fetching)
        }
        guard let fetching else {
            if let value = kept.value { return (value, kept.failedAt != nil && kept.fetchedAt.map { now - $0 >= ttl } ?? true) }
            throw PluginSettingsError("\(describe) could not be read (\(kept.failure ?? "no copy yet")); it is tried again within a minute")
        }
        do {
            return (try await fetching.value, false)
        } catch {
            guard let value = kept.value else { throw error }
            return (value, true)
        }
    }

    private func refresh(context: PluginContext, fetch: @Sendable () async throws -> Value) async throws -> Value {
        do {
            let value = try await fetch()
            state.withLock { $0 = State(value: value, fetchedAt: .now) }
            return value
        } catch {
            let reason = "\(error)"
            state.withLock { state in
                state.failedAt = .now
                state.failure = reason
                state.fetching = nil
            }
            context.logger.warning(
                "community data source unavailable; the last good copy is served if there is one",
                metadata: ["source": "\(describe)", "error": "\(reason)"])
            throw error
        }
    }
}

/// Reads a source named by `url` (`https`, or `http` to a host the operator allows) or `file`
/// (a path on the server), at most `limit` bytes.
struct SourceLocation: Sendable, CustomStringConvertible {
    enum Place: Sendable {
        case url(URL)
        case file(String)
    }
    let place: Place
    static let fileLimit = 64 << 20

    /// `urlKey` or `fileKey` of `settings`; nil when neither is given.
    static func parse(_ settings: JSONValue, urlKey: String, fileKey: String) throws -> SourceLocation? {
        switch (settings[urlKey], settings[fileKey]) {
        case (nil, nil): return nil
        case (.string(let text)?, nil):
            guard let url = OutboundURL.parse(text) else {
                throw PluginSettingsError("\(urlKey) must be an https URL (http only to hosts the operator allows), got \"\(text)\"")
            }
            return SourceLocation(place: .url(url))
        case (nil, .string(let path)?):
            guard path.hasPrefix("/"), path.utf8.count <= 1_000 else {
                throw PluginSettingsError("\(fileKey) must be an absolute path, got \"\(path)\"")
            }
            return SourceLocation(place: .file(path))
        case (.some, .some): throw PluginSettingsError("give \(urlKey) or \(fileKey), not both")
        default: throw PluginSettingsError("\(urlKey) and \(fileKey) must be text")
        }
    }

    var description: String {
        switch place {
        case .url(let url): url.forLogs
        case .file(let path): path
        }
    }

    func read(context: PluginContext) async throws -> Data {
        switch place {
        case .url(let url):
            let response = try await context.http.send(PluginHTTPRequest(url: url, timeout: .seconds(10)))
            guard response.status == 200 else { throw PluginSettingsError("\(url.forLogs) answered \(response.status)") }
            return response.body
        case .file(let path):
            let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
            defer { try? handle.close() }
            let data = try handle.read(upToCount: Self.fileLimit + 1) ?? Data()
            guard data.count <= Self.fileLimit else {
                throw PluginSettingsError("\(path) is larger than 64 MiB: import it with `attest community import` instead")
            }
            return data
        }
    }
}

/// Reads `ttlSeconds` (1 to 7 days; `fallback` when absent).
func ttlSetting(_ settings: JSONValue, fallback: Duration) throws -> Duration {
    guard let value = settings["ttlSeconds"] else { return fallback }
    guard case .number(let seconds) = value, seconds >= 1, seconds <= 604_800 else {
        throw PluginSettingsError("ttlSeconds must be a number from 1 to 604800 (a week)")
    }
    return .milliseconds(Int64((seconds * 1000).rounded()))
}

/// Reads `attribution` (at most 200 characters), shown with the figures.
func attributionSetting(_ settings: JSONValue) throws -> String? {
    guard let value = settings["attribution"] else { return nil }
    guard case .string(let text) = value, !text.isEmpty, text.count <= 200 else {
        throw PluginSettingsError("attribution must be a text of 1 to 200 characters, such as \"The New York Times\"")
    }
    return text
}

/// A provider that reads a whole dataset (kept, and marked stale when its source is down) and
/// answers a region's series and a search from it.
public protocol DatasetProvider: CommunityDataProvider {
    func dataset(context: PluginContext) async throws -> (value: CommunityDataset, stale: Bool)
}

extension DatasetProvider {
    public func series(region id: String, context: PluginContext) async throws -> CommunitySeries? {
        let (dataset, stale) = try await dataset(context: context)
        guard var series = dataset.series(region: id) else { return nil }
        series.stale = stale
        return series
    }

    public func regions(matching search: String, limit: Int, context: PluginContext) async throws -> [CommunityRegion] {
        try await dataset(context: context).value.regions(matching: search, limit: limit)
    }
}

/// The `csv-timeseries` community-data provider: the widely used cumulative layout
/// `date,county,state,fips,cases,deaths` (or `date,state,fips,cases,deaths`), with an
/// optional population file (`fips,population`) beside it, read from an https URL or a file
/// and read again at most once per `ttlSeconds` (default 3600).
///
/// Settings: `{"url": "https://…/us-counties.csv"}` or `{"file": "/srv/data/us-counties.csv"}`,
/// `"populationUrl"` or `"populationFile"`, `"ttlSeconds"`, `"attribution"`. A URL answers at
/// most what the server's HTTP client allows (4 MiB by default), a file at most 64 MiB: the
/// whole national county history is larger; import it with `attest community import`.
public final class CSVTimeseriesProvider: DatasetProvider {
    public static let id = "csv-timeseries"

    let source: SourceLocation
    let population: SourceLocation?
    public let attribution: String?
    private let kept: KeptSource<CommunityDataset>

    public init(settings: JSONValue) throws {
        guard let source = try SourceLocation.parse(settings, urlKey: "url", fileKey: "file") else {
            throw PluginSettingsError("url or file is required: where the cumulative CSV (date,county,state,fips,cases,deaths) is")
        }
        self.source = source
        population = try SourceLocation.parse(settings, urlKey: "populationUrl", fileKey: "populationFile")
        attribution = try attributionSetting(settings)
        kept = KeptSource(ttl: try ttlSetting(settings, fallback: .seconds(3600)), describe: source.description)
    }

    public func dataset(context: PluginContext) async throws -> (value: CommunityDataset, stale: Bool) {
        try await kept.value(context: context) { [source, population] in
            let data = try await source.read(context: context)
            let people = try await population?.read(context: context)
            return try CommunityDataset.parseCumulativeCSV(data, population: people)
        }
    }
}

/// The `json-feed` community-data provider: an https URL serving
/// `{"regions": [{"id", "name", "population", "days": [{"date", "newCases", "newDeaths",
/// "tests", "admissions"}]}]}` (population, tests and admissions optional; figures per day,
/// not running totals), read again at most once per `ttlSeconds` (default 3600).
///
/// Settings: `{"url": "https://…", "ttlSeconds": 3600, "attribution": "…"}`.
public final class CommunityJSONFeedProvider: DatasetProvider {
    public static let id = "json-feed"

    let url: URL
    public let attribution: String?
    private let kept: KeptSource<CommunityDataset>

    struct Feed: Decodable {
        struct Region: Decodable {
            var id: String
            var name: String
            var population: Int?
            var days: [Day]
        }
        struct Day: Decodable {
            var date: String
            var newCases: Int
            var newDeaths: Int
            var tests: Int?
            var admissions: Int?
        }
        var regions: [Region]
    }

    public init(settings: JSONValue) throws {
        guard case .string(let text)? = settings["url"], let url = OutboundURL.parse(text) else {
            throw PluginSettingsError("url is required: the https URL of the JSON feed (http only to hosts the operator allows)")
        }
        self.url = url
        attribution = try attributionSetting(settings)
        kept = KeptSource(ttl: try ttlSetting(settings, fallback: .seconds(3600)), describe: url.forLogs)
    }

    /// Reads a feed document; a region or day that does not fit is an error naming it.
    public static func parse(_ data: Data) throws -> CommunityDataset {
        let feed: Feed
        do { feed = try JSONDecoder().decode(Feed.self, from: data) } catch {
            throw PluginSettingsError(
                "the feed is not {\"regions\": [{\"id\", \"name\", \"population\", \"days\": [{\"date\", \"newCases\", \"newDeaths\"}]}]}")
        }
        return CommunityDataset(
            series: try feed.regions.map { region in
                guard CommunityRegion.isValidID(region.id), !region.name.isEmpty, region.name.count <= 200 else {
                    throw PluginSettingsError(
                        "the feed's region \"\(region.id.prefix(64))\" needs an id of 1 to 64 letters, digits or ._:- and a name")
                }
                let days = try region.days.map { day in
                    guard let date = LocalDate(day.date) else {
                        throw PluginSettingsError("region \(region.id): date must be YYYY-MM-DD, got \"\(day.date.prefix(20))\"")
                    }
                    return CommunityDay(
                        date: date, newCases: day.newCases, newDeaths: day.newDeaths, tests: day.tests, admissions: day.admissions)
                }
                let population = region.population.flatMap { $0 > 0 ? $0 : nil }
                return CommunitySeries(region: CommunityRegion(id: region.id, name: region.name, population: population), days: days)
            })
    }

    public func dataset(context: PluginContext) async throws -> (value: CommunityDataset, stale: Bool) {
        try await kept.value(context: context) { [url] in
            let response = try await context.http.send(PluginHTTPRequest(url: url, timeout: .seconds(10)))
            guard response.status == 200 else { throw PluginSettingsError("\(url.forLogs) answered \(response.status)") }
            return try Self.parse(response.body)
        }
    }
}
