import AttestPlugins
import AttestServer
import Community
import Foundation
import Hummingbird
import Identity
import Surveys
import Tenancy

/// The member's pages: today (the survey, or the badge once submitted), the badge, history,
/// testing locations and campus statistics.
struct MemberPages: Sendable {
    let web: WebRoutes
    var services: AttestServices { web.services }

    func register(on pages: RouterGroup<AttestRequestContext>) {
        pages.get { request, context -> Response in
            let visit = try await web.visit(request, context)
            let badge = try await services.badges.today(campus: visit.campus, user: try visit.signedInUser().id, now: services.clock())
            let community = await communityLine(visit: visit)
            if badge.submitted { return try await badgePage(badge, visit: visit, current: "today", community: community) }
            return try await surveyPage(visit: visit, request: request, community: community)
        }
        pages.post { request, context -> Response in
            try await submit(request, context)
        }
        pages.get("badge") { request, context -> Response in
            let visit = try await web.visit(request, context)
            let badge = try await services.badges.today(campus: visit.campus, user: try visit.signedInUser().id, now: services.clock())
            return try await badgePage(badge, visit: visit, current: "badge")
        }
        pages.get("history") { request, context -> Response in
            try await history(request, context)
        }
        pages.get("locations") { request, context -> Response in
            try await locations(request, context)
        }
        pages.get("stats") { request, context -> Response in
            try await stats(request, context)
        }
    }

    // MARK: Today's survey

    typealias Entry = SurveyForm.Entry

    private func surveyPage(
        visit: WebVisit, request: Request, entry: Entry = Entry(), status: HTTPResponse.Status = .ok, community: String? = nil
    ) async throws -> Response {
        guard let active = try await services.activeQuestionnaires.active(campus: visit.campus.id) else {
            throw SurveysError.noSurvey(campus: visit.campus.name)
        }
        let (questionnaire, _) = active.localized(acceptLanguage: visit.language)
        let questions = SurveyForm.questions(questionnaire, entry: entry, visit: visit)
        var data: [String: Any] = [
            "surveyTitle": questionnaire.title, "version": questionnaire.version, "questions": questions,
            "idempotencyKey": SessionStore.newToken(),
            "intro": visit.format(
                "surveyIntro", CampusFormats.clock(fromMinute: visit.campus.deadlineMinute) + " (\(visit.campus.timeZone))"),
        ]
        if let community { data["communityLine"] = community }
        let errors = SurveyForm.errors(questionnaire, entry: entry, into: &data)
        let title = errors == 0 ? questionnaire.title : visit["errorWord"] + ": " + questionnaire.title
        return try web.renderer.render(.init(template: "survey", title: title, data: data, status: status, current: "today"), visit: visit)
    }

    /// The form's POST: the answers checked as the API checks them; a form with problems is
    /// shown again (422) with each message by its field and nothing stored.
    private func submit(_ request: Request, _ context: AttestRequestContext) async throws -> Response {
        let visit = try await web.visit(request, context)
        let form = try await WebForm.read(request, context: context)
        try web.checkCSRF(request, form: form, visit: visit)
        guard let active = try await services.activeQuestionnaires.active(campus: visit.campus.id) else {
            throw SurveysError.noSurvey(campus: visit.campus.name)
        }
        var (raw, entry) = SurveyForm.read(form, questionnaire: active, visit: visit)
        guard entry.errors.isEmpty else {
            return try await surveyPage(visit: visit, request: request, entry: entry, status: .unprocessableContent)
        }
        let version = Int(form["surveyVersion"] ?? "") ?? 0
        let key = form["key"].flatMap { SessionStore.isWellFormed($0) ? "web-" + $0 : nil }
        guard let session = visit.session else { throw WebOutcome.redirect(visit.base + "signin") }
        let now = services.clock()
        do {
            switch try await services.attestations.submit(
                campus: visit.campus, as: .init(kept: session), surveyVersion: version, answers: raw, idempotencyKey: key, at: now)
            {
            case .created, .replayed:
                throw WebOutcome.redirect(visit.base + "badge")
            case .alreadySubmitted, .keyReused:
                throw WebOutcome.redirect(visit.base + "badge?already=1")
            }
        } catch SurveysError.surveyChanged {
            entry.errors = [:]
            return try await surveyPage(visit: visit, request: request, entry: entry, status: .conflict)
        }
    }

