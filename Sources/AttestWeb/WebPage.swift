import AttestFoundation
import AttestPlugins
import AttestServer
import Foundation
import HTTPTypes
import Hummingbird
import Identity
import Logging
import Tenancy

/// One request to a page: the campus, the language, and who is signed in.
struct WebVisit {
    var campus: Campus
    var language: String
    var text: [String: String]
    var session: SessionStore.Session?
    /// The session token from the campus cookie (when signed in).
    var token: String?
    /// The anonymous CSRF cookie's value, when the browser has one.
    var anonymousCSRF: String?
    /// The request's path and query (for the language picker's way back).
    var path: String
    var base: String { "/c/\(campus.slug)/" }

    subscript(_ key: String) -> String { text[key] ?? WebText.english[key] ?? key }

    /// The text of `key` with `{0}`, `{1}` … filled in one pass: a value (a guest's name) is
    /// never read for a placeholder.
    func format(_ key: String, _ values: String...) -> String {
        self[key].filled(Dictionary(uniqueKeysWithValues: values.enumerated().map { ("\($0.offset)", $0.element) }))
    }

    /// The CSRF token forms on this page carry.
    var csrf: String { token.map(WebSession.csrf(sessionToken:)) ?? anonymousCSRF ?? "" }

    var user: User? { session?.user }

    /// The signed-in user (`WebRoutes.visit` with `signIn` guarantees one).
    func signedInUser() throws -> User {
        guard let user else { throw WebOutcome.redirect(base + "signin") }
        return user
    }

    /// The signed-in member, for their own private pages (journal, episodes, sharing, health
    /// records): an
    /// operator's minted session is shown why it cannot open them.
    func privateUser() throws -> User {
        let user = try signedInUser()
        if session?.byOperator == true { throw WebOutcome.operatorSession }
        return user
    }

    func has(_ roles: Set<Role>) -> Bool { user.map { !$0.roles.filter(roles.contains).isEmpty } ?? false }
}

/// What a page handler throws to answer with something other than its page.
enum WebOutcome: Error {
    /// 303 See Other to a path (or absolute URL for an identity provider).
    case redirect(String, cookies: [Cookie] = [])
    /// The 403 page naming the roles that would do.
    case forbidden(Set<Role>)
    /// The 403 page of a member's private page asked with an operator's minted session.
    case operatorSession
}

/// Renders pages into the layout, with the security headers every web response carries.
struct WebRenderer: Sendable {
    let settings: WebConfiguration

    struct Page {
        var template: String
        var title: String
        var data: [String: Any]
        var status: HTTPResponse.Status = .ok
        var scripts: [String] = []
        var wide = false
        /// The nav entry to mark as the current page.
        var current: String?
        var cookies: [Cookie] = []
    }

    func render(_ page: Page, visit: WebVisit) throws -> Response {
        let assets = try WebAssets.shared.get()
        var data = page.data
        data["t"] = visit.text
        data["base"] = visit.base
        data["csrf"] = visit.csrf
        data["slug"] = visit.campus.slug
        // Charts and tables are written directly (WebHTML): the dashboard's many elements.
        if let charts = data["charts"] as? [WebChart] { data["chartsHTML"] = charts.map(WebHTML.chart).joined() }
        if let tables = data["tables"] as? [WebTable] { data["tablesHTML"] = tables.map(WebHTML.table).joined() }
        guard let body = assets.library.render(data, withTemplate: page.template) else {
            throw WebAssetsError(file: page.template, reason: "no such template")
        }
        var layout: [String: Any] = [
            "lang": visit.language, "title": page.title, "siteName": visit.campus.name, "css": assets.paths["site.css"] ?? "",
            "scripts": (["app.js"] + page.scripts).compactMap { assets.paths[$0] }, "t": data["t"] ?? [:], "home": visit.base,
            "base": visit.base,
            "body": body, "wide": page.wide, "csrf": visit.csrf,
            "languages": WebText.languages.map { language -> [String: Any] in
                [
                    "code": language.code, "name": language.name, "current": language.code == visit.language,
                    "href": visit.base + "language?lang=\(language.code)&next=" + Self.queryEscape(visit.path),
                ]
            },
        ]
        if let user = visit.user {
            layout["signedIn"] = true
            layout["userName"] = user.displayName
            layout["nav"] = navigation(visit: visit, user: user, current: page.current)
        }
        guard let html = assets.library.render(layout, withTemplate: "layout") else {
            throw WebAssetsError(file: "layout", reason: "no such template")
        }
        var response = Response(
            status: page.status, headers: [.contentType: "text/html; charset=utf-8"], body: .init(byteBuffer: ByteBuffer(string: html)))
        response.headers[.contentLanguage] = visit.language
        for cookie in page.cookies { response.setCookie(cookie) }
        return response
    }

