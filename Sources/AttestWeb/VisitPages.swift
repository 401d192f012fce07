import AttestFoundation
import AttestPlugins
import AttestServer
import Foundation
import HTTPTypes
import Hummingbird
import Identity
import Journal
import Surveys
import Tenancy

/// Visitors' pages (DESIGN §12), over the same use cases as the API's `guests/visits`:
///
/// - `/c/{campus}/visit`: name, email and host; then `visit/code`, the six digits emailed; then
///   `visit/today`, the guest survey and then the day's badge, GUEST beside its colour. The
///   guest's pass is a cookie of its own (`attest-guest-{slug}`, HttpOnly, until the end of the
///   day), never a member's session; no member row, no identity provider.
/// - `visit/erase`: the link in the email, a page with a button that erases the visit.
/// - `/c/{campus}/kiosk`: a screener's shared tablet at a front desk registers a visitor and
///   their answers in one form, vouching for them (audited) instead of the emailed code, and
///   shows the badge's QR code to photograph or print; its script clears the page after each
///   visitor (no cookie, no history entry, no autofill).
/// - `admin/poster.pdf`, `admin/poster.svg`: the poster with the visit page's QR code.
struct VisitPages: Sendable {
    let web: WebRoutes
    var services: AttestServices { web.services }

    static func cookieName(campus slug: String, secure: Bool) -> String { (secure ? "__Host-attest-guest-" : "attest-guest-") + slug }

    /// A page of the visit: no member's session (a member's cookie in the same browser is not
    /// this visitor), the guest's visit when their cookie holds a pass, and the forms' CSRF
    /// token: derived from the pass, else the anonymous cookie's (made here when missing).
    struct Visitor {
        var visit: WebVisit
        var guest: GuestVisit?
        var cookies: [Cookie] = []
    }

    func visitor(_ request: Request, _ context: AttestRequestContext) async throws -> Visitor {
        var visit = try await web.visit(request, context, signIn: false)
        (visit.session, visit.token) = (nil, nil)
        guard GuestPolicy(campus: visit.campus).open else { throw Self.refusal(.closed(campus: visit.campus.name), visit: visit) }
        var visitor = Visitor(visit: visit)
        if let token = request.cookies[Self.cookieName(campus: visit.campus.slug, secure: web.settings.secure)]?.value,
            let guest = try await services.guests.session(campus: visit.campus.id, token: token, now: services.clock())
        {
            visitor.guest = guest
            visitor.visit.anonymousCSRF = WebSession.csrf(sessionToken: token)
        } else if visit.anonymousCSRF == nil {
            let value = SessionStore.newToken()
            visitor.visit.anonymousCSRF = value
            visitor.cookies.append(
                Cookie(
                    name: WebSession.csrfCookieName(secure: web.settings.secure), value: value, path: "/", secure: web.settings.secure,
                    httpOnly: true, sameSite: .lax))
        }
        return visitor
    }

