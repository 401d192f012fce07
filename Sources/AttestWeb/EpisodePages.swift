import AttestPlugins
import AttestServer
import Foundation
import Hummingbird
import Journal
import Surveys
import Tenancy

/// The member's episodes: `/c/{campus}/episodes` (what is open, with a one-tap stop; a
/// one-tap start per kind; the summary by month as SVG charts and tables; every episode,
/// newest first) and `/c/{campus}/episodes/{id}` (details, the weather where it began, a map
/// link, edit and delete). Times are shown and typed in the campus's time zone. The checks
/// are the API's (`EpisodeDraft.problems`), in the member's words.
struct EpisodePages: Sendable {
    let web: WebRoutes
    var services: AttestServices { web.services }
    var store: EpisodeStore { services.episodes }

    func register(on pages: RouterGroup<AttestRequestContext>) {
        pages.get("episodes") { request, context -> Response in
            let visit = try await web.visit(request, context)
            return try await episodesPage(visit: visit, request: request, values: Values())
        }
        pages.post("episodes") { request, context -> Response in
            let visit = try await web.visit(request, context)
            let form = try await WebForm.read(request, context: context)
            try web.checkCSRF(request, form: form, visit: visit)
            let now = services.clock()
            var (values, draft, errors) = read(form, base: nil, visit: visit, now: now)
            if let draft, errors.isEmpty {
                do {
                    let user = try visit.privateUser().id
                    _ = try await services.episodes.start(
                        campus: visit.campus, user: user, draft, context: services.episodeContext, now: now)
                    throw WebOutcome.redirect(visit.base + "episodes?started=1")
                } catch EpisodeError.alreadyOpen(let kind, _) {
                    errors.add("kind", anchor: Self.kindAnchor(kind), visit.format("alreadyOpenError", kindWord(kind, visit).lowercased()))
                }
            }
            return try await episodesPage(visit: visit, request: request, values: values, errors: errors, status: .unprocessableContent)
        }
        pages.get("episodes/:id") { request, context -> Response in
            let (visit, episode) = try await find(request, context)
            return try episodePage(
                episode, visit: visit, values: Values(episode, campus: visit.campus),
                notice: visit.path.hasSuffix("?saved=1") ? visit["episodeSaved"] : nil)
        }
        pages.post("episodes/:id") { request, context -> Response in
            let (visit, episode) = try await find(request, context)
            let form = try await WebForm.read(request, context: context)
            try web.checkCSRF(request, form: form, visit: visit)
            let now = services.clock()
            let base = EpisodeDraft(
                kind: episode.kind, severity: episode.severity, notes: episode.notes, startedAt: episode.startedAt,
                stoppedAt: episode.stoppedAt,
                location: episode.location)
            var (values, draft, errors) = read(form, base: base, visit: visit, now: now)
            if let draft, errors.isEmpty {
                do {
                    let user = try visit.privateUser().id
                    _ = try await store.update(campus: visit.campus.id, user: user, id: episode.id, draft, now: now)
                    throw WebOutcome.redirect(visit.base + "episodes/\(episode.id.lowercasedText)?saved=1")
                } catch EpisodeError.alreadyOpen(let kind, _) {
                    errors.add("kind", anchor: "episode-kind", visit.format("alreadyOpenError", kindWord(kind, visit).lowercased()))
                }
            }
            if values.kind.isEmpty { values.kind = episode.kind }
            return try episodePage(episode, visit: visit, values: values, errors: errors, status: .unprocessableContent)
        }
        pages.post("episodes/:id/stop") { request, context -> Response in
            let (visit, episode) = try await find(request, context)
            try web.checkCSRF(request, form: try await WebForm.read(request, context: context), visit: visit)
            let now = services.clock()
            let user = try visit.privateUser().id
            do {
                _ = try await store.stop(campus: visit.campus.id, user: user, id: episode.id, at: now, now: now)
            } catch EpisodeError.alreadyStopped {
                // Stopped already (another tab, or closed at 72 h): the list shows it so.
            }
            throw WebOutcome.redirect(visit.base + "episodes?stopped=1")
        }
        pages.post("episodes/:id/delete") { request, context -> Response in
            let (visit, episode) = try await find(request, context)
            try web.checkCSRF(request, form: try await WebForm.read(request, context: context), visit: visit)
            let user = try visit.privateUser().id
            _ = try await store.delete(campus: visit.campus.id, user: user, id: episode.id, now: services.clock())
            throw WebOutcome.redirect(visit.base + "episodes?deleted=1")
        }
    }

