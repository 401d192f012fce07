import AttestPlugins
import AttestServer
import Foundation
import HTTPTypes
import Hummingbird
import Identity
import Logging
import Tenancy

/// The web pages under `/c/{campus}/`, over the same core use cases as the API.
struct WebRoutes: Sendable {
    let services: AttestServices
    let settings: WebConfiguration
    var renderer: WebRenderer { WebRenderer(settings: settings) }

    func register(on router: Router<AttestRequestContext>) {
        WebAssets.register(on: router)
        let pages = router.group("c/:campus")
            .add(middleware: WebResponseMiddleware(web: self))
            .add(middleware: CampusMiddleware(directory: services.campuses))
        SignInPages(web: self).register(on: pages)
        MemberPages(web: self).register(on: pages)
        JournalPages(web: self).register(on: pages)
        EpisodePages(web: self).register(on: pages)
        SharingPage(web: self).register(on: pages)
        CommunityPages(web: self).register(on: pages)
        SettingsPage(web: self).register(on: pages)
        RecordsPages(web: self).register(on: pages)
        WebApp(web: self).register(on: pages)
        ScanPage(web: self).register(on: pages)
        VisitPages(web: self).register(on: pages)
        AdminPages(web: self).register(on: pages)
    }

    /// Who is visiting: the campus, the language, and the session of the campus cookie. With
    /// `signIn`, a visitor without one is sent to the sign-in page (and back here after);
    /// with `roles`, one without any of them gets the 403 page.
    func visit(
        _ request: Request, _ context: AttestRequestContext, signIn: Bool = true, roles: Set<Role> = []
    ) async throws -> WebVisit {
        let campus = try context.requireCampus()
        let language = WebText.language(
            cookie: request.cookies[WebSession.languageCookie]?.value, acceptLanguage: request.headers[.acceptLanguage])
        var visit = WebVisit(
            campus: campus, language: language, text: WebText.table(language),
            anonymousCSRF: request.cookies[WebSession.csrfCookieName(secure: settings.secure)]?.value,
            path: String(request.uri.description.prefix(1_000)))
        // The API's rule for a token (`SessionResolver`); a cookie the allowance does not let
        // be read is not signed in (the sign-in page), rather than the API's 429.
        if let token = WebSession.token(request, campus: campus.slug, secure: settings.secure) {
            let sessions = services.sessions
            if case .found(let session) = try await SessionResolver(services: services).resolve(
                SessionStore.SessionToken(token), campus: campus.id, address: context.clientAddress,
                kept: { sessions.cached(campus: campus.id, token: $0) },
                read: { try await sessions.authenticate(campus: campus.id, token: $0) })
            {
                visit.session = session
                visit.token = token
            }
        }
        if signIn, visit.session == nil {
            throw WebOutcome.redirect(visit.base + "signin?next=" + WebRenderer.queryEscape(visit.path))
        }
        if !roles.isEmpty, !visit.has(roles) { throw WebOutcome.forbidden(roles) }
        return visit
    }

    /// Refuses a POST whose CSRF token (form field `csrf`, or the `X-CSRF-Token` header of
    /// the scanner's script) is not this visit's, or that a browser says came from another site.
    func checkCSRF(_ request: Request, form: WebForm?, visit: WebVisit) throws {
        if let name = HTTPField.Name.secFetchSite, request.headers[name] == "cross-site" { throw Self.csrfProblem(visit) }
        let sent = form?["csrf"] ?? HTTPField.Name.csrfToken.flatMap { request.headers[$0] } ?? ""
        guard WebSession.same(sent, visit.csrf) else { throw Self.csrfProblem(visit) }
    }

    static func csrfProblem(_ visit: WebVisit) -> Problem {
        Problem(.forbidden, slug: "csrf", title: visit["forbiddenTitle"], detail: visit["csrfFailed"])
    }

    /// A path under this campus to come back to after sign-in or a language change; anything
    /// else (another site, another campus) is the campus's home.
    static func sameCampusPath(_ next: String?, base: String) -> String {
        guard let next, next.hasPrefix(base), !next.contains("\\"), !next.contains("//"), next.utf8.count <= 1_000,
            next.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F })
        else { return base }
        return next
    }

    /// `?name=value&…` built from pairs, each value percent-encoded.
    static func query(_ pairs: [(String, String)]) -> String {
        pairs.isEmpty ? "" : "?" + pairs.map { "\($0.0)=\(WebRenderer.queryEscape($0.1))" }.joined(separator: "&")
    }
}

