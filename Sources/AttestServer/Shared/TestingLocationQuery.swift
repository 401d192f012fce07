import AttestFoundation
import AttestPlugins
import Foundation
import HTTPTypes
import Hummingbird
import Identity
import Journal
import NIOCore
import Surveys
import Tenancy

/// A testing-location list's query (`lat`, `lon`, `limit`), for the API and the pages.
package enum TestingLocationQuery {
    package static func parse(_ parameters: QueryParameters) throws -> (point: (lat: Double, lon: Double)?, limit: Int) {
        var problems = parameters.problems
        func number(_ name: String, _ range: ClosedRange<Double>) -> Double? {
            guard let text = parameters[name] else { return nil }
            guard let value = Double(text), value.isFinite, range.contains(value) else {
                problems.append(.init(field: name, message: "must be a number from \(Int(range.lowerBound)) to \(Int(range.upperBound))"))
                return nil
            }
            return value
        }
        let lat = number("lat", -90...90), lon = number("lon", -180...180)
        if (parameters["lat"] == nil) != (parameters["lon"] == nil) {
            problems.append(.init(field: parameters["lat"] == nil ? "lat" : "lon", message: "give lat and lon together, or neither"))
        }
        let limit = parameters.limit(default: 20, most: 100, problems: &problems)
        guard problems.isEmpty else { throw Problem.validation(problems) }
        return (lat.flatMap { lat in lon.map { (lat, $0) } }, limit)
    }
}