    func register(on pages: RouterGroup<AttestRequestContext>) {
        pages.get("visit") { request, context -> Response in
            let visitor = try await visitor(request, context)
            if visitor.guest != nil { throw WebOutcome.redirect(visitor.visit.base + "visit/today") }
            return try registrationPage(visitor)
        }
        pages.post("visit") { request, context -> Response in
            let visitor = try await visitor(request, context)
            let form = try await WebForm.read(request, context: context)
            try web.checkCSRF(request, form: form, visit: visitor.visit)
            let values = (name: form["name"] ?? "", email: form["email"] ?? "", host: form["host"] ?? "")
            do {
                let registration = try await GuestHTTP.register(
                    campus: visitor.visit.campus, name: values.name, email: values.email, host: values.host, address: context.clientAddress,
                    language: visitor.visit.language, services: services)
                throw WebOutcome.redirect(visitor.visit.base + "visit/code?v=" + registration.visit.id.lowercasedText)
            } catch let error as GuestError {
                switch error {
                case .invalid, .hostNotFound, .hostAmbiguous:
                    return try registrationPage(visitor, values: values, error: error)
                case .dailyCapReached, .tooManyForEmail:
                    return try message(
                        visitor, title: visitor.visit["visitFullTitle"], text: Self.words(error, visit: visitor.visit),
                        status: .tooManyRequests)
                default: throw error
                }
            } catch let problem as Problem where problem.slug == GuestHTTP.codeNotSent {
                // The visit was forgotten; what the mail server said is for the operator's log, not the visitor.
                var page = try message(
                    visitor, title: visitor.visit["visitNotSentTitle"],
                    text: visitor.visit[problem.headers[.retryAfter] == nil ? "visitNotSentNever" : "visitNotSentLater"],
                    status: .serviceUnavailable, again: true)
                for field in problem.headers { page.headers.append(field) }
                return page
            }
        }
        pages.get("visit/code") { request, context -> Response in
            let visitor = try await visitor(request, context)
            let id = request.uri.queryParameters.get("v").flatMap { UUID(uuidString: String($0)) }
            guard let id else { throw WebOutcome.redirect(visitor.visit.base + "visit") }
            return try codePage(visitor, visit: id)
        }
        pages.post("visit/code") { request, context -> Response in
            let visitor = try await visitor(request, context)
            let form = try await WebForm.read(request, context: context)
            try web.checkCSRF(request, form: form, visit: visitor.visit)
            guard let id = form["v"].flatMap(UUID.init(uuidString:)) else { throw WebOutcome.redirect(visitor.visit.base + "visit") }
            let campus = visitor.visit.campus
            do {
                let pass = try await services.guests.verify(campus: campus, visit: id, code: form["code"] ?? "", now: services.clock())
                let maxAge =
                    Int(exactly: pass.expiresAt.timeIntervalSince(services.clock()).rounded(.down).clamped(to: 0...86_400 * 2)) ?? 0
                throw WebOutcome.redirect(
                    visitor.visit.base + "visit/today",
                    cookies: [
                        Cookie(
                            name: Self.cookieName(campus: campus.slug, secure: web.settings.secure), value: pass.token, maxAge: maxAge,
                            path: "/", secure: web.settings.secure, httpOnly: true, sameSite: .lax)
                    ])
            } catch let error as GuestError {
                if case .wrongCode = error { return try codePage(visitor, visit: id, error: Self.words(error, visit: visitor.visit)) }
                return try message(
                    visitor, title: visitor.visit["visitCodeTitle"], text: Self.words(error, visit: visitor.visit),
                    status: Problem(error).status,
                    again: true)
            }
        }
        pages.get("visit/today") { request, context -> Response in
            let visitor = try await visitor(request, context)
            guard let guest = visitor.guest else { throw WebOutcome.redirect(visitor.visit.base + "visit") }
            if guest.color == nil { return try await surveyPage(visitor, guest: guest) }
            return try await badgePage(visitor, guest: guest)
        }
        pages.post("visit/today") { request, context -> Response in
            let visitor = try await visitor(request, context)
            guard let guest = visitor.guest else { throw WebOutcome.redirect(visitor.visit.base + "visit") }
            let form = try await WebForm.read(request, context: context)
            try web.checkCSRF(request, form: form, visit: visitor.visit)
            let campus = visitor.visit.campus
            guard let questionnaire = try await services.activeQuestionnaires.guests(campus: campus.id) else {
                throw SurveysError.noSurvey(campus: campus.name)
            }
            let (raw, entry) = SurveyForm.read(form, questionnaire: questionnaire, visit: visitor.visit)
            guard entry.errors.isEmpty else {
                return try await surveyPage(visitor, guest: guest, entry: entry, status: .unprocessableContent)
            }
            do {
                _ = try await GuestHTTP.submit(
                    guest, campus: campus, surveyVersion: Int(form["surveyVersion"] ?? "") ?? 0, answers: raw, services: services)
            } catch SurveysError.surveyChanged {
                return try await surveyPage(visitor, guest: guest, status: .conflict)
            }
            throw WebOutcome.redirect(visitor.visit.base + "visit/today")
        }
        pages.get("visit/erase") { request, context -> Response in
            var visit = try await web.visit(request, context, signIn: false)
            (visit.session, visit.token) = (nil, nil)
            let id = request.uri.queryParameters.get("visit").map { String($0) } ?? ""
            let token = request.uri.queryParameters.get("token").map { String($0) } ?? ""
            return try web.renderer.render(
                .init(
                    template: "visiterase", title: visit["visitEraseTitle"],
                    data: ["visitID": id, "eraseToken": token]), visit: visit)
        }
        // The erasure link's button: the token in the link is what authorises it (no cookie).
        pages.post("visit/erase") { request, context -> Response in
            var visit = try await web.visit(request, context, signIn: false)
            (visit.session, visit.token) = (nil, nil)
            if let name = HTTPField.Name.secFetchSite, request.headers[name] == "cross-site" { throw WebRoutes.csrfProblem(visit) }
            let form = try await WebForm.read(request, context: context)
            let erased =
                try await form["visit"].flatMap(UUID.init(uuidString:)).asyncMap {
                    try await services.guests.erase(campus: visit.campus.id, visit: $0, token: form["token"] ?? "")
                } ?? false
            var response = try web.renderer.render(
                .init(
                    template: "error", title: visit[erased ? "visitErasedTitle" : "visitEraseFailedTitle"],
                    data: [
                        "heading": visit[erased ? "visitErasedTitle" : "visitEraseFailedTitle"],
                        "detail": visit[erased ? "visitErased" : "visitEraseFailed"],
                    ], status: erased ? .ok : .notFound), visit: visit)
            response.setCookie(
                Cookie(
                    name: Self.cookieName(campus: visit.campus.slug, secure: web.settings.secure), value: "", maxAge: 0, path: "/",
                    secure: web.settings.secure, httpOnly: true, sameSite: .lax))
            return response
        }
        KioskPage(pages: self).register(on: pages)
    }

