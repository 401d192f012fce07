import AttestPlugins
import AttestServer
import Community
import Foundation
import Hummingbird
import Tenancy

/// `/c/{campus}/community`: the campus's home region, its nation, the world and the places the
/// member follows, each with its 7-day average per 100,000, trend and risk; a search to follow
/// more. `/c/{campus}/community/{region}`: one place's last 8 weeks as a chart and a table.
/// Plain forms: no script needed.
struct CommunityPages: Sendable {
    let web: WebRoutes
    var services: AttestServices { web.services }

    func register(on pages: RouterGroup<AttestRequestContext>) {
        pages.get("community") { request, context -> Response in
            let visit = try await web.visit(request, context)
            let query = QueryParameters(request, accepting: ["search", "followed", "unfollowed"])
            var notice: String?
            if query["followed"] == "1" { notice = visit["placeFollowed"] }
            if query["unfollowed"] == "1" { notice = visit["placeUnfollowed"] }
            return try await page(visit: visit, search: String((query["search"] ?? "").prefix(100)), notice: notice)
        }
        pages.get("community/:region") { request, context -> Response in
            let visit = try await web.visit(request, context)
            guard let id = context.parameters.get("region"), CommunityRegion.isValidID(id) else {
                throw Problem.notFound(visit["noSuchPlace"])
            }
            return try await detail(visit: visit, id: id)
        }
        for (action, following) in [("follow", true), ("unfollow", false)] {
            pages.post("community/\(action)") { request, context -> Response in
                let visit = try await web.visit(request, context)
                let form = try await WebForm.read(request, context: context)
                try web.checkCSRF(request, form: form, visit: visit)
                let user = try visit.privateUser().id
                let id = form["region"] ?? ""
                var saved = try await services.places.regions(campus: visit.campus.id, user: user)
                if following {
                    guard !saved.contains(id) else { throw WebOutcome.redirect(visit.base + "community?followed=1") }
                    saved.append(id)
                    let problems: [(field: String, message: String)]
                    do { problems = try await services.community.problems(places: saved, campus: visit.campus) } catch is CommunityDirectory
                        .Failure
                    {
                        return try await page(visit: visit, search: "", notice: visit["communityUnavailable"], status: .serviceUnavailable)
                    }
                    if !problems.isEmpty {
                        let message =
                            saved.count > PlaceStore.limit ? visit.format("tooManyPlaces", "\(PlaceStore.limit)") : visit["noSuchPlace"]
                        return try await page(visit: visit, search: "", notice: message, status: .unprocessableContent)
                    }
                } else {
                    saved.removeAll { $0 == id }
                }
                try await services.places.set(campus: visit.campus.id, user: user, regions: saved, now: services.clock())
                throw WebOutcome.redirect(visit.base + (following ? "community?followed=1" : "community?unfollowed=1"))
            }
        }
    }

    /// "12.3", or "–" when the figure cannot be given.
    private func figure(_ value: Double?) -> String { value.map { Charts.number($0) } ?? "–" }

    private func page(visit: WebVisit, search: String, notice: String?, status: HTTPResponse.Status = .ok) async throws -> Response {
        let user = try visit.privateUser().id
        let saved = try await services.places.regions(campus: visit.campus.id, user: user)
        var data: [String: Any] = ["search": search, "limit": visit.format("placesLimit", "\(PlaceStore.limit)")]
        if let notice { data["notice"] = notice }
        let languages = [visit.language]
        do {
            let places = try await services.community.places(campus: visit.campus, saved: saved, languages: languages)
            data["places"] = places.map { place -> [String: Any] in
                var row: [String: Any] = ["id": place.id, "why": visit["place-" + place.kind.rawValue]]
                if place.saved { row["removeAction"] = visit.base + "community/unfollow" }
                guard let report = place.report else {
                    row["name"] = place.id
                    row["per100k"] = "–"
                    row["note"] = visit[place.unavailable ? "communityUnavailable" : "placeGone"]
                    return row
                }
                row["name"] = report.region.name
                row["href"] = visit.base + "community/" + place.id
                row["per100k"] = figure(report.figures.per100k ?? report.figures.newCases7DayAverage)
                row["trend"] = report.figures.trend.map { visit["trend-" + $0.rawValue] } ?? "–"
                row["risk"] = report.figures.risk.map { visit["risk-" + $0.rawValue] } ?? "–"
                row["asOf"] = report.figures.asOf.map { WebFormat.date($0, campus: visit.campus, language: visit.language) } ?? "–"
                if report.stale { row["note"] = visit["communityStale"] }
                return row
            }
            data["hasPlaces"] = !places.isEmpty
            if !search.isEmpty {
                let found = try await services.community.regions(campus: visit.campus, matching: search, limit: 20)
                data["searched"] = true
                data["hasResults"] = !found.regions.isEmpty
                data["results"] = found.regions.map { region -> [String: Any] in
                    var item: [String: Any] = ["id": region.id, "name": region.name, "href": visit.base + "community/" + region.id]
                    if !saved.contains(region.id) { item["followAction"] = visit.base + "community/follow" }
                    return item
                }
            }
        } catch CommunityDirectory.Failure.unavailable {
            data["note"] = visit["communityUnavailable"]
        } catch is CommunityDirectory.Failure {
            data["note"] = visit["communityNone"]
        }
        return try web.renderer.render(
            .init(template: "community", title: visit["communityPageTitle"], data: data, status: status, current: "community"), visit: visit
        )
    }

