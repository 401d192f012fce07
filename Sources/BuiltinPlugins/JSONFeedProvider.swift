import AttestPlugins
import Foundation
import Synchronization

/// The `json-feed` testing-location provider: a URL serving a JSON list of locations
/// (`[{"name", "address", "lat", "lon", "hours", "phone", "url", "notes"}]`), fetched at most
/// once per `ttlSeconds` (default 300), within 2 s and 4 MiB. When the feed is down or answers nonsense, the last
/// good copy is served, marked stale, and the failure logged; with no copy yet, it throws.
///
/// Settings: `{"url": "https://…", "ttlSeconds": 300}`.
public final class JSONFeedProvider: TestingLocationProvider {
    public static let id = "json-feed"

    let url: URL
    let ttl: Duration
    private let cache = Mutex<(locations: [TestingLocation], fetchedAt: ContinuousClock.Instant)?>(nil)

    public init(settings: JSONValue) throws {
        guard case .string(let text)? = settings["url"], let url = OutboundURL.parse(text) else {
            throw PluginSettingsError("url is required: the https URL of the JSON list of locations (http only to localhost, for tests)")
        }
        var ttl = Duration.seconds(300)
        if let value = settings["ttlSeconds"] {
            guard case .number(let seconds) = value, (1...86_400).contains(seconds) else {
                throw PluginSettingsError("ttlSeconds must be a number from 1 to 86400")
            }
            ttl = .milliseconds(Int(seconds * 1000))
        }
        self.url = url
        self.ttl = ttl
    }

    public func locations(context: PluginContext) async throws -> ProvidedLocations {
        let kept = cache.withLock { $0 }
        if let kept, ContinuousClock.now - kept.fetchedAt < ttl { return ProvidedLocations(locations: kept.locations) }
        do {
            let response = try await context.http.send(PluginHTTPRequest(url: url, timeout: .seconds(2)))
            guard response.status == 200 else { throw PluginSettingsError("the feed answered \(response.status)") }
            let locations = try JSONDecoder().decode([TestingLocation].self, from: response.body).filter { $0.problem == nil }
            cache.withLock { $0 = (locations, .now) }
            return ProvidedLocations(locations: locations)
        } catch {
            context.logger.warning("testing-location feed unavailable", metadata: ["url": "\(url.forLogs)", "error": "\(error)"])
            guard let kept else { throw error }
            return ProvidedLocations(locations: kept.locations, stale: true)
        }
    }
}
