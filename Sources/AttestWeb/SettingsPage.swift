import AttestFoundation
import AttestPlugins
import AttestServer
import Foundation
import Hummingbird
import Notifications
import Tenancy

/// `/c/{campus}/settings`: how the member wants to be reached (the API's `me/notifications`):
/// email and push, a reminder time, quiet hours and a language. A plain form.
struct SettingsPage: Sendable {
    let web: WebRoutes
    var services: AttestServices { web.services }

    struct Values {
        var email = true
        var push = false
        var reminderTime = ""
        var quietFrom = ""
        var quietTo = ""
        var language = ""
    }

    func register(on pages: RouterGroup<AttestRequestContext>) {
        let store = NotificationPreferenceStore(client: services.database)
        pages.get("settings") { request, context -> Response in
            let visit = try await web.visit(request, context)
            guard let user = visit.user?.id else { throw WebOutcome.redirect(visit.base + "signin") }
            let kept = try await store.preferences(campus: visit.campus.id, user: user)
            let notice = request.uri.queryParameters.get("saved") == "1" ? visit["settingsSaved"] : nil
            return try page(visit: visit, values: Self.values(kept), notice: notice)
        }
        pages.post("settings") { request, context -> Response in
            let visit = try await web.visit(request, context)
            let form = try await WebForm.read(request, context: context)
            try web.checkCSRF(request, form: form, visit: visit)
            guard let user = visit.user?.id else { throw WebOutcome.redirect(visit.base + "signin") }
            func text(_ name: String) -> String { (form[name] ?? "").trimmingCharacters(in: .whitespaces) }
            let values = Values(
                email: form["email"] != nil, push: form["push"] != nil, reminderTime: text("reminderTime"), quietFrom: text("quietFrom"),
                quietTo: text("quietTo"), language: text("language"))
            var errors = FormErrors()
            let campus = visit.campus, window = NotificationPreferences.window(campus)
            let reminder = values.reminderTime.isEmpty ? nil : CampusFormats.minute(fromClock: values.reminderTime)
            if !values.reminderTime.isEmpty, reminder.map({ !window.contains($0) }) ?? true {
                errors.add(
                    "reminderTime", anchor: "reminder-time",
                    visit.format(
                        "reminderTimeError", CampusFormats.clock(fromMinute: window.lowerBound),
                        CampusFormats.clock(fromMinute: window.upperBound)))
            }
            let from = CampusFormats.minute(fromClock: values.quietFrom), to = CampusFormats.minute(fromClock: values.quietTo)
            var quiet: (from: Int, to: Int)?
            if !values.quietFrom.isEmpty || !values.quietTo.isEmpty {
                if let from, let to, from != to {
                    quiet = (from, to)
                } else {
                    errors.add("quietFrom", anchor: "quiet-from", visit["quietHoursError"])
                }
            }
            let language = values.language.isEmpty ? nil : values.language
            if let language, !WrittenLanguages.all.contains(language) {
                errors.add("language", anchor: "language", visit["languageError"])
            }
            guard errors.isEmpty else { return try page(visit: visit, values: values, errors: errors, status: .unprocessableContent) }
            try await store.set(
                campus: campus, user: user,
                NotificationPreferences(
                    email: values.email, push: values.push, reminderMinute: reminder, quietHours: quiet, language: language),
                now: services.clock())
            // The campus's reminders wake now and find the member's new time.
            try await CampusSchedule(client: services.database).bringForward(.reminders, campus: campus.id, to: services.clock())
            throw WebOutcome.redirect(visit.base + "settings?saved=1")
        }
    }

    static func values(_ kept: NotificationPreferences) -> Values {
        Values(
            email: kept.email, push: kept.push, reminderTime: kept.reminderMinute.map(CampusFormats.clock(fromMinute:)) ?? "",
            quietFrom: kept.quietHours.map { CampusFormats.clock(fromMinute: $0.from) } ?? "",
            quietTo: kept.quietHours.map { CampusFormats.clock(fromMinute: $0.to) } ?? "", language: kept.language ?? "")
    }

    private func page(
        visit: WebVisit, values: Values, notice: String? = nil, errors: FormErrors = FormErrors(), status: HTTPResponse.Status = .ok
    ) throws -> Response {
        let window = NotificationPreferences.window(visit.campus)
        var data: [String: Any] = [
            "email": values.email, "push": values.push,
            "reminderTime": errors.field("reminderTime", value: values.reminderTime),
            "quietFrom": errors.field("quietFrom", value: values.quietFrom), "quietTo": values.quietTo,
            "reminderHint": visit.format(
                "reminderTimeHint", CampusFormats.clock(fromMinute: visit.campus.reminderMinute),
                CampusFormats.clock(fromMinute: window.lowerBound), CampusFormats.clock(fromMinute: window.upperBound)),
            "languages": [["value": "", "label": visit["campusLanguage"], "selected": values.language.isEmpty]]
                + WebText.languages.map { ["value": $0.code, "label": $0.name, "selected": $0.code == values.language] },
            "languageError": errors["language"] ?? "",
        ]
        if let notice { data["notice"] = notice }
        errors.summary(into: &data)
        return try web.renderer.render(
            .init(
                template: "settings", title: errors.title(visit["settingsTitle"], visit: visit), data: data.droppingEmptyText(),
                status: status, scripts: ["push.js"], current: "settings"), visit: visit)
    }
}