    /// The place's last 8 weeks (each ending on a weekday of its latest report): new cases as
    /// bars, and a table with deaths beside cases and the per-100,000 average.
    private func detail(visit: WebVisit, id: String) async throws -> Response {
        let user = try visit.privateUser().id
        let report: CommunityDirectory.Report
        do {
            report = try await services.community.report(campus: visit.campus, region: id, languages: [visit.language])
        } catch CommunityDirectory.Failure.unavailable {
            throw Problem(
                .serviceUnavailable, slug: "community-data-unavailable", title: visit["communityPageTitle"],
                detail: visit["communityUnavailable"])
        } catch is CommunityDirectory.Failure {
            throw Problem.notFound(visit["noSuchPlace"])
        }
        let saved = try await services.places.regions(campus: visit.campus.id, user: user)
        let name = report.region.name
        var data: [String: Any] = ["name": name, "id": id, "backHref": visit.base + "community"]
        if saved.contains(id) {
            data["removeAction"] = visit.base + "community/unfollow"
        } else {
            data["followAction"] = visit.base + "community/follow"
        }
        if let asOf = report.figures.asOf {
            let weeks = Self.weeks(report.days, through: asOf)
            let population = report.region.population ?? 0
            let labels = weeks.map { String($0.to.description.dropFirst(5)) }
            let chart = Charts.bars(
                id: "place-weeks", title: visit.format("placeWeeksTitle", name),
                desc: visit.format("placeWeeksDesc", name, weeks.first?.from.description ?? "", asOf.description), categories: labels,
                values: weeks.map { $0.cases.map { Double(max($0, 0)) } }, fill: "#1d70b8", suffix: "", smallestStep: 1)
            let table = Charts.table(
                caption: visit.format("placeWeeksTitle", name),
                columns: [
                    (visit["week"], false), (visit["communityNewCases"], true), (visit["newDeaths"], true),
                    (visit[population > 0 ? "communityPer100k" : "communityPerDay"], true),
                ],
                rows: weeks.map { week in
                    guard let cases = week.cases, let deaths = week.deaths else { return ["\(week.from) – \(week.to)", "–", "–", "–"] }
                    let average = Double(max(cases, 0)) / 7
                    return [
                        "\(week.from) – \(week.to)", "\(cases)", "\(deaths)",
                        Charts.number(population > 0 ? average * 100_000 / Double(population) : average),
                    ]
                })
            data["chartHTML"] = WebHTML.chart(chart)
            data["tableHTML"] = WebHTML.table(table)
            var summary = visit.format(
                "communitySummary", report.figures.risk.map { visit["risk-" + $0.rawValue] } ?? visit["riskUnknown"],
                report.figures.trend.map { visit["trend-" + $0.rawValue] } ?? "–",
                WebFormat.date(asOf, campus: visit.campus, language: visit.language))
            if let guidance = report.guidance, report.home { summary += " " + guidance }
            data["summary"] = summary
        } else {
            data["summary"] = visit["placeNoDays"]
        }
        var source = visit.format("communitySource", report.attribution ?? report.source)
        if report.stale { source += " " + visit["communityStale"] }
        data["source"] = source
        return try web.renderer.render(.init(template: "place", title: name, data: data, wide: true, current: "community"), visit: visit)
    }

    /// Eight weeks of 7 days ending `last`, oldest first: new cases and deaths reported in each,
    /// nil for a week with no report (before the source began).
    static func weeks(_ days: [CommunityDay], through last: LocalDate) -> [(from: LocalDate, to: LocalDate, cases: Int?, deaths: Int?)] {
        (0..<8).reversed().map { back in
            let to = last.adding(days: -7 * back), from = to.adding(days: -6)
            let inWeek = days.filter { $0.date >= from && $0.date <= to }
            guard !inWeek.isEmpty else { return (from, to, nil, nil) }
            return (from, to, inWeek.reduce(0) { $0 + $1.newCases }, inWeek.reduce(0) { $0 + $1.newDeaths })
        }
    }
}