    /// The signed-in member's episode named in the path; another's, or none, is the 404 page.
    private func find(_ request: Request, _ context: AttestRequestContext) async throws -> (WebVisit, Episode) {
        let visit = try await web.visit(request, context)
        let user = try visit.privateUser().id
        guard let text = context.parameters.get("id"), let id = UUID(uuidString: text),
            let episode = try await store.find(campus: visit.campus.id, user: user, id: id, now: services.clock())
        else { throw Problem.notFound(visit["episodeNotFound"]) }
        return (visit, episode)
    }

    func kinds(_ visit: WebVisit) -> [String] { EpisodeDraft.kinds(settings: EpisodeHTTP.settings(visit.campus)) }

    /// "Headache", or a campus's own kind in words ("cluster-headache" → "Cluster headache").
    func kindWord(_ kind: String, _ visit: WebVisit) -> String {
        visit.text["kind-" + kind] ?? WebFormat.words(kind.replacingOccurrences(of: "-", with: "_"))
    }

    static func kindAnchor(_ kind: String) -> String { "episode-start-\(kind)" }

    // MARK: The forms

    /// What the forms show: the member's input as typed, even when it is not yet valid.
    struct Values {
        var kind = ""
        var severity = "5"
        var notes = ""
        var startedAt = ""
        var stoppedAt = ""
        var lat = ""
        var lon = ""

        init() {}

        init(_ episode: Episode, campus: Campus) {
            kind = episode.kind
            severity = "\(episode.severity)"
            notes = episode.notes
            startedAt = WebFormat.localDateTime(episode.startedAt, campus: campus)
            stoppedAt = episode.stoppedAt.map { WebFormat.localDateTime($0, campus: campus) } ?? ""
        }
    }

    /// A start (`base` nil: the kind is the button pressed, the start now unless given, a place
    /// when the page's script added one) or an edit of `base`; checked as the API checks them.
    private func read(_ form: WebForm, base: EpisodeDraft?, visit: WebVisit, now: Date) -> (Values, EpisodeDraft?, FormErrors) {
        var values = Values()
        values.kind = form["kind"] ?? ""
        values.severity = (form["severity"] ?? "").trimmingCharacters(in: .whitespaces)
        values.notes = (form["notes"] ?? "").replacingOccurrences(of: "\r\n", with: "\n")
        values.startedAt = (form["startedAt"] ?? "").trimmingCharacters(in: .whitespaces)
        values.stoppedAt = (form["stoppedAt"] ?? "").trimmingCharacters(in: .whitespaces)
        values.lat = form["lat"] ?? ""
        values.lon = form["lon"] ?? ""
        let kinds = kinds(visit)
        let kindAnchor = base == nil ? Self.kindAnchor(kinds.first ?? "") : "episode-kind"
        var errors = FormErrors()
        var draft = base ?? EpisodeDraft(kind: values.kind, severity: 0, startedAt: now)
        draft.kind = values.kind
        draft.notes = values.notes
        if let severity = Int(values.severity), (0...10).contains(severity) {
            draft.severity = severity
        } else {
            errors.add("severity", anchor: "episode-severity", visit["severityError"])
        }
        if values.startedAt.isEmpty, base == nil {
            draft.startedAt = now
        } else if let instant = WebFormat.instant(localDateTime: values.startedAt, campus: visit.campus) {
            draft.startedAt = instant
        } else {
            errors.add("startedAt", anchor: "episode-started", visit["startedError"])
        }
        if base != nil {
            if values.stoppedAt.isEmpty {
                if draft.stoppedAt != nil { errors.add("stoppedAt", anchor: "episode-stopped", visit["stoppedKeptError"]) }
            } else if let instant = WebFormat.instant(localDateTime: values.stoppedAt, campus: visit.campus) {
                draft.stoppedAt = instant
            } else {
                errors.add("stoppedAt", anchor: "episode-stopped", visit["stoppedError"])
            }
        }
        if base == nil, !values.lat.isEmpty || !values.lon.isEmpty {
            if let lat = Double(values.lat), let lon = Double(values.lon), let place = CoarseLocation(latitude: lat, longitude: lon) {
                draft.location = place
            } else {
                errors.add("location", anchor: "episode-place", visit["placeError"])
            }
        }
        for problem in draft.problems(kinds: kinds, now: now) {
            switch problem.field {
            case "kind":
                errors.add(
                    "kind", anchor: kindAnchor,
                    visit.format("kindError", kinds.map { kindWord($0, visit).lowercased() }.joined(separator: ", ")))
            case "severity": errors.add("severity", anchor: "episode-severity", visit["severityError"])
            case "notes": errors.add("notes", anchor: "episode-notes", visit.format("notesError", "\(EpisodeDraft.maxNotes)"))
            case "startedAt": errors.add("startedAt", anchor: "episode-started", visit["startedError"])
            default: errors.add("stoppedAt", anchor: "episode-stopped", visit["stoppedError"])
            }
        }
        return (values, errors.isEmpty ? draft : nil, errors)
    }