    // MARK: Pages

    private func registrationPage(
        _ visitor: Visitor, values: (name: String, email: String, host: String) = ("", "", ""), error: GuestError? = nil
    ) throws -> Response {
        let visit = visitor.visit
        var errors = FormErrors()
        switch error {
        case .invalid(let problems)?:
            for problem in problems { errors.add(problem.field, anchor: "visit-\(problem.field)", visit["visitError-\(problem.field)"]) }
        case .hostNotFound?: errors.add("host", anchor: "visit-host", visit["visitHostNotFound"])
        case .hostAmbiguous?: errors.add("host", anchor: "visit-host", visit["visitHostAmbiguous"])
        default: break
        }
        var data: [String: Any] = [
            "name": errors.field("name", value: values.name), "email": errors.field("email", value: values.email),
            "host": errors.field("host", value: values.host),
            "intro": visit.format("visitIntro", visit.campus.name),
        ]
        errors.summary(into: &data)
        var page = WebRenderer.Page(
            template: "visit", title: errors.title(visit["visitTitle"], visit: visit), data: data,
            status: errors.isEmpty ? .ok : .unprocessableContent)
        page.cookies = visitor.cookies
        return try web.renderer.render(page, visit: visit)
    }

    private func codePage(_ visitor: Visitor, visit id: UUID, error: String? = nil) throws -> Response {
        let visit = visitor.visit
        var data: [String: Any] = ["visitID": id.lowercasedText]
        if let error {
            data["codeError"] = error
            data["hasErrors"] = true
            data["errors"] = [["anchor": "visit-code", "message": error]]
        }
        var page = WebRenderer.Page(
            template: "visitcode", title: error == nil ? visit["visitCodeTitle"] : visit["errorWord"] + ": " + visit["visitCodeTitle"],
            data: data, status: error == nil ? .ok : .unprocessableContent)
        page.cookies = visitor.cookies
        return try web.renderer.render(page, visit: visit)
    }

    private func message(_ visitor: Visitor, title: String, text: String, status: HTTPResponse.Status, again: Bool = false) throws
        -> Response
    {
        var data: [String: Any] = ["heading": title, "detail": text]
        if again { data["homeHref"] = visitor.visit.base + "visit" }
        return try web.renderer.render(.init(template: "error", title: title, data: data, status: status), visit: visitor.visit)
    }

    private func surveyPage(
        _ visitor: Visitor, guest: GuestVisit, entry: SurveyForm.Entry = .init(), status: HTTPResponse.Status = .ok
    ) async throws -> Response {
        let visit = visitor.visit
        let (questionnaire, form) = try await Self.guestSurvey(visit, entry: entry, services: services)
        var data = form
        data["intro"] = visit.format("visitSurveyIntro", guest.name, guest.hostName)
        let errors = SurveyForm.errors(questionnaire, entry: entry, into: &data)
        let title = errors == 0 ? questionnaire.title : visit["errorWord"] + ": " + questionnaire.title
        return try web.renderer.render(.init(template: "visitsurvey", title: title, data: data, status: status), visit: visit)
    }

