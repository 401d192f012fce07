import AttestPlugins
import AttestServer
import Foundation
import Hummingbird
import Identity
import Surveys
import Tenancy

/// The administrators' dashboard (with its CSV) and the health officers' follow-ups.
struct AdminPages: Sendable {
    let web: WebRoutes
    var services: AttestServices { web.services }

    func register(on pages: RouterGroup<AttestRequestContext>) {
        pages.get("admin") { request, context -> Response in
            try await dashboard(request, context)
        }
        pages.get("admin/report.csv") { request, context -> Response in
            let visit = try await web.visit(request, context, roles: [.admin])
            let range = try range(request, visit: visit)
            let (days, _, _) = try await services.statisticsService.dashboard(campus: visit.campus.id, range: range)
            var response = Response(
                status: .ok, headers: [.contentType: "text/csv; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(string: AggregateReport.csv(days))))
            response.headers[.contentDisposition] = "attachment; filename=\"\(visit.campus.slug)-\(range.from)-\(range.to).csv\""
            return response
        }
        pages.get("admin/doors.csv") { request, context -> Response in
            let visit = try await web.visit(request, context, roles: [.admin])
            let range = try range(request, visit: visit)
            try DoorCounts.checkHourly(range)
            let hours = try await services.doorCounts.hours(campus: visit.campus, range: range)
            var response = Response(
                status: .ok, headers: [.contentType: "text/csv; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(string: DoorCounts.csv(hours, campus: visit.campus))))
            response.headers[.contentDisposition] = "attachment; filename=\"\(visit.campus.slug)-doors-\(range.from)-\(range.to).csv\""
            return response
        }
        pages.get("admin/follow-ups") { request, context -> Response in
            try await followUps(request, context)
        }
    }

    /// The form of `from`/`to` in the query, by default the 30 days up to today.
    private func rangeForm(_ request: Request, visit: WebVisit) -> RangeForm {
        let today = visit.campus.localDate(at: services.clock())
        return RangeForm(request, fallback: DateRange(from: today.adding(days: -29), to: today), visit: visit)
    }

    /// `from`/`to` of the query, or a 422 saying what is wrong with them.
    private func range(_ request: Request, visit: WebVisit) throws -> DateRange {
        try rangeForm(request, visit: visit).checked(visit)
    }

    private func dashboard(_ request: Request, _ context: AttestRequestContext) async throws -> Response {
        let visit = try await web.visit(request, context, roles: [.admin])
        let form = rangeForm(request, visit: visit)
        guard let range = form.range else {
            // The form again, each date's problem beside it, and no figures.
            var data: [String: Any] = ["range": form.fields]
            form.errors.summary(into: &data)
            return try web.renderer.render(
                .init(
                    template: "admin", title: form.errors.title(visit["adminTitle"], visit: visit), data: data,
                    status: .unprocessableContent, wide: true, current: "admin"),
                visit: visit)
        }
        let (days, total, symptoms) = try await services.statisticsService.dashboard(campus: visit.campus.id, range: range)
        let today = visit.campus.localDate(at: services.clock())
        let pieDay = days.last { $0.date == today } ?? days.last
        let colorNames: [(key: String, label: String)] = [
            ("green", visit["colorGreen"]), ("yellow", visit["colorYellow"]), ("red", visit["colorRed"]),
        ]
        var charts: [WebChart] = []
        var tables: [WebTable] = []
        if let pieDay {
            let counts = [pieDay.green, pieDay.yellow, pieDay.red]
            let dateText = WebFormat.date(pieDay.date, campus: visit.campus, language: visit.language)
            charts.append(
                Charts.pie(
                    id: "pie", title: visit.format("pieTitle", dateText),
                    desc: pieDay.submitted == 0
                        ? visit.format("pieEmpty", dateText) : visit.format("pieDesc", "\(counts[0])", "\(counts[1])", "\(counts[2])"),
                    slices: zip(colorNames, counts).map { ($0.key, $1, $0.label) }))
            let sum = max(counts.reduce(0, +), 1)
            tables.append(
                Charts.table(
                    caption: visit.format("pieTitle", dateText),
                    columns: [(visit["badge"], false), (visit["count"], true), (visit["percent"], true)],
                    rows: zip(colorNames, counts).map { [$0.label, "\($1)", WebFormat.percent(Double($1) * 100 / Double(sum)) + "%"] }))
        }
        let dates = days.map(\.date)
        charts.append(
            Charts.stackedBars(
                id: "punctuality", title: visit["barsTitle"],
                desc: visit.format("barsDesc", "\(days.count)", range.from.description, range.to.description),
                dates: dates,
                segments: days.map {
                    [
                        ("ontime", Double($0.onTime), visit["onTime"]), ("late", Double($0.late), visit["late"]),
                        ("missing", Double($0.missing), visit["missing"]),
                    ]
                },
                top: Double(max(days.map { $0.onTime + $0.late + $0.missing }.max() ?? 0, 1)), suffix: "",
                legend: [("ontime", visit["onTime"]), ("late", visit["late"]), ("missing", visit["missing"])]))
        tables.append(
            Charts.table(
                caption: visit["barsTitle"],
                columns: [
                    (visit["date"], false), (visit["active"], true), (visit["submitted"], true), (visit["onTime"], true),
                    (visit["late"], true),
                    (visit["missing"], true), (visit["complianceRate"], true),
                ],
                rows: days.map { day in
                    [
                        day.date.description, "\(day.active)", "\(day.submitted)", "\(day.onTime)", "\(day.late)", "\(day.missing)",
                        day.complianceRate.map { WebFormat.percent($0 * 100) + "%" } ?? visit["noData"],
                    ]
                }))
        if !symptoms.isEmpty {
            let series = symptoms.map { id in
                (
                    name: WebFormat.words(id),
                    values: days.map { day -> Double? in
                        day.submitted > 0 ? Double(day.answers[id]?["true"] ?? 0) * 100 / Double(day.submitted) : nil
                    }
                )
            }
            let top = max(10, ((series.flatMap { $0.values.compactMap { $0 } }.max() ?? 0) / 10).rounded(.up) * 10)
            charts.append(
                Charts.lines(
                    id: "symptoms", title: visit["linesTitle"], desc: visit.format("linesDesc", "\(days.count)"), dates: dates,
                    series: series,
                    top: min(top, 100), suffix: "%"))
            tables.append(
                Charts.table(
                    caption: visit["symptomCounts"],
                    columns: [(visit["date"], false), (visit["submitted"], true)] + symptoms.map { (WebFormat.words($0), true) },
                    rows: days.map { day in
                        [day.date.description, "\(day.submitted)"] + symptoms.map { "\(day.answers[$0]?["true"] ?? 0)" }
                    }))
        }
        let doors = try await services.doorCounts.totals(campus: visit.campus, range: range)
        var lastDayHours: [DoorCounts.Hour] = []
        if let day = doors.lastDay {
            lastDayHours = try await services.doorCounts.hours(campus: visit.campus, range: DateRange(from: day, to: day))
        }
        tables += doorTables(totals: doors.doors, lastDay: doors.lastDay, hours: lastDayHours, range: range, visit: visit)
        let rangeQuery = WebRoutes.query([("from", range.from.description), ("to", range.to.description)])
        // Guests are counted apart from members (they are in no member's figure).
        let guests = try await services.guests.counts(campus: visit.campus.id, date: today)
        let guestsText = colorNames.map { "\($0.label) \(guests[BadgeColor(rawValue: $0.key) ?? .gray] ?? 0)" }.joined(separator: " · ")
        var data: [String: Any] = [
            "range": form.fields, "figures": true,
            "doorsCsvHref": visit.base + "admin/doors.csv" + rangeQuery, "doorsNone": doors.doors.isEmpty,
            "csvHref": visit.base + "admin/report.csv" + WebRoutes.query([("from", range.from.description), ("to", range.to.description)]),
            "compliance": total.complianceRate.map { WebFormat.percent($0 * 100) + "%" } ?? visit["noData"],
            "totalsText": visit.format("totals", "\(total.submitted)", "\(total.onTime)", "\(total.late)", "\(total.missing)"),
            "charts": charts, "tables": tables,
        ]
        if GuestPolicy(campus: visit.campus).open || !guests.isEmpty {
            data["guests"] = [
                "text": visit.format("adminGuestsIntro", guestsText), "pdfHref": visit.base + "admin/poster.pdf",
                "svgHref": visit.base + "admin/poster.svg",
            ]
        }
        return try web.renderer.render(
            .init(template: "admin", title: visit["adminTitle"], data: data, wide: true, current: "admin"), visit: visit)
    }

    /// The checks at each door over the range (`totals`), and by hour on the range's last day
    /// with any (`hours`).
    private func doorTables(
        totals: [DoorCounts.Hour], lastDay: LocalDate?, hours: [DoorCounts.Hour], range: DateRange, visit: WebVisit
    ) -> [WebTable] {
        guard let lastDay, !totals.isEmpty else { return [] }
        let colors = BadgeColor.allCases.filter { $0 != .gray } + [.gray]
        let columns: [(label: String, num: Bool)] =
            colors.map { (visit["color" + $0.rawValue.prefix(1).uppercased() + $0.rawValue.dropFirst()], true) } + [
                (visit["guests"], true), (visit["refused"], true), (visit["total"], true),
            ]
        func cells(_ hours: [DoorCounts.Hour]) -> [String] {
            var members: [String: Int] = [:], guests = 0, refused = 0
            for hour in hours {
                members.merge(hour.members, uniquingKeysWith: +)
                guests += hour.guests.values.reduce(0, +)
                refused += hour.refused.values.reduce(0, +)
            }
            return colors.map { "\(members[$0.rawValue] ?? 0)" } + ["\(guests)", "\(refused)", "\(hours.map(\.total).reduce(0, +))"]
        }
        let dayHours = hours.sorted { ($0.hour, $0.door) < ($1.hour, $1.door) }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = visit.campus.zone
        return [
            Charts.table(
                caption: visit.format("doorsTitle", range.from.description, range.to.description),
                columns: [(visit["door"], false)] + columns, rows: totals.map { [$0.door] + cells([$0]) }),
            Charts.table(
                caption: visit.format("doorsHourTitle", WebFormat.date(lastDay, campus: visit.campus, language: visit.language)),
                columns: [(visit["hour"], false), (visit["door"], false)] + columns,
                rows: dayHours.map { hour in
                    let start = calendar.component(.hour, from: hour.hour)
                    return [String(format: "%02d:00", start), hour.door] + cells([hour])
                }),
        ]
    }

    private func followUps(_ request: Request, _ context: AttestRequestContext) async throws -> Response {
        let visit = try await web.visit(request, context, roles: [.healthOfficer])
        let user = try visit.signedInUser()
        let today = visit.campus.localDate(at: services.clock())
        let date = request.uri.queryParameters.get("date").flatMap { LocalDate(String($0)) } ?? today
        let cursor = request.uri.queryParameters.get("cursor").flatMap { StatisticsStore.FollowUpCursor(String($0)) }
        let page = try await services.statisticsService.followUps(
            campus: visit.campus.id, date: date, colors: [.red, .yellow], after: cursor, limit: 50, actor: "user:\(user.email)")
        let words: [BadgeColor: String] = [.yellow: "colorYellow", .red: "colorRed"]
        let guests = try await services.guests.followUps(campus: visit.campus.id, date: date, actor: "user:\(user.email)")
        // Every reason on the page in its language, in one call.
        let given = guests.map { $0.reason ?? "" } + page.items.map(\.reason)
        let reasons = await web.reasons(given, visit: visit)
        var data: [String: Any] = [
            "guests": zip(guests, reasons).map { guest, reason -> [String: Any] in
                [
                    "name": guest.name, "email": guest.email, "host": guest.hostName, "color": guest.color?.rawValue ?? "gray",
                    "colorWord": visit[words[guest.color ?? .gray] ?? "colorGray"], "reason": reason,
                ]
            },
            "hasGuests": !guests.isEmpty,
            "date": date.description,
            "caption": visit.format("followUpsCaption", WebFormat.date(date, campus: visit.campus, language: visit.language)),
            "hasItems": !page.items.isEmpty,
            "items": zip(page.items, reasons.dropFirst(guests.count)).map { item, reason -> [String: Any] in
                [
                    "name": item.name, "email": item.email, "color": item.color.rawValue,
                    "colorWord": visit[words[item.color] ?? "colorGray"],
                    "reason": reason, "submittedAt": WebFormat.time(item.submittedAt, campus: visit.campus), "late": !item.onTime,
                ]
            },
        ]
        let base = visit.base + "admin/follow-ups"
        if let next = page.next { data["nextHref"] = base + WebRoutes.query([("date", date.description), ("cursor", next.description)]) }
        if cursor != nil { data["firstHref"] = base + WebRoutes.query([("date", date.description)]) }
        return try web.renderer.render(
            .init(template: "followups", title: visit["followUpsTitle"], data: data, wide: true, current: "follow-ups"), visit: visit)
    }
}