    private func severityOptions(_ selected: String) -> [[String: Any]] {
        (0...10).map { ["value": "\($0)", "selected": "\($0)" == selected] }
    }

    // MARK: The pages

    private func episodesPage(
        visit: WebVisit, request: Request, values: Values, errors: FormErrors = FormErrors(), status: HTTPResponse.Status = .ok
    ) async throws -> Response {
        let user = try visit.privateUser().id, campus = visit.campus, now = services.clock()
        let query = request.uri.queryParameters
        let today = campus.localDate(at: now)
        // The summary: by default the six calendar months to today.
        let sixMonths = LocalDate(year: today.month > 5 ? today.year : today.year - 1, month: (today.month + 6) % 12 + 1, day: 1)
        let rangeForm = RangeForm(request, fallback: DateRange(from: sixMonths, to: today), visit: visit)
        var errors = errors, status = status
        for field in ["from", "to"] {
            if let message = rangeForm.errors[field] { errors.add(field, anchor: field, message) }
        }
        if rangeForm.range == nil { status = .unprocessableContent }
        let cursorText = query.get("cursor").map { String($0) }
        let cursor = cursorText.flatMap { EpisodeStore.Cursor(text: $0) }
        var inRange: [Episode]?
        if let range = rangeForm.range {
            inRange = try await store.range(
                campus: campus.id, user: user, from: campus.startOfDay(range.from), to: campus.startOfDay(range.to.adding(days: 1)),
                now: now)
        }
        let (recent, page) = (
            // Open ones started within the 72 hours before they close on their own.
            try await store.range(
                campus: campus.id, user: user, from: now.addingTimeInterval(-EpisodeDraft.longest - 3600),
                to: now.addingTimeInterval(3600), now: now),
            try await store.list(campus: campus.id, user: user, after: cursor, limit: 20, now: now)
        )
        let kinds = kinds(visit)
        var data: [String: Any] = [
            "open": recent.filter { $0.stoppedAt == nil }.reversed().map { episode -> [String: Any] in
                [
                    "text": visit.format(
                        "openSince", kindWord(episode.kind, visit),
                        WebFormat.dateTime(episode.startedAt, campus: campus, language: visit.language),
                        WebFormat.duration(Int(exactly: now.timeIntervalSince(episode.startedAt).rounded(.down).clamped(to: 0...1e9)) ?? 0)),
                    "stopAction": visit.base + "episodes/\(episode.id.lowercasedText)/stop",
                    "stopLabel": visit.format("stopKind", kindWord(episode.kind, visit).lowercased()),
                ]
            },
            "start": [
                "severity": errors.field("severity", value: values.severity), "severityOptions": severityOptions(values.severity),
                "notes": errors.field("notes", value: values.notes), "startedAt": errors.field("startedAt", value: values.startedAt),
                "place": errors.field("location", value: ""), "lat": values.lat, "lon": values.lon,
                "kinds": kinds.enumerated().map { index, kind -> [String: Any] in
                    [
                        "value": kind, "label": visit.format("startKind", kindWord(kind, visit).lowercased()), "id": Self.kindAnchor(kind),
                        "first": index == 0,
                    ]
                },
                "kindError": errors["kind"] ?? "",
            ].droppingEmptyText(),
            "range": rangeForm.fields,
            "hasEpisodes": !page.episodes.isEmpty,
            "episodes": page.episodes.map { item(for: $0, visit: visit) },
        ]
        if let range = rangeForm.range, let inRange {
            let summary = EpisodeSummary(inRange, zone: campus.zone)
            Self.addSummary(summary, range: range, to: &data, visit: visit, kindWord: { kindWord($0, visit) })
            if summary.madeUp { data["summaryMadeUp"] = visit["madeUpWeather"] }
        }
        if let bmi = try await services.profiles.profile(campus: campus.id, user: user).bmi {
            data["bmiText"] = visit.format("bmiLine", Charts.number(bmi))
        }
        if let next = page.next { data["olderHref"] = visit.base + "episodes?cursor=\(next.text)" }
        if cursorText != nil { data["newerHref"] = visit.base + "episodes" }
        for (flag, key) in [("started", "episodeStarted"), ("stopped", "episodeStopped"), ("deleted", "episodeDeleted")]
        where query.get(flag) == "1" {
            data["notice"] = visit[key]
        }
        errors.summary(into: &data)
        return try web.renderer.render(
            .init(
                template: "episodes", title: errors.title(visit["episodesTitle"], visit: visit), data: data, status: status,
                scripts: ["place.js"],
                wide: true, current: "episodes"),
            visit: visit)
    }

