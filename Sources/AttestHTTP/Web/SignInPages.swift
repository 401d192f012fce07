import AttestPlugins
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
                    Cookie(name: WebSession.csrfCookieName(secure: settings.secure), value: value, path: "/", secure: settings.secure, httpOnly: true, sameSite: .lax))
            }
            return try await signInPage(visit: visit, next: next, message: nil, cookies: cookies)
        }
        pages.post("signin/demo") { request, context -> Response in
            guard settings.demoSignIn else { throw Problem.notFound("There is no demo sign-in here: sign in with your university account.") }
            let visit = try await web.visit(request, context, signIn: false)
            let form = try await WebForm.read(request, context: context)
            try web.checkCSRF(request, form: form, visit: visit)
            guard let email = form["email"], let user = try await services.users.find(campus: visit.campus.id, email: email) else {
                throw Problem.notFound("No such demo person at \(visit.campus.name).")
            }
            let issued = try await services.sessions.issue(campus: visit.campus, user: user.id)
            throw WebOutcome.redirect(
                WebRoutes.sameCampusPath(form["next"], base: visit.base),
                cookies: [session(visit.campus, token: issued.token, expiresAt: issued.expiresAt)])
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
                cookies: [Cookie(name: WebSession.languageCookie, value: wanted, maxAge: 365 * 86_400, path: "/", secure: settings.secure, httpOnly: true, sameSite: .lax)])
        }
    }

    func session(_ campus: Campus, token: String, expiresAt: Date) -> Cookie {
        let maxAge = Int(expiresAt.timeIntervalSinceNow.clamped(to: 0...(400 * 86_400)))
        return WebSession.sessionCookie(campus: campus.slug, token: token, maxAge: maxAge, secure: settings.secure)
    }

    func signInPage(visit: WebVisit, next: String, message: String?, status: HTTPResponse.Status = .ok, cookies: [Cookie] = []) async throws -> Response {
        var data: [String: Any] = ["hasProviders": false, "demo": settings.demoSignIn]
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
