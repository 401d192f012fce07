import Foundation

/// Where a member was, as coarsely as an episode keeps it: latitude and longitude rounded to
/// a tenth of a degree (about 11 km), never the point the browser gave.
public struct CoarseLocation: Sendable, Hashable, Codable {
    public let latitude: Double
    public let longitude: Double

    /// Rounds a point to a tenth of a degree; nil when it is not on Earth.
    public init?(latitude: Double, longitude: Double) {
        guard latitude.isFinite, longitude.isFinite, (-90...90).contains(latitude), (-180...180).contains(longitude) else { return nil }
        self.latitude = (latitude * 10).rounded() / 10
        self.longitude = (longitude * 10).rounded() / 10
    }
}

/// The surroundings at a time and place, each in its unit (nil when the source has none).
public struct EnvironmentFactors: Sendable, Equatable, Codable {
    /// Air temperature, °C.
    public var temperature: Double?
    /// UV index (0 and up).
    public var uvIndex: Double?
    /// Relative humidity, %.
    public var humidity: Double?
    /// Wind speed, m/s.
    public var windSpeed: Double?
    /// Air quality index on the US EPA's scale (0 to 500: 0–50 good, 51–100 moderate, 101–150
    /// unhealthy for sensitive groups, 151–200 unhealthy, 201–300 very unhealthy, above
    /// hazardous), when the source has it.
    public var airQuality: Double?
    /// True when the values come from a made-up model (`attest dev`'s `made-up` provider), not
    /// a measurement: pages, the API and exports say so wherever they show them.
    public var madeUp: Bool?

    public init(
        temperature: Double? = nil, uvIndex: Double? = nil, humidity: Double? = nil, windSpeed: Double? = nil, airQuality: Double? = nil,
        madeUp: Bool? = nil
    ) {
        self.temperature = temperature
        self.uvIndex = uvIndex
        self.humidity = humidity
        self.windSpeed = windSpeed
        self.airQuality = airQuality
        self.madeUp = madeUp
    }

    /// Each factor's name and unit, in the order pages and exports show them (air quality's
    /// unit names its scale).
    public static let units: [(name: String, unit: String)] = [
        ("temperature", "°C"), ("uvIndex", "index"), ("humidity", "%"), ("windSpeed", "m/s"), ("airQuality", "US AQI"),
    ]

    /// Each factor's name, unit and value, in `units`' order.
    public var values: [(name: String, unit: String, value: Double?)] {
        let all = [temperature, uvIndex, humidity, windSpeed, airQuality]
        return zip(Self.units, all).map { ($0.name, $0.unit, $1) }
    }

    /// The same with every value outside its plausible range (or not finite) left out.
    public var plausible: EnvironmentFactors {
        func keep(_ value: Double?, _ range: ClosedRange<Double>) -> Double? {
            value.flatMap { $0.isFinite && range.contains($0) ? $0 : nil }
        }
        return EnvironmentFactors(
            temperature: keep(temperature, -90...60), uvIndex: keep(uvIndex, 0...20), humidity: keep(humidity, 0...100),
            windSpeed: keep(windSpeed, 0...120), airQuality: keep(airQuality, 0...1000), madeUp: madeUp == true ? true : nil)
    }

    /// Whether it holds no value at all.
    public var isEmpty: Bool { values.allSatisfy { $0.value == nil } }
}

/// The weather and air around a member's episode (the fifth plugin point).
///
/// Implementation requirements: answer within about 2 s (the platform then stores the
/// episode without context; a provider never fails an episode); throw when there is nothing
/// to answer. `instant` may be in the past (the platform also asks for the same hour a day
/// earlier, the member's baseline). Values outside a factor's plausible range are dropped.
/// A provider is built once per set of settings and kept, so it may cache answers.
public protocol ContextProvider: Sendable {
    func factors(at instant: Date, near location: CoarseLocation, context: PluginContext) async throws -> EnvironmentFactors
}