    private func item(for episode: Episode, visit: WebVisit) -> [String: Any] {
        var item: [String: Any] = [
            "href": visit.base + "episodes/\(episode.id.lowercasedText)", "kind": kindWord(episode.kind, visit),
            "started": WebFormat.dateTime(episode.startedAt, campus: visit.campus, language: visit.language),
            "duration": episode.durationSeconds.map(WebFormat.duration) ?? visit["openWord"], "severity": "\(episode.severity)",
        ]
        if episode.autoClosed { item["autoClosed"] = true }
        return item
    }

    private func episodePage(
        _ episode: Episode, visit: WebVisit, values: Values, errors: FormErrors = FormErrors(), notice: String? = nil,
        status: HTTPResponse.Status = .ok
    ) throws -> Response {
        let campus = visit.campus
        let href = visit.base + "episodes/\(episode.id.lowercasedText)"
        let kindText = kindWord(episode.kind, visit)
        var data: [String: Any] = [
            "heading": visit.format(
                "episodeHeading", kindText,
                WebFormat.date(campus.localDate(at: episode.startedAt), campus: campus, language: visit.language)),
            "severity": "\(episode.severity)", "notesText": episode.notes,
            "started": WebFormat.dateTime(episode.startedAt, campus: campus, language: visit.language),
            "stopped": episode.stoppedAt.map { WebFormat.dateTime($0, campus: campus, language: visit.language) } ?? visit["openWord"],
            "duration": episode.durationSeconds.map(WebFormat.duration) ?? visit["openWord"],
            "deleteAction": href + "/delete", "editAction": href, "editOpen": !errors.isEmpty,
            "edit": [
                "kind": errors.field("kind", value: values.kind),
                "kindOptions": Set(kinds(visit) + [episode.kind]).sorted().map { kind -> [String: Any] in
                    ["value": kind, "label": kindWord(kind, visit), "selected": kind == values.kind]
                },
                "severity": errors.field("severity", value: values.severity), "severityOptions": severityOptions(values.severity),
                "notes": errors.field("notes", value: values.notes), "startedAt": errors.field("startedAt", value: values.startedAt),
                "stoppedAt": errors.field("stoppedAt", value: values.stoppedAt),
            ] as [String: Any],
        ]
        if episode.stoppedAt == nil { data["stopAction"] = href + "/stop" }
        if episode.autoClosed { data["autoClosed"] = true }
        if let place = episode.location {
            data["place"] = [
                "text": visit.format("placeText", String(format: "%.1f", place.latitude), String(format: "%.1f", place.longitude)),
                "mapHref":
                    "https://www.openstreetmap.org/?mlat=\(place.latitude)&mlon=\(place.longitude)#map=11/\(place.latitude)/\(place.longitude)",
            ]
        }
        let rows = EnvironmentFactors.units.enumerated().compactMap { index, unit -> [String]? in
            let during = episode.context?.values[index].value, before = episode.baseline?.values[index].value
            guard during != nil || before != nil else { return nil }
            return [visit["factor-" + unit.name], Self.value(during, unit.unit), Self.value(before, unit.unit)]
        }
        if episode.context?.madeUp == true || episode.baseline?.madeUp == true { data["madeUpNote"] = visit["madeUpWeather"] }
        if !rows.isEmpty {
            data["weatherHTML"] = WebHTML.table(
                Charts.table(
                    caption: visit["weatherTitle"],
                    columns: [(visit["factor"], false), (visit["atStart"], true), (visit["dayBefore"], true)], rows: rows))
        }
        if let notice { data["notice"] = notice }
        errors.summary(into: &data)
        return try web.renderer.render(
            .init(
                template: "episode", title: errors.title(data["heading"] as? String ?? kindText, visit: visit),
                data: data.droppingEmptyText(), status: status, current: "episodes"),
            visit: visit)
    }

