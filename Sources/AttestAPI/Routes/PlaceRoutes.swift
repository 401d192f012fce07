import AttestPlugins
import AttestServer
import Community
import Foundation
import Hummingbird
import Tenancy

/// `GET, PUT /v1/campuses/{campus}/me/places` (`{"regions": ["<region id>", …]}`, at most 10):
/// the regions the member follows, each answered with its name and latest figures.
struct PlaceRoutes: Sendable {
    let services: AttestServices

    struct Place: Encodable {
        var id: String
        /// Nil (absent) when the campus's data no longer has the region.
        var name: String?
        var population: Int?
        var asOf: String?
        var newCases7DayAverage: Double?
        var newCases7DayAveragePer100k: Double?
        var trend: String?
        var risk: String?
        var stale: Bool
        /// False when the provider did not answer in time: figures are missing, retry later.
        var available: Bool
    }

    struct Body: ResponseEncodable {
        var regions: [Place]
        var limit: Int
    }

    func register(on signedIn: RouterGroup<AttestRequestContext>) {
        signedIn.get("me/places") { request, context -> Response in
            let (campus, user) = try JournalRoutes.member(context)
            let query = QueryParameters(request, accepting: [])
            guard query.problems.isEmpty else { throw Problem.validation(query.problems) }
            let saved = try await services.places.regions(campus: campus.id, user: user)
            return try JournalRoutes.private(try await body(campus: campus, saved: saved, request: request), request, context)
        }
        signedIn.put("me/places") { request, context -> Response in
            let (campus, user) = try JournalRoutes.member(context)
            var reader = ObjectReader(try await request.jsonObject(context: context), fields: ["regions"])
            let regions: [String]? = reader.value(
                "regions", required: "a list of region ids (at most \(PlaceStore.limit))",
                wrong: "must be a list of region ids (at most \(PlaceStore.limit)), such as [\"US\", \"36061\"]"
            ) { value in
                guard case .array(let items) = value else { return nil }
                return items.reduce(into: [String]?([])) { ids, item in
                    if case .string(let id) = item { ids?.append(id) } else { ids = nil }
                }
            }
            try reader.finish()
            guard let regions else { throw Problem.validation(reader.problems) }
            do {
                reader.add(try await services.community.problems(places: regions, campus: campus))
            } catch let failure as CommunityDirectory.Failure {
                throw Problem(failure)
            }
            try reader.finish()
            try await services.places.set(campus: campus.id, user: user, regions: regions, now: services.clock())
            return try JournalRoutes.private(try await body(campus: campus, saved: regions, request: request), request, context)
        }
    }

    private func body(campus: Campus, saved: [String], request: Request) async throws -> Body {
        let places: [CommunityDirectory.Place]
        do {
            places =
                saved.isEmpty
                ? []
                : try await services.community.places(
                    campus: campus, saved: saved, languages: CommunityRoutes.languages(request.headers[.acceptLanguage]))
        } catch let failure as CommunityDirectory.Failure {
            throw Problem(failure)
        }
        let found = Dictionary(places.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        return Body(
            regions: saved.map { id in
                guard let place = found[id], let report = place.report else {
                    return Place(id: id, stale: false, available: !(found[id]?.unavailable ?? false))
                }
                let figures = report.figures
                func tenth(_ value: Double?) -> Double? { value.map { ($0 * 10).rounded() / 10 } }
                return Place(
                    id: id, name: report.region.name, population: report.region.population, asOf: figures.asOf?.description,
                    newCases7DayAverage: tenth(figures.newCases7DayAverage), newCases7DayAveragePer100k: tenth(figures.per100k),
                    trend: figures.trend?.rawValue, risk: figures.risk?.rawValue, stale: report.stale, available: true)
            }, limit: PlaceStore.limit)
    }
}
