import AttestPlugins
import Foundation
import Synchronization

/// The `json-feed` context provider: a URL template with `{lat}`, `{lon}` and `{time}` (the
/// hour, UTC, ISO 8601: `2026-11-20T14:00:00Z`) answering
/// `{"temperature": 21.5, "uvIndex": 3, "humidity": 40, "windSpeed": 2.1, "airQuality": 35}`
/// (°C, index, %, m/s, US AQI; any may be null or absent). Asked within `timeoutSeconds`
/// (default 2), each place and hour once: answers are kept (at most 10,000).
///
/// Settings: `{"url": "https://weather.example.edu/at?lat={lat}&lon={lon}&time={time}", "timeoutSeconds": 2}`.
public final class ContextFeedProvider: ContextProvider {
    public static let id = "json-feed"

    let template: String
    let timeout: Duration
    private let kept = Mutex<[String: EnvironmentFactors]>([:])

    public init(settings: JSONValue) throws {
        guard case .string(let template)? = settings["url"], template.contains("{lat}"), template.contains("{lon}"),
            OutboundURL.parse(Self.fill(template, latitude: 0, longitude: 0, hour: Date(timeIntervalSince1970: 0))) != nil
        else {
            throw PluginSettingsError(
                "url is required: an https URL with {lat}, {lon} and optionally {time}, such as https://weather.example.edu/at?lat={lat}&lon={lon}&time={time}"
            )
        }
        var timeout = Duration.seconds(2)
        if let value = settings["timeoutSeconds"] {
            guard case .number(let seconds) = value, (0.1...10).contains(seconds) else {
                throw PluginSettingsError("timeoutSeconds must be a number from 0.1 to 10")
            }
            timeout = .milliseconds(Int64((seconds * 1000).rounded()))
        }
        self.template = template
        self.timeout = timeout
    }

    static func fill(_ template: String, latitude: Double, longitude: Double, hour: Date) -> String {
        template.replacingOccurrences(of: "{lat}", with: String(format: "%.1f", latitude))
            .replacingOccurrences(of: "{lon}", with: String(format: "%.1f", longitude))
            .replacingOccurrences(of: "{time}", with: hour.ISO8601Format())
    }

    struct Answer: Decodable {
        var temperature: Double?
        var uvIndex: Double?
        var humidity: Double?
        var windSpeed: Double?
        var airQuality: Double?
    }

    public func factors(at instant: Date, near location: CoarseLocation, context: PluginContext) async throws -> EnvironmentFactors {
        let seconds = instant.timeIntervalSince1970
        guard seconds.isFinite, abs(seconds) < 1e11 else { throw PluginSettingsError("the time is out of range") }
        let hour = Date(timeIntervalSince1970: (seconds / 3600).rounded(.down) * 3600)
        let key = "\(location.latitude),\(location.longitude),\(hour.timeIntervalSince1970)"
        if let found = kept.withLock({ $0[key] }) { return found }
        guard let url = OutboundURL.parse(Self.fill(template, latitude: location.latitude, longitude: location.longitude, hour: hour))
        else {
            throw PluginSettingsError("the filled-in URL is not one the platform reaches")
        }
        let response = try await context.http.send(PluginHTTPRequest(url: url, timeout: timeout))
        guard response.status == 200 else { throw PluginSettingsError("the context feed answered \(response.status)") }
        let answer: Answer
        do { answer = try JSONDecoder().decode(Answer.self, from: response.body) } catch {
            throw PluginSettingsError(
                "the context feed's answer is not {\"temperature\", \"uvIndex\", \"humidity\", \"windSpeed\", \"airQuality\"}")
        }
        let factors = EnvironmentFactors(
            temperature: answer.temperature, uvIndex: answer.uvIndex, humidity: answer.humidity, windSpeed: answer.windSpeed,
            airQuality: answer.airQuality
        ).plausible
        kept.withLock { kept in
            if kept.count >= 10_000 { kept.removeAll() }
            kept[key] = factors
        }
        return factors
    }
}