    /// `2026-06`, `2026-07` … of every month a range touches (at most 13: a range is at most 366 days).
    static func months(_ range: DateRange) -> [String] {
        var year = range.from.year, month = range.from.month
        var months: [String] = []
        while (year, month) <= (range.to.year, range.to.month), months.count < 13 {
            months.append(String(format: "%04d-%02d", year, month))
            (year, month) = month == 12 ? (year + 1, 1) : (year, month + 1)
        }
        return months
    }

    static func value(_ value: Double?, _ unit: String) -> String {
        guard let value else { return "–" }
        return WebFormat.percent(value) + (unit == "index" ? "" : " " + unit)
    }

    // MARK: The summary

    /// The summary of a range: a line of totals, episodes and average duration per month as
    /// bars, the weather at the starts against the day before as a dot plot, and their tables.
    static func addSummary(
        _ summary: EpisodeSummary, range: DateRange, to data: inout [String: Any], visit: WebVisit, kindWord: (String) -> String
    ) {
        let total = summary.total
        data["summaryText"] = visit.format(
            "summaryLine", "\(total.count)", "\(total.closed)", WebFormat.duration(total.totalMinutes * 60),
            total.averageMinutes.map { WebFormat.duration(Int(exactly: ($0 * 60).rounded().clamped(to: 0...1e9)) ?? 0) } ?? "–")
        guard !summary.months.isEmpty else { return }
        // Every month of the range, those without episodes as zero, so the bars read as a trend.
        let byMonth = Dictionary(summary.months.map { ($0.month ?? "", $0) }, uniquingKeysWith: { first, _ in first })
        let months = Self.months(range)
        let parts = months.map { byMonth[$0] }
        let counts = parts.map { Double($0?.count ?? 0) }
        let hours = parts.map { $0?.averageMinutes.map { $0 / 60 } }
        var charts: [WebChart] = [
            Charts.bars(
                id: "episodes-per-month", title: visit["episodesPerMonth"],
                desc: visit.format("perMonthDesc", range.from.description, range.to.description), categories: months, values: counts,
                fill: "#1d70b8", suffix: "", smallestStep: 1)
        ]
        if hours.contains(where: { $0 != nil }) {
            charts.append(
                Charts.bars(
                    id: "average-duration", title: visit["averageDuration"],
                    desc: visit.format("perMonthDesc", range.from.description, range.to.description), categories: months, values: hours,
                    fill: "#912b88", suffix: " h", smallestStep: 0.5))
        }
        var tables: [WebTable] = [
            Charts.table(
                caption: visit["summaryByMonth"],
                columns: [
                    (visit["month"], false), (visit["episodesWord"], true), (visit["closedWord"], true), (visit["totalTime"], true),
                    (visit["averageTime"], true),
                ],
                rows: zip(months, parts).map { month, part in
                    [
                        month, "\(part?.count ?? 0)", "\(part?.closed ?? 0)", WebFormat.duration((part?.totalMinutes ?? 0) * 60),
                        part?.averageMinutes.map { WebFormat.duration(Int(exactly: ($0 * 60).rounded().clamped(to: 0...1e9)) ?? 0) } ?? "–",
                    ]
                })
        ]
        let factors = total.factors.filter { $0.during != nil || $0.baseline != nil }
        if !factors.isEmpty {
            charts.append(
                Charts.pairs(
                    id: "weather", title: visit["weatherSummary"], desc: visit["weatherSummaryDesc"],
                    rows: factors.map {
                        (
                            label: visit["factor-" + $0.name], first: $0.during, second: $0.baseline,
                            unit: $0.unit == "index" ? "" : " " + $0.unit
                        )
                    },
                    legend: (visit["atStartMark"], visit["dayBeforeMark"])))
            tables.append(
                Charts.table(
                    caption: visit["weatherSummary"],
                    columns: [(visit["factor"], false), (visit["atStart"], true), (visit["dayBefore"], true)],
                    rows: factors.map { [visit["factor-" + $0.name], value($0.during, $0.unit), value($0.baseline, $0.unit)] }))
        }
        data["charts"] = charts
        data["tables"] = tables
    }
}