    private func badgePage(_ visitor: Visitor, guest: GuestVisit) async throws -> Response {
        let visit = visitor.visit
        let badge = try await GuestHTTP.badge(guest, campus: visit.campus, services: services)
        return try web.renderer.render(
            .init(
                template: "visitbadge", title: visit["guestWord"] + ": " + Self.colorWord(badge.color, visit: visit),
                data: Self.badgeData(badge, guest: guest, visit: visit, reason: await web.reasons([badge.reason], visit: visit).first),
                scripts: ["badge.js"]), visit: visit)
    }

    /// A refusal of the visitor's in the page's words (the API's, in `GuestError`, are English
    /// for software and logs). A form's own problems are shown by field, not here.
    static func words(_ error: GuestError, visit: WebVisit) -> String {
        switch error {
        case .closed(let campus): visit.format("visitClosed", campus)
        case .dailyCapReached(let contact): visit.format("visitCapReached", contact ?? visit["visitYourHost"])
        case .tooManyForEmail: visit.format("visitTooManyForEmail", "\(GuestPolicy.visitsPerEmail)")
        case .unknownVisit: visit["visitUnknown"]
        case .alreadyVerified: visit["visitAlreadyUsed"]
        case .locked: visit.format("visitLocked", "\(GuestPolicy.codeTries)")
        case .codeExpired: visit["visitCodeExpired"]
        case .wrongCode(let left): visit.format(left == 1 ? "visitTryLeft" : "visitTriesLeft", "\(left)")
        case .invalid, .hostNotFound, .hostAmbiguous: Problem(error).detail
        }
    }

    /// `error` as the problem a page shows, its detail in the page's words.
    static func refusal(_ error: GuestError, visit: WebVisit) -> Problem {
        var problem = Problem(error)
        problem.detail = words(error, visit: visit)
        return problem
    }

    /// The guests' questionnaire in the visit's language and its form's data.
    static func guestSurvey(_ visit: WebVisit, entry: SurveyForm.Entry, services: AttestServices) async throws
        -> (Questionnaire, [String: Any])
    {
        guard let active = try await services.activeQuestionnaires.guests(campus: visit.campus.id) else {
            throw SurveysError.noSurvey(campus: visit.campus.name)
        }
        let (questionnaire, _) = active.localized(acceptLanguage: visit.language)
        let data: [String: Any] = [
            "surveyTitle": questionnaire.title, "version": questionnaire.version,
            "questions": SurveyForm.questions(questionnaire, entry: entry, visit: visit),
        ]
        return (questionnaire, data)
    }

    static func colorWord(_ color: BadgeColor, visit: WebVisit) -> String {
        switch color {
        case .green: visit["colorGreen"]
        case .yellow: visit["colorYellow"]
        case .red: visit["colorRed"]
        case .gray: visit["colorGray"]
        }
    }

    /// A guest's badge as the visit page and the kiosk show it.
    /// `reason`: the badge's in the page's language (`WebRoutes.reasons`), else as given.
    static func badgeData(_ badge: Badge, guest: GuestVisit, visit: WebVisit, reason: String?) -> [String: Any] {
        let symbols: [BadgeColor: String] = [.green: "✓", .yellow: "!", .red: "✕", .gray: "–"]
        let colorWord = colorWord(badge.color, visit: visit)
        var data: [String: Any] = [
            "color": badge.color.rawValue, "colorWord": colorWord, "symbol": symbols[badge.color] ?? "", "reason": reason ?? badge.reason,
            "guestName": guest.name, "guestOf": visit.format("guestOf", guest.hostName), "validUntilISO": badge.validUntil.ISO8601Format(),
            "dateText": WebFormat.date(badge.date, campus: visit.campus, language: visit.language),
            "validUntilText": WebFormat.dateTime(badge.validUntil, campus: visit.campus, language: visit.language),
            "token": badge.token,
        ]
        data["qr"] = QRCode.svg(badge.token, label: visit["guestWord"] + " " + colorWord + ": " + guest.name) ?? ""
        return data
    }
}

extension Optional {
    /// `map` for an async transform.
    func asyncMap<Mapped>(_ transform: (Wrapped) async throws -> Mapped) async rethrows -> Mapped? {
        guard let value = self else { return nil }
        return try await transform(value)
    }
}

/// The front desk's kiosk (`/c/{campus}/kiosk`, screeners and admins) and the poster.
struct KioskPage: Sendable {
    let pages: VisitPages
    var web: WebRoutes { pages.web }
    var services: AttestServices { web.services }

