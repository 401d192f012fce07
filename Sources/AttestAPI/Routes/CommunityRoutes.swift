import AttestPlugins
import AttestServer
import Community
import Foundation
import Hummingbird
import Tenancy

/// `GET /v1/campuses/{campus}/community[?region=]`: the region's figures, risk level and the
/// campus's guidance; `GET …/community/regions?search=&limit=`: the regions the campus's
/// provider knows, by name.
struct CommunityRoutes: Sendable {
    let services: AttestServices

    struct Region: Encodable {
        var id: String
        var name: String
        var population: Int?
    }

    struct Day: Encodable {
        var date: String
        var newCases: Int
        var newDeaths: Int
        var tests: Int?
        var admissions: Int?
    }

    struct Body: ResponseEncodable {
        var region: Region
        var home: Bool
        var asOf: String?
        var newCases7DayAverage: Double?
        var newCases7DayAveragePer100k: Double?
        var trend: String?
        var risk: String?
        var guidance: String?
        var riskThresholds: [Double]
        var source: String
        var attribution: String?
        var stale: Bool
        var days: [Day]
    }

    struct Regions: ResponseEncodable {
        var regions: [Region]
        var source: String
    }

    /// How many reported days the answer carries (four weeks: the trend's two and a margin).
    static let daysShown = 28

    func register(on signedIn: RouterGroup<AttestRequestContext>) {
        signedIn.get("community") { request, context -> Body in
            let campus = try context.requireCampus()
            let query = QueryParameters(request, accepting: ["region"])
            var problems = query.problems
            let region = query["region"]
            if let region, !CommunityRegion.isValidID(region) {
                problems.append(
                    .init(
                        field: "region",
                        message: "must be a region id: 1 to 64 letters, digits or ._:- (GET …/community/regions?search= finds one)"))
            }
            guard problems.isEmpty else { throw Problem.validation(problems) }
            let report: CommunityDirectory.Report
            do {
                report = try await services.community.report(
                    campus: campus, region: region, languages: Self.languages(request.headers[.acceptLanguage]))
            } catch let failure as CommunityDirectory.Failure {
                throw Problem(failure)
            }
            return Self.body(report)
        }
        signedIn.get("community/regions") { request, context -> Regions in
            let campus = try context.requireCampus()
            let query = QueryParameters(request, accepting: ["search", "limit"])
            var problems = query.problems
            let search = query["search"] ?? ""
            if search.count > 100 { problems.append(.init(field: "search", message: "must be at most 100 characters")) }
            let limit = query.limit(default: 20, most: 100, problems: &problems)
            guard problems.isEmpty else { throw Problem.validation(problems) }
            do {
                let found = try await services.community.regions(campus: campus, matching: search, limit: limit)
                return Regions(
                    regions: found.regions.map { Region(id: $0.id, name: $0.name, population: $0.population) }, source: found.source)
            } catch let failure as CommunityDirectory.Failure {
                throw Problem(failure)
            }
        }
    }

    static func body(_ report: CommunityDirectory.Report) -> Body {
        let figures = report.figures
        func tenth(_ value: Double?) -> Double? { value.map { ($0 * 10).rounded() / 10 } }
        return Body(
            region: Region(id: report.region.id, name: report.region.name, population: report.region.population), home: report.home,
            asOf: figures.asOf?.description, newCases7DayAverage: tenth(figures.newCases7DayAverage),
            newCases7DayAveragePer100k: tenth(figures.per100k), trend: figures.trend?.rawValue, risk: figures.risk?.rawValue,
            guidance: report.guidance, riskThresholds: report.thresholds, source: report.source, attribution: report.attribution,
            stale: report.stale,
            days: report.days.suffix(daysShown).map {
                Day(date: $0.date.description, newCases: $0.newCases, newDeaths: $0.newDeaths, tests: $0.tests, admissions: $0.admissions)
            })
    }

    /// The language tags of an Accept-Language header, most wanted first (at most ten).
    static func languages(_ header: String?) -> [String] {
        guard let header else { return [] }
        var ranked: [(tag: String, weight: Double, order: Int)] = []
        for (order, part) in header.split(separator: ",").prefix(20).enumerated() {
            let pieces = part.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
            guard let tag = pieces.first, !tag.isEmpty, tag != "*", tag.utf8.count <= 35 else { continue }
            var weight = 1.0
            for parameter in pieces.dropFirst() where parameter.hasPrefix("q=") { weight = Double(parameter.dropFirst(2)) ?? 0 }
            if weight > 0 { ranked.append((tag, weight, order)) }
        }
        return ranked.sorted { $0.weight != $1.weight ? $0.weight > $1.weight : $0.order < $1.order }.prefix(10).map(\.tag)
    }
}

extension Problem {
    init(_ failure: CommunityDirectory.Failure) {
        let detail = Problem.sentence(failure)
        switch failure {
        case .notEnabled: self.init(.notFound, slug: "community-data-not-enabled", title: "No community data", detail: detail)
        case .noHomeRegion: self.init(.notFound, slug: "no-home-region", title: "No home region", detail: detail)
        case .unknownRegion: self.init(.notFound, slug: "not-found", title: "Not found", detail: detail)
        case .unavailable:
            self.init(
                .serviceUnavailable, slug: "community-data-unavailable", title: "Community data unavailable", detail: detail,
                headers: [.retryAfter: "60"])
        }
    }
}
