import AttestPlugins
import Foundation
import Testing

@testable import BuiltinPlugins

/// `attest dev`'s made-up weather: the same place and hour answer the same, every value lies
/// in its plausible range, the seasons and the day turn, and every answer says it is made up.
@Suite("Made-up context")
struct MadeUpContextTests {
    @Test func theModelIsDeterministicPlausibleSeasonalAndMarked() throws {
        let july = try Date("2026-07-15T19:00:00Z", strategy: .iso8601), january = try Date("2026-01-15T19:00:00Z", strategy: .iso8601)
        let newYork = MadeUpContextProvider.model(at: july, latitude: 40.8, longitude: -74)
        #expect(newYork == MadeUpContextProvider.model(at: july, latitude: 40.8, longitude: -74))
        #expect(newYork.madeUp == true && newYork.plausible == newYork)
        var summer: [Double] = [], winter: [Double] = [], noon: [Double] = [], midnight: [Double] = []
        for latitude in stride(from: -60.0, through: 70, by: 10) {
            for longitude in stride(from: -170.0, through: 170, by: 40) {
                for hour in 0..<48 {
                    let factors = MadeUpContextProvider.model(
                        at: january.addingTimeInterval(Double(hour) * 3_600 + 86_400 * 180), latitude: latitude, longitude: longitude)
                    // Every factor present and plausible (the platform would drop one that is not).
                    #expect(
                        factors.plausible == factors && factors.values.allSatisfy { $0.value != nil }, "\(latitude) \(longitude) \(hour)")
                    #expect((0...500).contains(factors.airQuality ?? -1))
                }
            }
        }
        for day in 0..<28 {
            let offset = Double(day) * 86_400
            summer.append(MadeUpContextProvider.model(at: july.addingTimeInterval(offset), latitude: 40.8, longitude: -74).temperature ?? 0)
            winter.append(
                MadeUpContextProvider.model(at: january.addingTimeInterval(offset), latitude: 40.8, longitude: -74).temperature ?? 0)
            // New York's local noon is about 17:00 UTC, its midnight about 05:00.
            let start = january.addingTimeInterval(offset - 2 * 3_600)
            noon.append(MadeUpContextProvider.model(at: start, latitude: 40.8, longitude: -74).uvIndex ?? 0)
            midnight.append(
                MadeUpContextProvider.model(at: start.addingTimeInterval(12 * 3_600), latitude: 40.8, longitude: -74).uvIndex ?? 0)
        }
        let summerAverage: Double = summer.reduce(0, +) / 28, winterAverage: Double = winter.reduce(0, +) / 28
        #expect(summerAverage > winterAverage + 10)
        #expect(noon.allSatisfy { $0 > 0 } && midnight.allSatisfy { $0 == 0 })
        // Places and hours differ: not one answer for all.
        #expect(Set(winter).count > 10)
        #expect(MadeUpContextProvider.model(at: july, latitude: -33.9, longitude: 151.2) != newYork)
        // Only the demo's registry knows it.
        #expect(!PluginRegistry.builtin.contextProviderIDs.contains("made-up"))
        #expect(PluginRegistry.builtin.withDemoPlugins().contextProviderIDs.contains("made-up"))
    }
}
