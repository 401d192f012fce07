import AttestPlugins
import AttestServer
import Foundation
import Hummingbird
import Journal
import Tenancy

/// `/c/{campus}/sharing`: the member's export (PDF, CSV or JSON of a range, as `…/me/export`
/// makes it, audited the same way), links for a clinician (made, listed with every opening,
/// revoked), and how long the journal and episodes are kept.
struct SharingPage: Sendable {
    let web: WebRoutes
    var services: AttestServices { web.services }
    var shares: JournalShareStore { JournalShareStore(client: services.database) }
    var settings: MemberSettingsStore { MemberSettingsStore(client: services.database) }

    /// The lifetimes a page offers for a link, in seconds, and their words' keys.
    static let lifetimes: [(seconds: Int, key: String)] = [
        (3_600, "hour1"), (86_400, "day1"), (7 * 86_400, "days7"), (30 * 86_400, "days30"),
    ]

    func register(on pages: RouterGroup<AttestRequestContext>) {
        pages.get("sharing") { request, context -> Response in
            let visit = try await web.visit(request, context)
            var notice: String?
            for (flag, key) in [("revoked", "linkRevoked"), ("kept", "keepingSaved"), ("profile", "profileSaved")]
            where request.uri.queryParameters.get(flag) == "1" {
                notice = visit[key]
            }
            return try await page(visit: visit, request: request, notice: notice)
        }
        pages.get("sharing/export") { request, context -> Response in
            let visit = try await web.visit(request, context)
            let today = visit.campus.localDate(at: services.clock())
            let query = QueryParameters(request, accepting: ["from", "to", "format", "profile"])
            let (from, to, format) = try ExportHTTP.parse(query, today: today, defaultFormat: .pdf)
            return try await ExportHTTP.ownExport(
                services: services, campus: visit.campus, user: try visit.privateUser(), from: from, to: to, format: format,
                language: visit.language, withProfile: try ExportHTTP.wantsProfile(query))
        }
        pages.post("sharing/links") { request, context -> Response in
            let visit = try await web.visit(request, context)
            let form = try await WebForm.read(request, context: context)
            try web.checkCSRF(request, form: form, visit: visit)
            let user = try visit.privateUser()
            var values = LinkValues(from: form["from"] ?? "", to: form["to"] ?? "", expiresIn: form["expiresIn"] ?? "")
            var errors = FormErrors()
            let from = LocalDate(values.from.trimmingCharacters(in: .whitespaces)),
                to = LocalDate(values.to.trimmingCharacters(in: .whitespaces))
            if from == nil { errors.add("from", anchor: "link-from", visit["dateError"]) }
            if to == nil { errors.add("to", anchor: "link-to", visit["dateError"]) }
            if let from, let to, from > to || from.days(until: to) > 365 { errors.add("from", anchor: "link-from", visit["rangeError"]) }
            let seconds = Int(values.expiresIn).flatMap { chosen in Self.lifetimes.first { $0.seconds == chosen }?.seconds }
            if seconds == nil { errors.add("expiresIn", anchor: "link-expires", visit["expiresError"]) }
            guard let from, let to, let seconds, errors.isEmpty else {
                return try await page(visit: visit, request: request, link: values, linkErrors: errors, status: .unprocessableContent)
            }
            let (share, token) = try await shares.create(
                campus: visit.campus.id, user: user.id, actor: "user:\(user.email)", from: from, to: to, seconds: seconds,
                now: services.clock(),
                quotas: MemberQuotas(campus: visit.campus))
            let origin = web.settings.origin ?? "http://" + (request.head.authority ?? "127.0.0.1")
            values.created = (
                url: origin + "/v1/campuses/\(visit.campus.slug)/shared/\(token)",
                expires: WebFormat.dateTime(share.expiresAt, campus: visit.campus, language: visit.language)
            )
            return try await page(visit: visit, request: request, link: values, status: .created)
        }
        pages.post("sharing/links/:id/revoke") { request, context -> Response in
            let visit = try await web.visit(request, context)
            try web.checkCSRF(request, form: try await WebForm.read(request, context: context), visit: visit)
            let user = try visit.privateUser().id
            guard let text = context.parameters.get("id"), let id = UUID(uuidString: text),
                try await shares.revoke(campus: visit.campus.id, user: user, id: id, now: services.clock())
            else { throw Problem.notFound(visit["noSuchLink"]) }
            throw WebOutcome.redirect(visit.base + "sharing?revoked=1")
        }
        pages.post("sharing/profile") { request, context -> Response in
            let visit = try await web.visit(request, context)
            let form = try await WebForm.read(request, context: context)
            try web.checkCSRF(request, form: form, visit: visit)
            let user = try visit.privateUser().id
            let values = ProfileValues(
                birthYear: (form["birthYear"] ?? "").trimmingCharacters(in: .whitespaces),
                heightCm: (form["heightCm"] ?? "").trimmingCharacters(in: .whitespaces).replacingOccurrences(of: ",", with: "."),
                weightKg: (form["weightKg"] ?? "").trimmingCharacters(in: .whitespaces).replacingOccurrences(of: ",", with: "."))
            let thisYear = visit.campus.localDate(at: services.clock()).year
            let year = values.birthYear.isEmpty ? nil : Int(values.birthYear)
            let height = values.heightCm.isEmpty ? nil : Double(values.heightCm)
            let weight = values.weightKg.isEmpty ? nil : Double(values.weightKg)
            var errors = FormErrors()
            let problems = Set(HealthProfile.problems(birthYear: year, heightCm: height, weightKg: weight, thisYear: thisYear).map(\.field))
            if problems.contains("birthYear") || (year == nil && !values.birthYear.isEmpty) {
                errors.add("birthYear", anchor: "profile-birthYear", visit.format("birthYearError", "\(thisYear)"))
            }
            if problems.contains("heightCm") || (height == nil && !values.heightCm.isEmpty) {
                errors.add("heightCm", anchor: "profile-heightCm", visit["heightError"])
            }
            if problems.contains("weightKg") || (weight == nil && !values.weightKg.isEmpty) {
                errors.add("weightKg", anchor: "profile-weightKg", visit["weightError"])
            }
            guard errors.isEmpty else {
                return try await page(visit: visit, request: request, profile: values, profileErrors: errors, status: .unprocessableContent)
            }
            try await services.profiles.set(
                campus: visit.campus.id, user: user, profile: HealthProfile(birthYear: year, heightCm: height, weightKg: weight),
                now: services.clock())
            throw WebOutcome.redirect(visit.base + "sharing?profile=1")
        }
        pages.post("sharing/keeping") { request, context -> Response in
            let visit = try await web.visit(request, context)
            let form = try await WebForm.read(request, context: context)
            try web.checkCSRF(request, form: form, visit: visit)
            let user = try visit.privateUser().id
            let chosen = (form["keepDays"] ?? "").trimmingCharacters(in: .whitespaces)
            var days: Int?
            if !chosen.isEmpty {
                guard let value = Int(chosen), MemberSettingsStore.keepDays.contains(value) else {
                    var errors = FormErrors()
                    errors.add("keepDays", anchor: "keep-days", visit.format("keepDaysError", "\(MemberSettingsStore.keepDays.upperBound)"))
                    return try await page(
                        visit: visit, request: request, keepValue: chosen, keepErrors: errors, status: .unprocessableContent)
                }
                days = value
            }
            try await settings.setJournalKeepDays(campus: visit.campus.id, user: user, days: days, now: services.clock())
            throw WebOutcome.redirect(visit.base + "sharing?kept=1")
        }
    }