    func register(on group: RouterGroup<AttestRequestContext>) {
        group.get("kiosk") { request, context -> Response in
            let visit = try await web.visit(request, context, roles: [.screener, .admin])
            return try await kioskPage(visit)
        }
        // The kiosk's form: registered and answered at once, the screener vouching; JSON for
        // the kiosk's script (which never navigates), the badge page without script.
        group.post("kiosk") { request, context -> Response in
            let visit = try await web.visit(request, context, roles: [.screener, .admin])
            let form = try await WebForm.read(request, context: context)
            try web.checkCSRF(request, form: form, visit: visit)
            let wantsJSON = request.headers[.accept]?.contains("application/json") ?? false
            let campus = visit.campus
            guard let questionnaire = try await services.activeQuestionnaires.guests(campus: campus.id) else {
                throw SurveysError.noSurvey(campus: campus.name)
            }
            let (raw, entry) = SurveyForm.read(form, questionnaire: questionnaire, visit: visit)
            var problems = entry.errors.map { (field: "answers.\($0.key)", message: $0.value) }
            do {
                _ = try GuestStore.checked(name: form["name"] ?? "", email: form["email"] ?? "", host: form["host"] ?? "")
            } catch GuestError.invalid(let found) {
                problems += found.map { ($0.field, visit["visitError-\($0.field)"]) }
            }
            guard problems.isEmpty else {
                if wantsJSON {
                    // Each message with what it is about: the question's prompt, or the field's label.
                    let labels = Dictionary(uniqueKeysWithValues: questionnaire.questions.map { ("answers.\($0.id)", $0.prompt) })
                        .merging(["name": visit["visitName"], "email": visit["visitEmail"], "host": visit["visitHost"]]) { first, _ in first
                        }
                    let body = try JSONSerialization.data(
                        withJSONObject: [
                            "title": visit["errorWord"],
                            "errors": problems.map {
                                ["field": $0.field, "message": (labels[$0.field].map { $0 + ": " } ?? "") + $0.message]
                            },
                        ], options: [.sortedKeys])
                    return Response(
                        status: .unprocessableContent, headers: [.contentType: "application/problem+json"],
                        body: .init(byteBuffer: ByteBuffer(bytes: body)))
                }
                return try await kioskPage(
                    visit, values: (form["name"] ?? "", form["email"] ?? "", form["host"] ?? ""), entry: entry, problems: problems)
            }
            let user = try visit.signedInUser()
            let registration = try await services.guests.register(
                campus: campus, name: form["name"] ?? "", email: form["email"] ?? "", host: form["host"] ?? "",
                screener: (user.id, user.email), now: services.clock())
            guard
                let answered = try await GuestHTTP.submit(
                    registration.visit, campus: campus, surveyVersion: Int(form["surveyVersion"] ?? "") ?? 0, answers: raw,
                    services: services)
            else { throw Problem.internalError }
            let badge = try await GuestHTTP.badge(answered, campus: campus, services: services)
            var data = VisitPages.badgeData(
                badge, guest: answered, visit: visit, reason: await web.reasons([badge.reason], visit: visit).first)
            if wantsJSON {
                let body = try JSONSerialization.data(withJSONObject: data.compactMapValues { $0 as? String }, options: [.sortedKeys])
                return Response(
                    status: .created, headers: [.contentType: "application/json; charset=utf-8"],
                    body: .init(byteBuffer: ByteBuffer(bytes: body)))
            }
            data["kiosk"] = true
            return try web.renderer.render(
                .init(template: "visitbadge", title: visit["guestWord"] + ": " + (data["colorWord"] as? String ?? ""), data: data),
                visit: visit)
        }
        group.get("admin/poster.pdf") { request, context -> Response in
            let visit = try await web.visit(request, context, roles: [.admin])
            let link = services.origin + visit.base + "visit"
            var pdf = PDFWriter(pageLabel: visit["pdfPageLabel"])
            pdf.centered(visit.campus.name, size: 20, bold: true, after: 24)
            pdf.centered(visit["posterHeading"], size: 34, bold: true, after: 12)
            pdf.centered(visit["posterIntro"], size: 14, after: 24)
            if let rows = QRCode.modules(link) { pdf.squares(Self.quietZone(rows), side: 300, after: 24) }
            pdf.centered(link, size: 12, after: 8)
            pdf.centered(visit["posterHint"], size: 11)
            return Response(
                status: .ok,
                headers: [
                    .contentType: "application/pdf", .contentDisposition: "attachment; filename=\"\(visit.campus.slug)-visitors.pdf\"",
                ],
                body: .init(byteBuffer: ByteBuffer(bytes: pdf.finish(title: visit["posterHeading"] + " · " + visit.campus.name))))
        }
        group.get("admin/poster.svg") { request, context -> Response in
            let visit = try await web.visit(request, context, roles: [.admin])
            let link = services.origin + visit.base + "visit"
            let rows = QRCode.modules(link) ?? []
            let side = rows.count + 8
            let scale = 300.0 / Double(max(side, 1))
            let svg = """
                <svg xmlns="http://www.w3.org/2000/svg" width="612" height="792" viewBox="0 0 612 792" role="img" aria-label="\(WebHTML.escape(visit["posterHeading"]))">
                <rect width="612" height="792" fill="#fff"/>
                <text x="306" y="80" font-family="Helvetica, Arial, sans-serif" font-size="20" font-weight="bold" text-anchor="middle">\(WebHTML.escape(visit.campus.name))</text>
                <text x="306" y="140" font-family="Helvetica, Arial, sans-serif" font-size="34" font-weight="bold" text-anchor="middle">\(WebHTML.escape(visit["posterHeading"]))</text>
                <text x="306" y="180" font-family="Helvetica, Arial, sans-serif" font-size="14" text-anchor="middle">\(WebHTML.escape(visit["posterIntro"]))</text>
                <g transform="translate(156 210) scale(\(String(format: "%.4f", scale)))" shape-rendering="crispEdges"><path d="\(QRCode.path(rows))" fill="#000"/></g>
                <text x="306" y="550" font-family="Helvetica, Arial, sans-serif" font-size="12" text-anchor="middle">\(WebHTML.escape(link))</text>
                <text x="306" y="575" font-family="Helvetica, Arial, sans-serif" font-size="11" text-anchor="middle">\(WebHTML.escape(visit["posterHint"]))</text>
                </svg>
                """
            return Response(
                status: .ok,
                headers: [
                    .contentType: "image/svg+xml", .contentDisposition: "attachment; filename=\"\(visit.campus.slug)-visitors.svg\"",
                ],
                body: .init(byteBuffer: ByteBuffer(string: svg)))
        }
    }

