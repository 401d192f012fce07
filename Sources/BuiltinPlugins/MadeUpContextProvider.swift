import AttestPlugins
import Foundation

/// The `made-up` context provider of `attest dev`: weather and air quality from a small
/// deterministic model of place and hour, so a demo's episodes show context with no network.
/// Every answer is marked `madeUp`, and pages, the API and exports say so. Registered only by
/// `PluginRegistry.withDemoPlugins()`: `attest serve` does not know it, so no campus it serves uses it.
///
/// The model, per coarse place and whole hour (UTC): temperature from latitude, season and time
/// of day; UV from the sun's height at local solar noon and the hour; humidity, wind and the
/// US AQI from a hash of place and hour, smoothed over the day. The same place and hour always
/// answer the same.
public struct MadeUpContextProvider: ContextProvider {
    public static let id = "made-up"

    public init() {}

    public func factors(at instant: Date, near location: CoarseLocation, context: PluginContext) async throws -> EnvironmentFactors {
        Self.model(at: instant, latitude: location.latitude, longitude: location.longitude)
    }

    static func model(at instant: Date, latitude: Double, longitude: Double) -> EnvironmentFactors {
        let seconds = instant.timeIntervalSince1970
        guard seconds.isFinite, let hours = Int(exactly: (seconds / 3_600).rounded(.down)) else { return EnvironmentFactors(madeUp: true) }
        let dayOfYear = Double((hours / 24) % 365)
        // Local solar time: UTC shifted by longitude, in hours 0..<24.
        let solar = (Double(hours % 24) + longitude / 15 + 48).truncatingRemainder(dividingBy: 24)
        let north = latitude >= 0 ? 1.0 : -1.0
        // Summer peaks about day 200 in the north, day 18 in the south.
        let season = north * cos(2 * Double.pi * (dayOfYear - 200) / 365)
        let daylight = max(0, cos(2 * Double.pi * (solar - 13) / 24))
        let cell = ((Int(exactly: (latitude * 10).rounded()) ?? 0) &* 3_601) &+ (Int(exactly: (longitude * 10).rounded()) ?? 0)
        func noise(_ salt: Int) -> Double {
            // The day's value and the next's, mixed by hour: weather that drifts, not jumps.
            let day = hours / 24, hour = Double(hours % 24) / 24
            return unit(hash(cell, day, salt)) * (1 - hour) + unit(hash(cell, day + 1, salt)) * hour
        }
        let temperature = 27 - 0.45 * abs(latitude) + (6 + 0.2 * abs(latitude)) * season + 5 * (daylight - 0.4) + 4 * (noise(1) - 0.5)
        let uv = 11 * daylight * daylight * (0.55 + 0.45 * season) * (1 - abs(latitude) / 120) * (0.7 + 0.3 * noise(2))
        let humidity = 50 + 35 * (noise(3) - 0.5) - 15 * (daylight - 0.4)
        let wind = 0.5 + 8 * noise(4) * noise(4)
        let airQuality = 15 + 90 * noise(5) * (1.2 - min(wind, 8) / 10)
        func tenth(_ value: Double) -> Double { (value * 10).rounded() / 10 }
        return EnvironmentFactors(
            temperature: tenth(temperature), uvIndex: tenth(max(0, uv)), humidity: tenth(min(max(humidity, 5), 100)),
            windSpeed: tenth(wind), airQuality: max(0, airQuality).rounded(), madeUp: true)
    }

    /// SplitMix64 of the three numbers.
    private static func hash(_ a: Int, _ b: Int, _ c: Int) -> UInt64 {
        var x =
            UInt64(bitPattern: Int64(a)) &* 0x9E37_79B9_7F4A_7C15 ^ UInt64(bitPattern: Int64(b)) &* 0xBF58_476D_1CE4_E5B9
            ^ UInt64(bitPattern: Int64(c)) &* 0x94D0_49BB_1331_11EB
        x ^= x >> 30
        x = x &* 0xBF58_476D_1CE4_E5B9
        x ^= x >> 27
        x = x &* 0x94D0_49BB_1331_11EB
        return x ^ (x >> 31)
    }

    /// 0 ..< 1 from the hash's top 53 bits.
    private static func unit(_ value: UInt64) -> Double { Double(value >> 11) / Double(1 << 53) }
}

extension PluginRegistry {
    /// This registry with `attest dev`'s made-up context provider: the demo's alone.
    public func withDemoPlugins() -> PluginRegistry {
        var registry = self
        registry.registerContextProvider(id: MadeUpContextProvider.id) { _ in MadeUpContextProvider() }
        return registry
    }
}
