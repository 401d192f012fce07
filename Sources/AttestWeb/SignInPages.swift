import AttestFoundation
import AttestPlugins
import AttestServer
import Foundation
import Hummingbird
import Identity
import Tenancy

/// Signing in and out in a browser, and the language picker.
struct SignInPages: Sendable {
    let web: WebRoutes
    var services: AttestServices { web.services }
    var settings: WebConfiguration { web.settings }

    func register(on pages: RouterGroup<AttestRequestContext>) {
        pages.get("signin") { request, context -> Response in
            var visit = try await web.visit(request, context, signIn: false)
            let next = WebRoutes.sameCampusPath(request.uri.queryParameters.get("next").map { String($0) }, base: visit.base)
            var cookies: [Cookie] = []
            if visit.anonymousCSRF == nil {
                let value = SessionStore.newToken()
                visit.anonymousCSRF = value
                cookies.append(
                    Cookie(
                        name: WebSession.csrfCookieName(secure: settings.secure), value: value, path: "/", secure: settings.secure,
                        httpOnly: true, sameSite: .lax))
            }
            return try await signInPage(visit: visit, next: next, message: nil, cookies: cookies)
        }
        pages.post("signin/demo") { request, context -> Response in
            let visit = try await web.visit(request, context, signIn: false)
            guard settings.demoSignIn else { throw Problem.notFound(visit["demoSignInOff"]) }
            let form = try await WebForm.read(request, context: context)
            try web.checkCSRF(request, form: form, visit: visit)
            guard let email = form["email"], let user = try await services.users.find(campus: visit.campus.id, email: email) else {
                throw Problem.notFound(visit.format("demoPersonUnknown", visit.campus.name))
            }
            let issued = try await services.sessions.issue(campus: visit.campus, user: user.id)
            throw WebOutcome.redirect(
                WebRoutes.sameCampusPath(form["next"], base: visit.base),
                cookies: [session(visit.campus, token: issued.token, expiresAt: issued.expiresAt)])
        }
        pages.get("signin/start") { request, context -> Response in
            let visit = try await web.visit(request, context, signIn: false)
            try services.limiters.admitSignIn(address: context.clientAddress, campus: visit.campus.slug)
            guard let redirect = redirectURI(visit.campus) else { throw Problem.notFound(visit["signInNeedsPublicURL"]) }
            let issuer = request.uri.queryParameters.get("issuer").map { String($0) } ?? ""
            let next = WebRoutes.sameCampusPath(request.uri.queryParameters.get("next").map { String($0) }, base: visit.base)
            let (url, pending) = try await services.browserSignIn.start(campus: visit.campus, issuer: issuer, redirectURI: redirect)
            throw WebOutcome.redirect(
                url.absoluteString,
                cookies: [
                    pendingCookie(visit.campus, value: pending.encoded, maxAge: 600),
                    Cookie(
                        name: Self.nextCookie(visit.campus), value: Data(next.utf8).base64URLEncoded(), maxAge: 600,
                        path: visit.base + "signin", secure: settings.secure, httpOnly: true, sameSite: .lax),
                ])
        }
        pages.get("signin/callback") { request, context -> Response in
            let visit = try await web.visit(request, context, signIn: false)
            let query = request.uri.queryParameters
            let cleared = [pendingCookie(visit.campus, value: "", maxAge: 0)]
            let next =
                request.cookies[Self.nextCookie(visit.campus)].flatMap { Data(base64URLEncoded: $0.value) }
                .map { WebRoutes.sameCampusPath(String(decoding: $0, as: UTF8.self), base: visit.base) } ?? visit.base
            do {
                guard let redirect = redirectURI(visit.campus) else {
                    throw IdentityError.signInAbandoned("this server has no --public-url")
                }
                if let error = query.get("error") {
                    throw IdentityError.signInAbandoned("the provider answered \(String(error.prefix(60)))")
                }
                guard let pending = request.cookies[Self.pendingCookie(visit.campus)].flatMap({ BrowserSignIn.Pending(encoded: $0.value) })
                else {
                    throw IdentityError.signInAbandoned("this browser did not start it here, or took longer than ten minutes")
                }
                try services.limiters.admitSignIn(address: context.clientAddress, campus: visit.campus.slug)
                let session = try await services.browserSignIn.finish(
                    campus: visit.campus, pending: pending, state: query.get("state").map { String($0) } ?? "",
                    code: query.get("code").map { String($0) } ?? "", redirectURI: redirect)
                throw WebOutcome.redirect(
                    next, cookies: cleared + [self.session(visit.campus, token: session.token, expiresAt: session.expiresAt)])
            } catch let error as IdentityError {
                context.logger.info("web sign-in refused", metadata: ["reason": "\(error.logReason)"])
                return try await signInPage(
                    visit: visit, next: next, message: visit.format("signInFailed", Problem.sentence(error)), status: .unauthorized,
                    cookies: cleared)
            }
        }
        pages.post("signout") { request, context -> Response in
            let visit = try await web.visit(request, context, signIn: false)
            let form = try await WebForm.read(request, context: context)
            if let token = visit.token {
                try web.checkCSRF(request, form: form, visit: visit)
                try await services.sessions.revoke(campus: visit.campus.id, token: token)
            }
            throw WebOutcome.redirect(
                visit.base + "signin", cookies: [WebSession.clearedSessionCookie(campus: visit.campus.slug, secure: settings.secure)])
        }
        pages.get("language") { request, context -> Response in
            let visit = try await web.visit(request, context, signIn: false)
            let wanted = request.uri.queryParameters.get("lang").map { String($0) } ?? "en"
            let next = WebRoutes.sameCampusPath(request.uri.queryParameters.get("next").map { String($0) }, base: visit.base)
            guard WebText.languages.contains(where: { $0.code == wanted }) else { throw WebOutcome.redirect(next) }
            throw WebOutcome.redirect(
                next,
                cookies: [
                    Cookie(
                        name: WebSession.languageCookie, value: wanted, maxAge: 365 * 86_400, path: "/", secure: settings.secure,
                        httpOnly: true, sameSite: .lax)
                ])
        }
    }