/// Every web response: redirects and the 403 page from `WebOutcome`, errors as HTML pages
/// (the API's mapping of each error, shown to a person), and the security headers.
struct WebResponseMiddleware: RouterMiddleware {
    typealias Context = AttestRequestContext
    let web: WebRoutes

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response: Response
        do {
            response = try await ProblemMiddleware<Context>().handle(request, context: context) { request, context in
                do {
                    return try await next(request, context)
                } catch let outcome as WebOutcome {
                    return try await answer(outcome, request: request, context: context)
                }
            }
        } catch let problem as Problem {
            response = await errorPage(problem, request: request, context: context)
        }
        web.renderer.secure(&response.headers, cacheable: request.uri.path.hasPrefix("/static/"))
        return response
    }

    private func answer(_ outcome: WebOutcome, request: Request, context: Context) async throws -> Response {
        switch outcome {
        case .redirect(let location, let cookies):
            var response = Response(status: .seeOther, headers: [.location: location])
            for cookie in cookies { response.setCookie(cookie) }
            return response
        case .forbidden(let roles):
            guard let inCampus = await withCampus(context) else { throw Problem.internalError }
            let visit = try await web.visit(request, inCampus, signIn: false)
            let names = roles.map(\.rawValue).sorted().joined(separator: " / ")
            return try web.renderer.render(
                .init(
                    template: "error", title: visit["forbiddenTitle"],
                    data: ["heading": visit["forbiddenTitle"], "detail": visit.format("forbidden", names), "homeHref": visit.base],
                    status: .forbidden),
                visit: visit)
        case .operatorSession:
            guard let inCampus = await withCampus(context) else { throw Problem.internalError }
            let visit = try await web.visit(request, inCampus, signIn: false)
            return try web.renderer.render(
                .init(
                    template: "error", title: visit["operatorSessionTitle"],
                    data: ["heading": visit["operatorSessionTitle"], "detail": visit["operatorSession"], "homeHref": visit.base],
                    status: .forbidden),
                visit: visit)
        }
    }

    /// The problem as a page in the campus's layout (a bare page when the campus is unknown).
    private func errorPage(_ problem: Problem, request: Request, context: Context) async -> Response {
        if let inCampus = await withCampus(context) {
            if let visit = try? await web.visit(request, inCampus, signIn: false) {
                let (heading, detail) = Self.words(problem, visit: visit)
                var data: [String: Any] = ["heading": heading, "detail": detail, "homeHref": visit.base]
                if problem.status == .unauthorized { data["signInHref"] = visit.base + "signin" }
                if let page = try? web.renderer.render(
                    .init(template: "error", title: heading, data: data, status: problem.status), visit: visit)
                {
                    var response = page
                    for field in problem.headers where field.name != .contentType { response.headers.append(field) }
                    return response
                }
            }
        }
        let html = """
            <!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">\
            <title>\(WebHTML.escape(problem.title))</title></head><body><main><h1>\(WebHTML.escape(problem.title))</h1>\
            <p>\(WebHTML.escape(problem.detail))</p></main></body></html>
            """
        return Response(
            status: problem.status, headers: [.contentType: "text/html; charset=utf-8"], body: .init(byteBuffer: ByteBuffer(string: html)))
    }

    /// A problem as a page says it: a heading by its status in the page's language, and the
    /// page's own sentence for the problems a person can meet on a page (`problem-<slug>` in the
    /// texts: a body too large or too slow, an unreadable form, a session ended, a service
    /// down); any other keeps the detail its route wrote (most pages word their refusals
    /// themselves, by the field).
    static func words(_ problem: Problem, visit: WebVisit) -> (heading: String, detail: String) {
        let heading =
            switch problem.status.code {
            case 401: visit["signInAgainTitle"]
            case 403: visit["forbiddenTitle"]
            case 404: visit["notFoundTitle"]
            case 413: visit["tooLargeTitle"]
            case 429: visit["tooManyTitle"]
            case 500...: visit["errorTitle"]
            default: problem.slug == "validation" ? visit["errorWord"] : visit["cannotDoTitle"]
            }
        if problem.slug == "body-too-large", let limit = problem.limit {
            return (heading, visit.format("problem-body-too-large-limit", WebFormat.bytes(limit)))
        }
        guard let words = visit.text["problem-" + problem.slug] ?? WebText.english["problem-" + problem.slug] else {
            return (heading, problem.detail)
        }
        return (heading, words)
    }

    /// The context with its campus, which `CampusMiddleware` (inside this one) had found.
    private func withCampus(_ context: Context) async -> Context? {
        guard let slug = context.parameters.get("campus"), let campus = (try? await web.services.campuses.campus(slug: slug)) ?? nil else {
            return nil
        }
        var inCampus = context
        inCampus.campus = campus
        return inCampus
    }
}