    // MARK: The badge

    private func badgePage(_ badge: Badge, visit: WebVisit, current: String, community: String? = nil) async throws -> Response {
        let campus = visit.campus, now = services.clock()
        let word: [BadgeColor: (key: String, symbol: String)] = [
            .green: ("colorGreen", "✓"), .yellow: ("colorYellow", "!"), .red: ("colorRed", "✕"), .gray: ("colorGray", "–"),
        ]
        let colorWord = visit[word[badge.color]?.key ?? "colorGray"]
        var data: [String: Any] = [
            "color": badge.color.rawValue, "colorWord": colorWord, "symbol": word[badge.color]?.symbol ?? "",
            "reason": badge.color != .gray ? await web.reasons([badge.reason], visit: visit).first ?? badge.reason : visit["colorGray"],
            "validUntilISO": badge.validUntil.ISO8601Format(),
            "dateText": WebFormat.date(badge.date, campus: campus, language: visit.language),
            "timeNow": WebFormat.time(now, campus: campus, seconds: true),
            "validUntilText": WebFormat.dateTime(badge.validUntil, campus: campus, language: visit.language),
            "timeLeft": WebFormat.span(Int(exactly: badge.validUntil.timeIntervalSince(now).rounded(.down).clamped(to: 0...1e9)) ?? 0),
            "submitted": badge.submitted,
            "deadlineText": visit.format(
                "notSubmittedDeadline", CampusFormats.clock(fromMinute: campus.deadlineMinute) + " (\(campus.timeZone))"),
        ]
        if let community { data["communityLine"] = community }
        if badge.submitted {
            data["qr"] = QRCode.svg(badge.token, label: visit["badgeTitle"] + ": " + colorWord) ?? ""
        }
        if visit.path.contains("already=1") {
            data["notice"] = visit.format(
                "alreadySubmitted", WebFormat.dateTime(campus.nextWindow(after: now), campus: campus, language: visit.language))
        }
        return try web.renderer.render(
            .init(template: "badge", title: visit["badgeTitle"] + ": " + colorWord, data: data, scripts: ["badge.js"], current: current),
            visit: visit)
    }

    // MARK: History, testing locations, statistics

    private func history(_ request: Request, _ context: AttestRequestContext) async throws -> Response {
        let visit = try await web.visit(request, context)
        let cursor = request.uri.queryParameters.get("cursor").flatMap { LocalDate(String($0)) }
        let page = try await services.attestations.page(
            campus: visit.campus.id, user: try visit.signedInUser().id, before: cursor, limit: 20)
        let words: [BadgeColor: String] = [.green: "colorGreen", .yellow: "colorYellow", .red: "colorRed", .gray: "colorGray"]
        let reasons = await web.reasons(page.items.map(\.attestation.reason), visit: visit)
        var data: [String: Any] = [
            "hasItems": !page.items.isEmpty,
            "items": zip(page.items, reasons).map { item, reason -> [String: Any] in
                let attestation = item.attestation
                return [
                    "date": WebFormat.date(attestation.date, campus: visit.campus, language: visit.language),
                    "color": attestation.color.rawValue, "colorWord": visit[words[attestation.color] ?? "colorGray"],
                    "reason": reason, "submittedAt": WebFormat.time(attestation.submittedAt, campus: visit.campus),
                    "late": !attestation.onTime,
                ]
            },
        ]
        if let next = page.next { data["olderHref"] = visit.base + "history?cursor=\(next)" }
        if cursor != nil { data["newerHref"] = visit.base + "history" }
        return try web.renderer.render(
            .init(template: "history", title: visit["historyTitle"], data: data, current: "history"), visit: visit)
    }