    /// Where the provider sends the browser back: `{public URL}/c/{campus}/signin/callback`.
    func redirectURI(_ campus: Campus) -> String? {
        settings.origin.map { $0 + "/c/\(campus.slug)/signin/callback" }
    }

    static func pendingCookie(_ campus: Campus) -> String { "attest-signin-\(campus.slug)" }
    static func nextCookie(_ campus: Campus) -> String { "attest-next-\(campus.slug)" }

    /// The sign-in in progress, for the callback only; ten minutes.
    func pendingCookie(_ campus: Campus, value: String, maxAge: Int) -> Cookie {
        Cookie(
            name: Self.pendingCookie(campus), value: value, maxAge: maxAge, path: "/c/\(campus.slug)/signin", secure: settings.secure,
            httpOnly: true, sameSite: .lax)
    }

    func session(_ campus: Campus, token: String, expiresAt: Date) -> Cookie {
        let maxAge = Int(exactly: expiresAt.timeIntervalSinceNow.clamped(to: 0...(400 * 86_400)).rounded(.down)) ?? 0
        return WebSession.sessionCookie(campus: campus.slug, token: token, maxAge: maxAge, secure: settings.secure)
    }

    func signInPage(visit: WebVisit, next: String, message: String?, status: HTTPResponse.Status = .ok, cookies: [Cookie] = []) async throws
        -> Response
    {
        var data: [String: Any] = ["hasProviders": false, "demo": settings.demoSignIn]
        if settings.origin != nil {
            let providers = try await services.browserSignIn.providers(campus: visit.campus.id)
            data["hasProviders"] = !providers.isEmpty
            data["providers"] = providers.map { provider -> [String: Any] in
                [
                    "label": visit.format("signInWith", provider.displayName),
                    "href": visit.base + "signin/start" + WebRoutes.query([("issuer", provider.issuer), ("next", next)]),
                ]
            }
        }
        if let message { data["message"] = message }
        if settings.demoSignIn {
            let users = try await services.users.list(campus: visit.campus.id).prefix(50)
            data["people"] = users.map { user -> [String: Any] in
                ["email": user.email, "name": user.displayName, "role": user.roles.map(\.rawValue).joined(separator: ", "), "next": next]
            }
        }
        return try web.renderer.render(
            .init(template: "signin", title: visit["signInTitle"], data: data, status: status, cookies: cookies), visit: visit)
    }
}
