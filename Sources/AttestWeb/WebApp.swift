import AttestPlugins
import AttestServer
import Foundation
import Hummingbird
import Notifications
import Tenancy

/// The member pages as a web app: `/c/{campus}/manifest.webmanifest` (linked from every page,
/// the sign-in page too, where installing starts), the service worker `/c/{campus}/sw.js`
/// (served there so that its scope is the campus's pages), and what the Settings page's push
/// button uses: `settings/push-key` and `POST settings/push` (the browser's subscription, with
/// the page's CSRF token in `X-CSRF-Token`).
struct WebApp: Sendable {
    let web: WebRoutes
    var services: AttestServices { web.services }

    func register(on pages: RouterGroup<AttestRequestContext>) {
        pages.get("manifest.webmanifest") { request, context -> Response in
            let visit = try await web.visit(request, context, signIn: false)
            let icon = (try? WebAssets.shared.get())?.paths["icon.svg"] ?? ""
            let manifest: [String: Any] = [
                "name": "\(visit.campus.name) · Campus Attest", "short_name": String(visit.campus.name.prefix(12)),
                "start_url": visit.base, "scope": visit.base, "display": "standalone", "lang": visit.language,
                "background_color": "#ffffff", "theme_color": "#1d4ed8",
                "icons": [["src": icon, "sizes": "any", "type": "image/svg+xml", "purpose": "any"]],
            ]
            let data = try JSONSerialization.data(withJSONObject: manifest, options: [.sortedKeys, .withoutEscapingSlashes])
            return Response(
                status: .ok, headers: [.contentType: "application/manifest+json", .cacheControl: "no-cache"],
                body: .init(byteBuffer: ByteBuffer(bytes: data)))
        }
        pages.get("sw.js") { _, _ -> Response in
            guard case .success(let assets) = WebAssets.shared, let path = assets.paths["sw.js"],
                let asset = assets.files[String(path.dropFirst("/static/".count))]
            else { throw Problem.notFound("no service worker in this build") }
            // Checked for a newer one on every visit, as browsers do for a worker's script.
            return Response(
                status: .ok, headers: [.contentType: "text/javascript; charset=utf-8", .cacheControl: "no-cache"],
                body: .init(byteBuffer: asset.body))
        }
        pages.get("settings/push-key") { request, context -> Response in
            let visit = try await web.visit(request, context)
            let key = try await services.pushKeys.publicKey(campus: visit.campus.id)
            let data = try JSONSerialization.data(withJSONObject: ["publicKey": key])
            return Response(
                status: .ok, headers: [.contentType: "application/json", .cacheControl: "private, no-store"],
                body: .init(byteBuffer: ByteBuffer(bytes: data)))
        }
        pages.post("settings/push") { request, context -> Response in
            let visit = try await web.visit(request, context)
            try web.checkCSRF(request, form: nil, visit: visit)
            guard let user = visit.user?.id else { throw WebOutcome.redirect(visit.base + "signin") }
            let sent = PushHTTP.subscription(try await request.jsonObject(context: context))
            guard let subscription = sent.subscription else {
                throw Problem.validation(sent.problems.map { .init(field: $0.field, message: $0.message) })
            }
            _ = try await PushHTTP.add(
                subscription, madeWith: sent.madeWith, campus: visit.campus.id, user: user, to: services.pushSubscriptions)
            let store = NotificationPreferenceStore(client: services.database)
            var preferences = try await store.preferences(campus: visit.campus.id, user: user)
            preferences.push = true
            try await store.set(campus: visit.campus, user: user, preferences, now: services.clock())
            return Response(status: .noContent, headers: [.cacheControl: "private, no-store"])
        }
    }
}