    private func navigation(visit: WebVisit, user: User, current: String?) -> [[String: Any]] {
        var items: [(id: String, href: String, label: String)] = [
            ("today", visit.base, visit["navToday"]), ("badge", visit.base + "badge", visit["navBadge"]),
            ("history", visit.base + "history", visit["navHistory"]), ("locations", visit.base + "locations", visit["navLocations"]),
            ("stats", visit.base + "stats", visit["navStats"]), ("community", visit.base + "community", visit["navCommunity"]),
            ("journal", visit.base + "journal", visit["navJournal"]),
            ("episodes", visit.base + "episodes", visit["navEpisodes"]), ("records", visit.base + "records", visit["navRecords"]),
            ("settings", visit.base + "settings", visit["navSettings"]),
        ]
        if visit.has([.screener, .admin]) { items.append(("scan", visit.base + "scan", visit["navScan"])) }
        if visit.has([.screener, .admin]), GuestPolicy(campus: visit.campus).open {
            items.append(("kiosk", visit.base + "kiosk", visit["navKiosk"]))
        }
        if visit.has([.admin]) { items.append(("admin", visit.base + "admin", visit["navAdmin"])) }
        if visit.has([.healthOfficer]) {
            items.append(("follow-ups", visit.base + "admin/follow-ups", visit["navFollowUps"]))
            items.append(("health", visit.base + "health", visit["navHealth"]))
        }
        return items.map { ["href": $0.href, "label": $0.label, "current": $0.id == current] }
    }

    /// The headers of every web response: a policy allowing only this site's own files and
    /// no inline script, no framing, no referrer, no caching of personal pages, HSTS over https.
    func secure(_ headers: inout HTTPFields, cacheable: Bool = false) {
        headers[.contentSecurityPolicy] =
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; connect-src 'self'; "
            + "media-src 'self' blob:; manifest-src 'self'; worker-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
        headers[.xContentTypeOptions] = "nosniff"
        for field in Self.fixedFields { headers[field.name] = field.value }
        if !cacheable {
            headers[.cacheControl] = "no-store"
            headers[.vary] = "Cookie, Accept-Language"
        }
        if settings.secure { headers[.strictTransportSecurity] = "max-age=31536000" }
    }

    /// Fields HTTPTypes does not name (each literal is a valid field name).
    private static let fixedFields: [HTTPField] = [
        ("Referrer-Policy", "no-referrer"), ("X-Frame-Options", "DENY"), ("Cross-Origin-Opener-Policy", "same-origin"),
        ("Permissions-Policy", "camera=(self), geolocation=(self), microphone=(self), payment=()"),
    ].compactMap { name, value in HTTPField.Name(name).map { HTTPField(name: $0, value: value) } }

    /// Percent-encodes a query value (everything but unreserved characters).
    static func queryEscape(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? ""
    }
    private static let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
}

extension HTTPField.Name {
    // Request fields HTTPTypes does not name (valid literals: never nil).
    static let csrfToken = HTTPField.Name("X-CSRF-Token")
    static let secFetchSite = HTTPField.Name("Sec-Fetch-Site")
}