    private func locations(_ request: Request, _ context: AttestRequestContext) async throws -> Response {
        let visit = try await web.visit(request, context)
        let query = QueryParameters(request, accepting: ["lat", "lon"])
        let parsed = try? TestingLocationQuery.parse(query)  // a bad point lists by name
        let found = try await services.testingLocations.nearest(campus: visit.campus, to: parsed?.point.map { ($0.lat, $0.lon) }, limit: 20)
        let data: [String: Any] = [
            "orderNote": visit[parsed?.point == nil ? "byName" : "byDistance"],
            "unavailable": found.unavailable.isEmpty ? [] : [found.unavailable.joined(separator: ", ")],
            "hasLocations": !found.locations.isEmpty,
            "locations": found.locations.map { item -> [String: Any] in
                let location = item.location
                var entry: [String: Any] = [
                    "name": location.name, "address": location.address,
                    "mapHref":
                        "https://www.openstreetmap.org/?mlat=\(location.latitude)&mlon=\(location.longitude)#map=17/\(location.latitude)/\(location.longitude)",
                ]
                if let km = item.distanceKm { entry["distance"] = visit.format("kmAway", String(format: "%.1f", km)) }
                if !location.hours.isEmpty { entry["hours"] = location.hours }
                if !location.phone.isEmpty {
                    entry["phone"] = location.phone
                    entry["phoneLink"] = location.phone.filter { $0.isNumber || $0 == "+" }
                }
                if !location.notes.isEmpty { entry["notes"] = location.notes }
                if location.url.hasPrefix("https://") || location.url.hasPrefix("http://") { entry["url"] = location.url }
                return entry
            },
        ]
        return try web.renderer.render(
            .init(template: "locations", title: visit["locationsTitle"], data: data, scripts: ["locate.js"], current: "locations"),
            visit: visit)
    }

    private func stats(_ request: Request, _ context: AttestRequestContext) async throws -> Response {
        let visit = try await web.visit(request, context)
        let today = visit.campus.localDate(at: services.clock())
        let range = DateRange(from: today.adding(days: -13), to: today)
        let days = try await services.statisticsService.memberDays(campus: visit.campus, range: range)
        var data = Charts.memberStats(days: days, visit: visit, range: range)
        do {
            let report = try await services.community.report(campus: visit.campus, region: nil, languages: [visit.language])
            Charts.addCommunity(report, to: &data, visit: visit)
        } catch CommunityDirectory.Failure.unavailable {
            data["communityNote"] = visit["communityUnavailable"]
        } catch is CommunityDirectory.Failure {
            // No provider or no home region: the page shows the campus's own figures only.
        }
        return try web.renderer.render(
            .init(template: "stats", title: visit["statsTitle"], data: data, wide: true, current: "stats"), visit: visit)
    }

    /// "Community risk in Alpha County: high, rising (as of Nov 20). Wear a mask indoors.",
    /// or nil when the campus shows no community data (a page never fails for it).
    private func communityLine(visit: WebVisit) async -> String? {
        guard let report = try? await services.community.report(campus: visit.campus, region: nil, languages: [visit.language]),
            let risk = report.figures.risk, let asOf = report.figures.asOf
        else { return nil }
        var line = visit.format(
            "communityLine", report.region.name, visit["risk-" + risk.rawValue],
            report.figures.trend.map { ", " + visit["trend-" + $0.rawValue] } ?? "",
            WebFormat.date(asOf, campus: visit.campus, language: visit.language))
        if let guidance = report.guidance { line += " " + guidance }
        return line
    }
}

extension Double {
    func clamped(to range: ClosedRange<Double>) -> Double {
        isNaN ? range.lowerBound : Swift.min(Swift.max(self, range.lowerBound), range.upperBound)
    }
}

extension WebRoutes {
    /// Reasons in the page's language: the campus's rule's words for them, else the
    /// platform's own ("Isolation until 2 Dec") in the page's words, else as given.
    func reasons(_ reasons: [String], visit: WebVisit) async -> [String] {
        let localized = await services.attestations.localize(reasons, campus: visit.campus, language: visit.language)
        let months = visit["monthsShort"].split(separator: " ")
        return zip(reasons, localized).map { given, local in
            guard local == given, months.count == 12, let (kind, day, month) = HealthInput.described(given) else { return local }
            return visit.format(kind == .isolation ? "badgeIsolationUntil" : "badgeQuarantineUntil", "\(day) \(months[month - 1])")
        }
    }
}
