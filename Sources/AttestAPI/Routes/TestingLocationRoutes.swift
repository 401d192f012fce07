import AttestPlugins
import AttestPostgres
import AttestServer
import Foundation
import Hummingbird
import Logging
import Synchronization
import Tenancy

/// `GET /v1/campuses/{campus}/testing-locations?lat=&lon=&limit=`: every enabled provider's
/// locations merged, nearest first (by name without a point). A provider that fails or takes
/// longer than `providerBudget` is left out and named in `unavailable`.
struct TestingLocationRoutes: Sendable {
    let services: AttestServices

    struct Item: Encodable {
        var name: String
        var address: String
        var lat: Double
        var lon: Double
        var hours: String
        var phone: String
        var url: String
        var notes: String
        var distanceKm: Double?
        var provider: String
        var stale: Bool
    }

    struct Body: ResponseEncodable {
        var locations: [Item]
        var unavailable: [String]
    }

    func register(on signedIn: RouterGroup<AttestRequestContext>) {
        signedIn.get("testing-locations") { request, context -> Body in
            let campus = try context.requireCampus()
            let query = try TestingLocationQuery.parse(QueryParameters(request, accepting: ["lat", "lon", "limit"]))
            let found = try await services.testingLocations.nearest(
                campus: campus, to: query.point.map { ($0.lat, $0.lon) }, limit: query.limit)
            return Body(
                locations: found.locations.map { item in
                    let location = item.location
                    return Item(
                        name: location.name, address: location.address, lat: location.latitude, lon: location.longitude,
                        hours: location.hours, phone: location.phone, url: location.url, notes: location.notes,
                        distanceKm: item.distanceKm, provider: item.provider, stale: item.stale)
                },
                unavailable: found.unavailable)
        }
    }

}