    /// The modules with the four-module quiet zone a reader needs around them.
    static func quietZone(_ rows: [[Bool]]) -> [[Bool]] {
        let side = rows.count + 8
        let blank = [Bool](repeating: false, count: side)
        return Array(repeating: blank, count: 4) + rows.map { Array(repeating: false, count: 4) + $0 + Array(repeating: false, count: 4) }
            + Array(repeating: blank, count: 4)
    }

    /// The kiosk's form; after a refusal without script, with what was typed and each problem
    /// by its field (the visitor's own, then the answers'), as the visitor's registration page.
    private func kioskPage(
        _ visit: WebVisit, values: (name: String, email: String, host: String) = ("", "", ""), entry: SurveyForm.Entry = .init(),
        problems: [(field: String, message: String)] = []
    ) async throws -> Response {
        guard GuestPolicy(campus: visit.campus).open else { throw VisitPages.refusal(.closed(campus: visit.campus.name), visit: visit) }
        var (questionnaire, data) = try await VisitPages.guestSurvey(visit, entry: entry, services: services)
        var errors = FormErrors()
        for problem in problems where !problem.field.hasPrefix("answers.") {
            errors.add(problem.field, anchor: "visit-\(problem.field)", problem.message)
        }
        for question in questionnaire.questions {
            if let message = entry.errors[question.id] { errors.add("answers.\(question.id)", anchor: "q-\(question.id)", message) }
        }
        data["name"] = errors.field("name", value: values.name)
        data["email"] = errors.field("email", value: values.email)
        data["host"] = errors.field("host", value: values.host)
        errors.summary(into: &data)
        let title = errors.title(visit["kioskTitle"], visit: visit),
            status: HTTPResponse.Status = errors.isEmpty ? .ok : .unprocessableContent
        return try web.renderer.render(
            .init(template: "kiosk", title: title, data: data, status: status, scripts: ["kiosk.js"], current: "kiosk"),
            visit: visit)
    }
}