    struct ProfileValues {
        var birthYear: String
        var heightCm: String
        var weightKg: String
    }

    struct LinkValues {
        var from: String
        var to: String
        var expiresIn: String
        var created: (url: String, expires: String)?
    }

    private func page(
        visit: WebVisit, request: Request, notice: String? = nil, link: LinkValues? = nil, linkErrors: FormErrors = FormErrors(),
        keepValue: String? = nil, keepErrors: FormErrors = FormErrors(), profile entered: ProfileValues? = nil,
        profileErrors: FormErrors = FormErrors(), status: HTTPResponse.Status = .ok
    ) async throws -> Response {
        let campus = visit.campus, user = try visit.privateUser().id, now = services.clock()
        let today = campus.localDate(at: now)
        let defaultFrom = today.adding(days: -29).description
        async let listed = shares.list(campus: campus.id, user: user)
        async let kept = settings.journalKeepDays(campus: campus.id, user: user)
        async let stored = services.profiles.profile(campus: campus.id, user: user)
        let keepDays = try await kept
        let profile = try await stored
        let link = link ?? LinkValues(from: defaultFrom, to: today.description, expiresIn: "\(7 * 86_400)")
        var data: [String: Any] = [
            "exportFrom": defaultFrom, "exportTo": today.description,
            "formats": MemberExport.Format.allCases.map { format -> [String: Any] in
                [
                    "value": format.rawValue, "label": visit["format-" + format.rawValue], "checked": format == .pdf,
                    "id": "export-\(format.rawValue)",
                ]
            },
            "link": [
                "from": linkErrors.field("from", value: link.from), "to": linkErrors.field("to", value: link.to),
                "expiresIn": linkErrors.field("expiresIn", value: link.expiresIn),
                "lifetimes": Self.lifetimes.map {
                    ["value": "\($0.seconds)", "label": visit[$0.key], "selected": "\($0.seconds)" == link.expiresIn]
                },
            ] as [String: Any],
            "links": try await listed.map { share -> [String: Any] in
                let status = share.status(at: now)
                var item: [String: Any] = [
                    "range": visit.format(
                        "linkRange", WebFormat.date(share.from, campus: campus, language: visit.language),
                        WebFormat.date(share.to, campus: campus, language: visit.language)),
                    "status": visit.format(
                        "status-" + status,
                        WebFormat.dateTime(
                            status == "revoked" ? share.revokedAt ?? share.expiresAt : share.expiresAt, campus: campus,
                            language: visit.language)),
                    "hasOpenings": !share.openings.isEmpty,
                    "openings": share.openings.isEmpty ? visit["neverOpened"] : visit.format("openedTimes", "\(share.openings.count)"),
                    "openedAt": share.openings.prefix(10).map {
                        visit.format(
                            "openedAt", WebFormat.dateTime($0.openedAt, campus: campus, language: visit.language), $0.format.uppercased())
                    },
                ]
                if status == "active" { item["revokeAction"] = visit.base + "sharing/links/\(share.id.lowercasedText)/revoke" }
                return item
            },
            "keep": keepErrors.field("keepDays", value: keepValue ?? keepDays.map(String.init) ?? ""),
            "keepText": keepDays.map { visit.format("keepingNow", "\($0)") } ?? visit["keepingForever"],
        ]
        func text(_ value: Double?) -> String { value.map { Charts.number($0).replacingOccurrences(of: ".0", with: "") } ?? "" }
        let values =
            entered
            ?? ProfileValues(
                birthYear: profile.birthYear.map(String.init) ?? "", heightCm: text(profile.heightCm), weightKg: text(profile.weightKg))
        data["birthYear"] = profileErrors.field("birthYear", value: values.birthYear)
        var height = profileErrors.field("heightCm", value: values.heightCm),
            weight = profileErrors.field("weightKg", value: values.weightKg)
        if visit.language == "en", entered == nil {
            // Metric kept; English pages show the US units beside.
            if let cm = profile.heightCm, let inches = Int(exactly: (cm / 2.54).rounded()) {
                height["shown"] = "≈ \(inches / 12) ft \(inches % 12) in"
            }
            if let kg = profile.weightKg, let pounds = Int(exactly: (kg / 0.45359237).rounded()) { weight["shown"] = "≈ \(pounds) lb" }
        }
        data["heightCm"] = height
        data["weightKg"] = weight
        if let bmi = profile.bmi, entered == nil { data["bmi"] = visit.format("bmiLine", Charts.number(bmi)) }
        if let created = link.created { data["created"] = ["url": created.url, "expires": visit.format("linkExpires", created.expires)] }
        if let notice { data["notice"] = notice }
        var errors = linkErrors
        for item in keepErrors.items + profileErrors.items { errors.add(item.field, anchor: item.anchor, item.message) }
        errors.summary(into: &data)
        return try web.renderer.render(
            .init(
                template: "sharing", title: errors.title(visit["sharingTitle"], visit: visit), data: data, status: status,
                current: "journal"), visit: visit)
    }
}
