import AttestPlugins
import AttestPostgres
import AttestTestSupport
import Community
import Foundation
import HTTPTypes
import Identity
import NIOCore
import Surveys
import Tenancy
import Testing

@testable import AttestAPI
@testable import AttestServer
@testable import AttestWeb

@Suite("Web pages over HTTP")
struct WebPageTests {
    /// A server with the demo sign-in, one campus with the every-kind survey, and its people.
    static func setUp(web: WebConfiguration = WebConfiguration(demoSignIn: true)) async throws -> (TestServer, Campus) {
        var server = try await TestServer.make()
        server.configuration.web = web
        let campus = try await server.campus("north")
        _ = try await QuestionnaireStore(client: server.pool).publish(campus: campus, draft: WebSurvey.draft, actor: "test")
        _ = try await server.user("ana@example.edu", at: campus)
        _ = try await server.user("ada@example.edu", at: campus, roles: [.admin])
        _ = try await server.user("hana@example.edu", at: campus, roles: [.healthOfficer])
        _ = try await server.user("sam@example.edu", at: campus, roles: [.screener])
        return (server, campus)
    }

    static func attestations(_ server: TestServer, _ campus: Campus) async throws -> Int {
        try await server.pool.query("SELECT count(*) AS n FROM attestations WHERE campus_id = \(campus.id)", campus: campus.id.rawValue)
            .first?.decode("n", as: Int.self) ?? -1
    }

    @Test func everyPageNeedsSignInAndCarriesTheSecurityHeaders() async throws {
        let (server, _) = try await Self.setUp()
        try await server.run { api in
            let browser = WebClient(api.client)
            for path in ["/c/north/", "/c/north/badge", "/c/north/history", "/c/north/admin", "/c/north/scan"] {
                let page = try await browser.get(path)
                #expect(page.status == 303, "\(path)")
                #expect(page.location == "/c/north/signin?next=" + WebRenderer.queryEscape(path))
            }
            let signIn = try await browser.get("/c/north/signin")
            #expect(signIn.status == 200)
            let csp = try #require(signIn.headers[.contentSecurityPolicy])
            #expect(csp.contains("script-src 'self';") && csp.contains("frame-ancestors 'none'") && !csp.contains("unsafe-inline"))
            #expect(signIn.headers[HTTPField.Name("Referrer-Policy")!] == "no-referrer")
            #expect(signIn.headers[.cacheControl] == "no-store")
            #expect(signIn.headers[.strictTransportSecurity] == nil, "no HSTS over plain http")
            #expect(!signIn.body.contains("<script>") && !signIn.body.contains("style="), "no inline script or style")
            // Static files: hashed names, cached for a year; an unknown name is a 404.
            let css = try #require(signIn.body.firstMatch(of: /href="(\/static\/site\.[0-9a-f]{10}\.css)"/)?.1)
            let sheet = try await browser.get(String(css))
            #expect(sheet.status == 200)
            #expect(sheet.headers[.cacheControl] == "public, max-age=31536000, immutable")
            #expect(sheet.headers[.contentType] == "text/css; charset=utf-8")
            #expect(try await browser.get("/static/site.0000000000.css").status == 404)
            // An unknown campus is a 404 page, not JSON.
            let unknown = try await browser.get("/c/nowhere/")
            #expect(unknown.status == 404)
            #expect(unknown.headers[.contentType] == "text/html; charset=utf-8")
        }
    }

    /// Charts' coordinates and percentages are written without `String(format:)`, and say what
    /// it said (but for halves the last decimal cannot tell apart, rounded to even here, and for a
    /// negative value that rounds to zero, which printf signs and a chart does not).
    /// The pages' words are one file a language (`Web/Resources/texts/<code>.json`): every
    /// language the picker offers has one, with every key English has, no other, none empty,
    /// and the same `{0}`, `{1}` … as English's text; a file that is not an object of texts
    /// is refused with its name.
    @Test func everyLanguageHasEveryKeyWithItsPlaceholders() throws {
        var files: [String: [String: String]] = [:]
        for (path, text) in embeddedWebFiles where path.hasPrefix("texts/") {
            files[String(path.dropFirst("texts/".count).dropLast(".json".count))] = try WebAssets.texts(text).get()
        }
        #expect(Set(files.keys) == Set(WebText.languages.map(\.code)))
        let english = try #require(files["en"])
        #expect(english.count > 300)
        func placeholders(_ text: String) -> [Substring] { text.matches(of: /\{[0-9]\}/).map(\.output).sorted() }
        for (language, table) in files {
            #expect(
                Set(table.keys) == Set(english.keys),
                "\(language): missing \(Set(english.keys).subtracting(table.keys).sorted()), extra \(Set(table.keys).subtracting(english.keys).sorted())"
            )
            for (key, text) in table {
                #expect(!text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty, "\(language) \(key) is empty")
                #expect(placeholders(text) == placeholders(english[key] ?? ""), "\(language) \(key): \(text)")
            }
        }
        #expect(WebText.table("es")["signIn"] == "Iniciar sesión" && WebText.table("en")["signIn"] == "Sign in")
        #expect(WebText.table("xx") == english)
        if case .success = WebAssets.load(["texts/en.json": #"{"signIn": 1}"#]) { Issue.record("a text that is a number was taken") }
        if case .failure(let error) = WebAssets.load(["texts/es.json": "[]"]) {
            #expect(error.description.contains("texts/es.json"))
        } else {
            Issue.record("a file that is no object was taken")
        }
    }

    @Test func numbersAreWrittenAsPrintfWritesThem() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20_000 {
            let value = Double.random(in: -2_000...2_000, using: &generator)
            let tenths = value * 10
            guard abs(tenths - tenths.rounded(.down) - 0.5) > 1e-6 else { continue }
            // printf writes a negative value that rounds to zero as "-0.0"; a chart says "0.0".
            let printf = String(format: "%.1f", value)
            #expect(oneDecimal(value) == (printf == "-0.0" ? "0.0" : printf), "\(value)")
            if abs(value - value.rounded(.down) - 0.5) > 1e-6, value.rounded() != 0 || value >= 0 {
                #expect(noDecimals(value) == String(format: "%.0f", value), "\(value)")
            }
        }
        #expect(oneDecimal(0.25) == "0.2" && oneDecimal(0.75) == "0.8" && oneDecimal(-12.34) == "-12.3" && oneDecimal(7) == "7.0")
        #expect(oneDecimal(-0.03) == "0.0" && oneDecimal(-0.0) == "0.0" && noDecimals(-0.3) == "0" && oneDecimal(-0.06) == "-0.1")
        #expect(oneDecimal(.infinity) == String(format: "%.1f", Double.infinity) && oneDecimal(1e300) == String(format: "%.1f", 1e300))
        #expect(WebFormat.percent(12.34) == "12.3" && WebFormat.percent(99.96) == "100" && WebFormat.percent(.nan) == "–")
    }

    /// A chart's table: the caption and every text escaped, figures' columns right-aligned
    /// (`num`), each row's first cell its header, a cell past the columns plain.
    @Test func aChartsTableIsWrittenWithItsHeadersAndEscapedText() {
        let table = Charts.table(
            caption: "Badges <today>", columns: [("Date", false), ("Count", true), ("Note \"x\"", false)],
            rows: [["2026-11-27", "12", "a & b"], ["2026-11-28", "3", "c", "extra"]])
        #expect(
            WebHTML.table(table) == """
                <div class="table-wrap">
                <table>
                <caption>Badges &lt;today&gt;</caption>
                <thead><tr><th scope="col">Date</th><th scope="col" class="num">Count</th><th scope="col">Note &quot;x&quot;</th></tr></thead>
                <tbody>
                <tr><th scope="row">2026-11-27</th><td class="num">12</td><td>a &amp; b</td></tr>
                <tr><th scope="row">2026-11-28</th><td class="num">3</td><td>c</td><td>extra</td></tr>
                </tbody>
                </table>
                </div>

                """)
    }

    /// The QR code's path, read back rectangle by rectangle, paints exactly libqrencode's dark
    /// modules, for tokens of every length up to the widest codes (numbers of three digits).
    @Test func theQRPathPaintsExactlyTheDarkModules() throws {
        for length in [1, 40, 300, 1_000, 2_000] {
            let text = String((0..<length).map { index in Character(UnicodeScalar(UInt8(65 + (index * 7) % 58))) })
            let rows = try #require(QRCode.modules(text))
            var painted = Array(repeating: Array(repeating: false, count: rows.count), count: rows.count)
            let pattern = /M(\d+) (\d+)h(\d+)v1h-(\d+)z/
            var rest = Substring(QRCode.path(rows))
            while let match = rest.prefixMatch(of: pattern) {
                let (x, y, run) = (Int(match.1)! - 4, Int(match.2)! - 4, Int(match.3)!)
                #expect(match.4 == match.3)
                guard (0..<rows.count).contains(y), x >= 0, run > 0, x + run <= rows.count else {
                    Issue.record("a rectangle outside the code: \(match.0)")
                    break
                }
                for column in x..<(x + run) {
                    #expect(!painted[y][column], "painted twice")
                    painted[y][column] = true
                }
                rest = rest[match.range.upperBound...]
            }
            #expect(rest.isEmpty, "the path is all rectangles")
            #expect(painted == rows, "length \(length), \(rows.count) modules wide")
        }
        let svg = try #require(QRCode.svg("token", label: "Badge <green>"))
        #expect(svg.contains(#"aria-label="Badge &lt;green&gt;""#) && svg.contains(#"class="qr""#))
    }

    @Test func everyTemplateParsesAndAPageWithItsFilesStaysUnder60KB() throws {
        let assets = try WebAssets.shared.get()
        for name in [
            "layout", "error", "signin", "survey", "badge", "history", "locations", "stats", "admin", "followups", "scan", "journal",
            "entry", "entryform", "errorsummary", "episodes", "episode", "sharing",
        ] {
            #expect(assets.library.getTemplate(named: name) != nil, "\(name).mustache")
        }
        let shared = (assets.sizes["site.css"] ?? 0)
        #expect(shared + (assets.sizes["scan.js"] ?? 0) < 30_000)
        #expect(shared + (assets.sizes["badge.js"] ?? 0) < 30_000)
        #expect(shared + (assets.sizes["record.js"] ?? 0) + (assets.sizes["place.js"] ?? 0) < 30_000)
    }

    @Test func theDemoSignInIsOfferedOnlyWhenTheServerSaysSo() async throws {
        let (server, _) = try await Self.setUp(web: WebConfiguration())
        try await server.run { api in
            let browser = WebClient(api.client)
            let page = try await browser.get("/c/north/signin")
            #expect(!page.body.contains("signin/demo"))
            let csrf = try #require(browser.cookie("attest-csrf"))
            let refused = try await browser.post("/c/north/signin/demo", form: [("csrf", csrf), ("email", "ana@example.edu")])
            #expect(refused.status == 404)
            #expect(refused.setCookies.allSatisfy { !$0.hasPrefix("attest-north=") })
            #expect(refused.body.contains("sign in with your university account"))
            let noAddress = try await browser.get("/c/north/signin/start?issuer=x")
            #expect(noAddress.status == 404 && noAddress.body.contains("start it with --public-url"))

            let spanish = WebClient(api.client, acceptLanguage: "es")
            _ = try await spanish.get("/c/north/signin")
            let spanishCSRF = try #require(spanish.cookie("attest-csrf"))
            let rehusado = try await spanish.post("/c/north/signin/demo", form: [("csrf", spanishCSRF), ("email", "ana@example.edu")])
            #expect(rehusado.status == 404 && rehusado.body.contains("inicie sesión con su cuenta de la universidad"))
            let sinDireccion = try await spanish.get("/c/north/signin/start?issuer=x")
            #expect(sinDireccion.status == 404 && sinDireccion.body.contains("lo inicie con --public-url"))
        }
    }

    @Test func anUnknownDemoPersonIsRefusedInThePagesLanguage() async throws {
        let (server, campus) = try await Self.setUp()
        try await server.run { api in
            for (language, words) in [
                ("en", "has no demo person with that email address"), ("es", "no tiene ninguna persona de demostración"),
            ] {
                let browser = WebClient(api.client, acceptLanguage: language)
                let csrf = try #require(try await browser.get("/c/north/signin").csrf)
                let refused = try await browser.post("/c/north/signin/demo", form: [("csrf", csrf), ("email", "nobody@example.edu")])
                #expect(refused.status == 404)
                #expect(refused.body.contains(words) && refused.body.contains(WebHTML.escape(campus.name)), "\(language)")
                #expect(refused.setCookies.allSatisfy { !$0.contains("attest-north=") })
            }
        }
    }

    @Test func theSessionCookieIsHttpOnlyLaxAndOverHttpsHostPrefixedAndSecure() async throws {
        let (server, _) = try await Self.setUp(
            web: WebConfiguration(publicURL: URL(string: "https://attest.example.edu"), demoSignIn: true))
        try await server.run { api in
            let browser = WebClient(api.client)
            let page = try await browser.get("/c/north/signin")
            #expect(page.headers[.strictTransportSecurity] == "max-age=31536000")
            let csrf = try #require(page.csrf)
            #expect(page.setCookies.contains { $0.hasPrefix("__Host-attest-csrf=") && $0.contains("Secure") })
            let done = try await browser.post(
                "/c/north/signin/demo", form: [("csrf", csrf), ("email", "ana@example.edu"), ("next", "https://evil.example/")])
            #expect(done.status == 303)
            #expect(done.location == "/c/north/", "a foreign next is the campus's home")
            let cookie = try #require(done.setCookies.first { $0.hasPrefix("__Host-attest-north=") })
            for attribute in ["HttpOnly", "Secure", "SameSite=Lax", "Path=/"] { #expect(cookie.contains(attribute), "\(attribute)") }
            #expect(!cookie.contains("Domain="))
        }
    }

    @Test func theSurveyFormShowsEachProblemByItsFieldStoresNothingThenTheBadge() async throws {
        let (server, campus) = try await Self.setUp()
        try await server.run { api in
            let browser = WebClient(api.client)
            try await browser.demoSignIn(campus: "north", email: "ana@example.edu")
            let form = try await browser.get("/c/north/")
            #expect(form.status == 200)
            for kind in [
                "type=\"radio\" name=\"answers.fever\"", "inputmode=\"decimal\" name=\"answers.temperature\"",
                "name=\"answers.where_today\" value=\"remote\"", "<textarea name=\"answers.notes\"",
            ] {
                #expect(form.body.contains(kind), "\(kind)")
            }
            #expect(form.body.contains("°C") && form.body.contains("A number from 34 to 43"))
            let csrf = try #require(form.csrf)
            let version = try #require(form.field("surveyVersion"))

            let bad = try await browser.post(
                "/c/north/",
                form: [
                    ("csrf", csrf), ("surveyVersion", version), ("answers.cough", "no"), ("answers.temperature", "98.6"),
                    ("answers.where_today", "mars"),
                ])
            #expect(bad.status == 422)
            #expect(bad.body.contains("There is a problem"))
            for id in ["fever", "temperature", "where_today"] {
                #expect(bad.body.contains("<a href=\"#q-\(id)\">"), "summary links \(id)")
                #expect(bad.body.contains("id=\"q-\(id)-error\""), "message by \(id)")
            }
            #expect(!bad.body.contains("q-cough-error"))
            #expect(bad.body.contains("aria-describedby=\"q-temperature-hint q-temperature-error\""))
            #expect(bad.count(" autofocus") == 1 && bad.body.contains("id=\"q-fever\" autofocus"), "focus on the first field in error")
            #expect(bad.body.contains("value=\"98.6\""), "what was typed stays")
            #expect(try await Self.attestations(server, campus) == 0)

            let good = try await browser.post(
                "/c/north/", form: [("csrf", csrf), ("surveyVersion", version), ("key", form.field("key") ?? "")] + WebSurvey.healthy)
            #expect(good.status == 303)
            #expect(good.location == "/c/north/badge")
            #expect(try await Self.attestations(server, campus) == 1)
            let badge = try await browser.get("/c/north/badge")
            #expect(badge.status == 200)
            #expect(badge.body.contains("class=\"badge green\"") && badge.body.contains(">Green</p>"))
            #expect(badge.body.contains("<svg") && badge.body.contains("class=\"qr\""))
            #expect(badge.body.contains("id=\"countdown\"") && badge.body.contains("id=\"clock\""))
            // Today's page now shows the badge; a second submission says it is in already.
            let today = try await browser.get("/c/north/")
            #expect(today.body.contains("class=\"badge green\""))
            let again = try await browser.post("/c/north/", form: [("csrf", csrf), ("surveyVersion", version)] + WebSurvey.healthy)
            #expect(again.location == "/c/north/badge?already=1")
            #expect(try await browser.get("/c/north/badge?already=1").body.contains("You already submitted today"))
            #expect(try await Self.attestations(server, campus) == 1)
        }
    }

    /// The badge's reason in the page's language: the campus's rule's translation ("No symptoms
    /// reported" has Spanish words in the default table), and the platform's own for an
    /// isolation; the API keeps the words as the rule gave them.
    @Test func theBadgesReasonIsInThePagesLanguage() async throws {
        let (server, campus) = try await Self.setUp()
        let lab = try await RecordsTests.labToken(server, campus)
        try await server.run { api in
            let spanish = WebClient(api.client, acceptLanguage: "es-MX,es;q=0.9")
            try await spanish.demoSignIn(campus: "north", email: "ana@example.edu")
            let form = try await spanish.get("/c/north/")
            let csrf = try #require(form.csrf), version = try #require(form.field("surveyVersion"))
            _ = try await spanish.post("/c/north/", form: [("csrf", csrf), ("surveyVersion", version)] + WebSurvey.healthy)
            let badge = try await spanish.get("/c/north/badge")
            #expect(badge.body.contains(#"<p class="reason">No se informaron síntomas</p>"#), "\(badge.body)")
            #expect(try await spanish.get("/c/north/history").body.contains("<td>No se informaron síntomas</td>"))
            let english = WebClient(api.client)
            try await english.demoSignIn(campus: "north", email: "ana@example.edu")
            #expect(try await english.get("/c/north/badge").body.contains(#"<p class="reason">No symptoms reported</p>"#))

            // A positive result: isolation, in each page's words.
            let collected = Date().addingTimeInterval(-86_400)
            let sent = try await api.send(
                .post, "/v1/campuses/north/lab/results", template: RecordsTests.lab, token: lab,
                json: RecordsTests.bundle([
                    RecordsTests.observation(
                        specimen: "S-1", email: "ana@example.edu", detected: true, collected: collected.ISO8601Format(),
                        issued: Date().ISO8601Format())
                ]))
            #expect(sent.status == 200, "\(sent.body)")
            try await server.services.authGenerations.refresh()
            let red = try await spanish.get("/c/north/badge")
            #expect(red.body.contains("class=\"badge red\""), "\(red.body)")
            #expect(
                red.body.firstMatch(
                    of: /<p class="reason">Aislamiento hasta el \d{1,2} (ene|feb|mar|abr|may|jun|jul|ago|sep|oct|nov|dic)<\/p>/)
                    != nil, "\(red.body)")
            let redInEnglish = try await english.get("/c/north/badge")
            #expect(
                redInEnglish.body.firstMatch(of: /<p class="reason">Isolation until \d{1,2} [A-Z][a-z]{2}<\/p>/) != nil,
                "\(redInEnglish.body)")
        }
    }

    @Test func aMemberWithoutASubmissionSeesTheGrayBadgeWithTheDeadlineAndNoCode() async throws {
        let (server, _) = try await Self.setUp()
        try await server.run { api in
            let browser = WebClient(api.client)
            try await browser.demoSignIn(campus: "north", email: "ana@example.edu")
            let badge = try await browser.get("/c/north/badge")
            #expect(badge.body.contains("class=\"badge gray\"") && badge.body.contains("Not submitted"))
            #expect(badge.body.contains("Submit before 10:00") && badge.body.contains("href=\"/c/north/\""))
            #expect(!badge.body.contains("class=\"qr\""))
        }
    }

    @Test func everyPostNeedsTheFormsCSRFTokenAndNoneMayComeFromAnotherSite() async throws {
        let (server, campus) = try await Self.setUp()
        try await server.run { api in
            let browser = WebClient(api.client)
            try await browser.demoSignIn(campus: "north", email: "ana@example.edu")
            let form = try await browser.get("/c/north/")
            let csrf = try #require(form.csrf)
            let version = try #require(form.field("surveyVersion"))
            let missing = try await browser.post("/c/north/", form: [("surveyVersion", version)] + WebSurvey.healthy)
            #expect(missing.status == 403)
            #expect(missing.body.contains("This form expired or came from another site"))
            let wrong = try await browser.post(
                "/c/north/", form: [("csrf", String(csrf.reversed())), ("surveyVersion", version)] + WebSurvey.healthy)
            #expect(wrong.status == 403)
            let crossSite = try await browser.post(
                "/c/north/", form: [("csrf", csrf), ("surveyVersion", version)] + WebSurvey.healthy,
                headers: [HTTPField.Name("Sec-Fetch-Site")!: "cross-site"])
            #expect(crossSite.status == 403)
            let signOut = try await browser.post("/c/north/signout", form: [("csrf", "nope")])
            #expect(signOut.status == 403, "sign-out needs the token too")
            #expect(try await Self.attestations(server, campus) == 0)
        }
    }

    @Test func signingOutRevokesTheSessionTheAPIShares() async throws {
        let (server, _) = try await Self.setUp()
        try await server.run { api in
            let browser = WebClient(api.client)
            try await browser.demoSignIn(campus: "north", email: "ana@example.edu")
            let token = try #require(browser.cookie("attest-north"))
            #expect(try await api.send(.get, "/v1/campuses/north/me", template: "/v1/campuses/{campus}/me", token: token).status == 200)
            let page = try await browser.get("/c/north/history")
            let out = try await browser.post("/c/north/signout", form: [("csrf", try #require(page.csrf))])
            #expect(out.status == 303)
            #expect(browser.cookie("attest-north") == nil)
            #expect(try await api.send(.get, "/v1/campuses/north/me", template: "/v1/campuses/{campus}/me", token: token).status == 401)
            #expect(try await browser.get("/c/north/").status == 303)
        }
    }

    @Test func aCampusCookieIsWorthNothingAtAnotherCampus() async throws {
        let (server, _) = try await Self.setUp()
        let south = try await server.campus("south")
        _ = try await QuestionnaireStore(client: server.pool).publish(campus: south, draft: WebSurvey.draft, actor: "test")
        try await server.run { api in
            let browser = WebClient(api.client)
            try await browser.demoSignIn(campus: "north", email: "ada@example.edu")
            let token = try #require(browser.cookie("attest-north"))
            #expect(try await browser.get("/c/north/admin").status == 200)
            #expect(try await browser.get("/c/south/").status == 303)
            // The same token under the other campus's cookie name is unknown there.
            let forged = try await browser.get("/c/south/admin", headers: [.cookie: "attest-south=\(token)"])
            #expect(forged.status == 303)
            #expect(forged.location?.hasPrefix("/c/south/signin") == true)
        }
    }

    @Test func roleGatedPagesRefuseOthersWithA403Page() async throws {
        let (server, _) = try await Self.setUp()
        try await server.run { api in
            let member = WebClient(api.client)
            try await member.demoSignIn(campus: "north", email: "ana@example.edu")
            for path in ["/c/north/admin", "/c/north/admin/report.csv", "/c/north/admin/follow-ups", "/c/north/scan"] {
                let page = try await member.get(path)
                #expect(page.status == 403, "\(path)")
                #expect(page.body.contains("This page needs the role"))
            }
            #expect(!(try await member.get("/c/north/history")).body.contains("/c/north/admin\""), "no admin link for members")
            let screener = WebClient(api.client)
            try await screener.demoSignIn(campus: "north", email: "sam@example.edu")
            #expect(try await screener.get("/c/north/scan").status == 200)
            #expect(try await screener.get("/c/north/admin").status == 403)
        }
    }

    @Test func theDashboardShowsTheAPIsFiguresAndItsCSVHoldsAggregatesOnly() async throws {
        let (server, campus) = try await Self.setUp()
        let ana = try await server.user("ben@example.edu", at: campus)
        try await server.run { api in
            let member = WebClient(api.client)
            try await member.demoSignIn(campus: "north", email: "ben@example.edu")
            let form = try await member.get("/c/north/")
            _ = try await member.post(
                "/c/north/",
                form: [("csrf", try #require(form.csrf)), ("surveyVersion", try #require(form.field("surveyVersion")))]
                    + [("answers.fever", "yes"), ("answers.cough", "no"), ("answers.where_today", "remote")])
            let admin = WebClient(api.client)
            try await admin.demoSignIn(campus: "north", email: "ada@example.edu")
            let (_, adminToken) = (ana, try #require(admin.cookie("attest-north")))
            let today = campus.localDate(at: Date())
            let json = try await api.send(
                .get, "/v1/campuses/north/admin/dashboard?from=\(today)&to=\(today)", template: "/v1/campuses/{campus}/admin/dashboard",
                token: adminToken)
            let total = try #require(json.json["total"] as? [String: Any])
            let page = try await admin.get("/c/north/admin?from=\(today)&to=\(today)")
            #expect(page.status == 200)
            let submitted = try #require(total["submitted"] as? Int)
            #expect(submitted == 1)
            #expect(page.body.contains("\(submitted) submitted, \(total["onTime"] as? Int ?? -1) on time"))
            let rate = (total["complianceRate"] as? Double).map { WebFormat.percent($0 * 100) + "%" } ?? "no data"
            #expect(page.body.contains("<span id=\"compliance\">\(rate)</span>"))
            #expect(page.body.contains("<title id=\"pie-title\">") && page.body.contains("<desc id=\"pie-desc\">"))
            #expect(page.body.contains("<caption>On time, late and missing per day</caption>"))
            let csv = try await admin.get("/c/north/admin/report.csv?from=\(today)&to=\(today)")
            #expect(csv.headers[.contentType] == "text/csv; charset=utf-8")
            #expect(csv.body.hasPrefix("date,active_members,submitted,on_time,late,missing,green,yellow,red,compliance_rate"))
            #expect(!csv.body.contains("@example.edu"), "aggregates only")
        }
    }

    /// Dates the dashboard cannot show (easy to pick in two date fields) give its form again:
    /// each date's problem beside it in the page's language, what was typed kept, no figures.
    @Test func theDashboardSaysWhatIsWrongWithItsDatesInThePagesLanguage() async throws {
        let (server, _) = try await Self.setUp()
        try await server.run { api in
            let admin = WebClient(api.client)
            try await admin.demoSignIn(campus: "north", email: "ada@example.edu")
            let backwards = try await admin.get("/c/north/admin?from=2026-11-20&to=2026-10-01")
            #expect(backwards.status == 422 && backwards.body.contains("<title>Error: Dashboard"), "\(backwards.status)")
            #expect(backwards.body.contains("<a href=\"#to\">Choose a last day on or after the first day, "), "\(backwards.body)")
            #expect(
                backwards.body.contains(
                    #"id="to" name="to" value="2026-10-01" aria-invalid="true" aria-describedby="to-error" autofocus>"#))
            #expect(backwards.body.contains(#"id="from" name="from" value="2026-11-20">"#))
            #expect(!backwards.body.contains("id=\"compliance\"") && !backwards.body.contains("report.csv"))
            let spanish: HTTPFields = [.acceptLanguage: "es"]
            let long = try await admin.get("/c/north/admin?from=2024-01-01&to=2026-11-20", headers: spanish)
            #expect(long.status == 422 && long.body.contains("<title>Error: "))
            #expect(long.body.contains("Elija como máximo 366 días: del ") && long.body.contains(" a este último día hay 1055 días"))
            let typo = try await admin.get("/c/north/admin?from=2026-13-01&to=", headers: spanish)
            #expect(typo.body.contains("Escriba el primer día como una fecha, AAAA-MM-DD (no «2026-13-01»)"), "\(typo.body)")
            #expect(!typo.body.contains("must") && typo.body.contains(#"id="from" name="from" value="2026-13-01" aria-invalid="true""#))
            // A download has no form: its refusal says the same in the page's words.
            let csv = try await admin.get("/c/north/admin/report.csv?from=2026-11-20&to=2026-10-01", headers: spanish)
            #expect(csv.status == 422 && csv.body.contains("Elija un último día igual o posterior al primero"), "\(csv.body)")
            let shown = try await admin.get("/c/north/admin?from=2026-10-01&to=2026-11-20")
            #expect(shown.status == 200 && shown.body.contains(#"id="from" name="from" value="2026-10-01">"#))
            #expect(shown.body.contains("id=\"compliance\"") && !shown.body.contains("aria-invalid"))
        }
    }

    /// A problem a person meets on a page without a form to show it by (a body too large, a
    /// form that cannot be read) is said in the page's words and language, heading and all.
    @Test func aPageSaysTheProblemsNoFormShowsInItsOwnWords() async throws {
        let (server, _) = try await Self.setUp()
        try await server.run { api in
            let member = WebClient(api.client)
            try await member.demoSignIn(campus: "north", email: "ada@example.edu")
            let csrf = try #require(try await member.get("/c/north/settings").csrf)
            let spanish: HTTPFields = [.acceptLanguage: "es"]
            let huge = try await member.post(
                "/c/north/settings", form: [("csrf", csrf), ("reminderTime", String(repeating: "9", count: 100_000))], headers: spanish)
            #expect(huge.status == 413 && huge.body.contains("<h1>Demasiado grande</h1>"), "\(huge.status) \(huge.body)")
            // The page's own limit, in the page's language: the settings form takes 64 KB.
            #expect(
                huge.body.contains("Lo enviado es más grande de lo que esta página acepta (64 KB como máximo)")
                    && !huge.body.contains("KiB"))
            let broken = try await member.send(
                method: .post, "/c/north/settings", headers: [.contentType: "application/x-www-form-urlencoded", .acceptLanguage: "es"],
                bytes: ByteBuffer(string: "csrf=%FF%FE"))
            #expect(broken.status == 400 && broken.body.contains("<h1>Eso no se puede hacer</h1>"), "\(broken.status) \(broken.body)")
            #expect(broken.body.contains("No se pudo leer el formulario: recargue la página y envíelo de nuevo."))
            let english = try await member.send(
                method: .post, "/c/north/settings", headers: [.contentType: "application/x-www-form-urlencoded"],
                bytes: ByteBuffer(string: "csrf=%FF%FE"))
            #expect(english.body.contains("<h1>That cannot be done</h1>") && english.body.contains("The form could not be read"))
            // A photo of a card larger than the records page takes (12 MB): its limit named.
            let photo = try await member.send(
                method: .post, "/c/north/records/vaccinations",
                headers: [.contentType: "multipart/form-data; boundary=b"], bytes: ByteBuffer(repeating: 0x41, count: (12 << 20) + 1))
            #expect(photo.status == 413 && photo.body.contains("larger than this page takes (12 MB at most)"), "\(photo.body.suffix(400))")
        }
    }

    @Test func everyViewOfTheFollowUpsPageIsAudited() async throws {
        let (server, campus) = try await Self.setUp()
        try await server.run { api in
            let officer = WebClient(api.client)
            try await officer.demoSignIn(campus: "north", email: "hana@example.edu")
            let before =
                try await server.pool.query(
                    "SELECT count(*) AS n FROM audit_log WHERE campus_id = \(campus.id) AND action = 'follow-ups.read'",
                    campus: campus.id.rawValue
                ).first?.decode("n", as: Int.self) ?? 0
            #expect(try await officer.get("/c/north/admin/follow-ups").status == 200)
            #expect(try await officer.get("/c/north/admin/follow-ups").status == 200)
            let after =
                try await server.pool.query(
                    "SELECT count(*) AS n FROM audit_log WHERE campus_id = \(campus.id) AND action = 'follow-ups.read'",
                    campus: campus.id.rawValue
                ).first?.decode("n", as: Int.self) ?? 0
            #expect(after == before + 2)
        }
    }

    @Test func theScannerFormSaysWhetherABadgeIsGenuine() async throws {
        let (server, campus) = try await Self.setUp()
        try await server.run { api in
            let screener = WebClient(api.client)
            try await screener.demoSignIn(campus: "north", email: "sam@example.edu")
            let (user, _) = try await server.user("zoe@example.edu", at: campus)
            let badge = try await server.services.badges.today(campus: campus, user: user.id, now: Date())
            let page = try await screener.get("/c/north/scan")
            let csrf = try #require(page.csrf)
            let genuine = try await screener.post("/c/north/scan", form: [("csrf", csrf), ("token", badge.token)])
            #expect(genuine.body.contains("Genuine, today"))
            var forgedToken = badge.token
            forgedToken.removeLast(2)
            forgedToken += forgedToken.hasSuffix("AA") ? "BB" : "AA"
            let forged = try await screener.post("/c/north/scan", form: [("csrf", csrf), ("token", forgedToken)])
            #expect(forged.body.contains("Not valid: forged"))
            let junk = try await screener.post("/c/north/scan", form: [("csrf", csrf), ("token", "hello")])
            #expect(junk.body.contains("Not valid: not a badge code"))
            #expect(forged.body.contains("it was altered or forged."), "why, under the verdict")
            // A Spanish screener reads the verdict and why in Spanish, none of it in English.
            screener.cookies.withLock { $0["attest-lang"] = "es" }
            let spanish = try await screener.post("/c/north/scan", form: [("csrf", csrf), ("token", forgedToken)])
            #expect(spanish.body.contains("No válida: falsificada") && spanish.body.contains("se modificó o es falsa."), "\(spanish.body)")
            #expect(!spanish.body.contains("altered or forged"))
        }
    }

    @Test func theHomePageShowsTheRegionsRiskInOneLineAndTheStatsPageItsTrendBesideTheCampus() async throws {
        let (server, campus) = try await Self.setUp()
        let owner = TestDatabase.client(database: server.database, role: nil)
        let dataset = try CommunityDataset.parseCumulativeCSV(
            Data(CommunityDataTests.cumulativeCSV(end: LocalDate("2026-11-20")!).utf8), population: Data(CommunityDataTests.population.utf8)
        )
        _ = try await CommunityStore(client: owner).replace(dataset: "testland", with: dataset)
        await owner.shutdown()
        try await server.run { api in
            let browser = WebClient(api.client)
            try await browser.demoSignIn(campus: "north", email: "ana@example.edu")
            // Before the campus chooses community data: nothing of it on either page.
            #expect(!(try await browser.get("/c/north/").body.contains("class=\"community\"")))
            #expect(!(try await browser.get("/c/north/stats").body.contains("id=\"community-heading\"")))

            try await CampusPluginStore(client: server.pool).enable(
                campus: campus, kind: .communityData, id: "imported",
                settings: .object([
                    "dataset": .string("testland"),
                    "guidance": .object(["high": .object(["en": .string("Wear a mask indoors."), "es": .string("Use mascarilla.")])]),
                ]),
                actor: "test")
            _ = try await CampusStore(client: server.pool).set(slug: "north", key: "region", value: "99001", actor: "test")
            try await Task.sleep(for: .milliseconds(5_100))  // the campus and plugin caches (5 s)

            let home = try await browser.get("/c/north/")
            #expect(home.body.contains("Community risk in Alpha, Testland: high, rising (as of "), "\(home.body)")
            #expect(home.body.contains("Wear a mask indoors."))
            let stats = try await browser.get("/c/north/stats")
            #expect(stats.body.contains("<h2 id=\"community-heading\">New cases in Alpha, Testland</h2>"))
            #expect(stats.body.contains("Risk: high. Trend: rising."))
            #expect(stats.body.contains("aria-labelledby=\"community-title community-desc\"") && stats.body.contains("<polyline"))
            #expect(stats.body.contains("<td>2026-11-20</td>") || stats.body.contains("2026-11-20</th>"))
            #expect(stats.body.contains("Source: imported."))
            let spanish = WebClient(api.client, acceptLanguage: "es")
            try await spanish.demoSignIn(campus: "north", email: "ada@example.edu")
            let hogar = try await spanish.get("/c/north/")
            #expect(
                hogar.body.contains("Riesgo en la comunidad de Alpha, Testland: alto, en aumento") && hogar.body.contains("Use mascarilla.")
            )
        }
    }

    @Test func pagesSpeakSpanishWhenAskedAndThePickerRemembersIt() async throws {
        let (server, _) = try await Self.setUp()
        try await server.run { api in
            let browser = WebClient(api.client, acceptLanguage: "es-MX,es;q=0.9,en;q=0.5")
            try await browser.demoSignIn(campus: "north", email: "ana@example.edu")
            let form = try await browser.get("/c/north/")
            #expect(
                form.body.contains("<html lang=\"es\">") && form.body.contains("¿Fiebre?") && form.body.contains("Enviar mis respuestas"))
            let switched = try await browser.get("/c/north/language?lang=en&next=%2Fc%2Fnorth%2Fhistory")
            #expect(switched.location == "/c/north/history")
            #expect(try await browser.get("/c/north/").body.contains("<html lang=\"en\">"))
            let offsite = try await browser.get("/c/north/language?lang=es&next=https%3A%2F%2Fevil.example%2F")
            #expect(offsite.location == "/c/north/")
        }
    }

    @Test func theBrowserSignInRunsTheCodeFlowWithPKCEStateAndNonce() async throws {
        let (server, campus) = try await Self.setUp(web: WebConfiguration(publicURL: URL(string: "http://127.0.0.1:9")))
        let provider = try await TestIdentityProvider.start()
        defer { provider.stop() }
        try await provider.addES256Key(kid: "web")
        try await OIDCIssuerStore(client: server.pool).add(
            campus: campus,
            OIDCIssuer(
                issuer: provider.issuer, audiences: [], jwksURL: provider.jwksURL, label: "Test IdP", clientID: provider.webClientID),
            actor: "test", clientSecret: provider.webClientSecret, kek: TestServer.kek)
        try await server.run { api in
            let browser = WebClient(api.client)
            let signIn = try await browser.get("/c/north/signin?next=%2Fc%2Fnorth%2Fhistory")
            #expect(signIn.body.contains("Sign in with Test IdP"))
            let start = try await browser.get(
                "/c/north/signin/start?issuer=\(WebClient.escape(provider.issuer))&next=%2Fc%2Fnorth%2Fhistory")
            #expect(start.status == 303)
            let location = try #require(start.location.flatMap { URLComponents(string: $0) })
            #expect(location.path == "/authorize" && location.port == URLComponents(string: provider.issuer)?.port)
            var query: [String: String] = [:]
            for item in location.queryItems ?? [] { query[item.name] = item.value }
            #expect(query["code_challenge_method"] == "S256" && query["code_challenge"]?.count == 43)
            #expect(query["redirect_uri"] == "http://127.0.0.1:9/c/north/signin/callback")
            #expect(query["scope"] == "openid email profile" && query["client_id"] == provider.webClientID)
            let pending = try #require(start.setCookies.first { $0.hasPrefix("attest-signin-north=") })
            #expect(pending.contains("Path=/c/north/signin") && pending.contains("HttpOnly") && pending.contains("Max-Age=600"))
            #expect(!pending.contains(query["code_challenge"] ?? "-"), "the cookie holds the verifier, never sent to the provider")

            // The provider sends the browser back with a code and the state.
            query["login_hint"] = "ana@example.edu"
            let back = try #require(provider.authorize(query).headers[.location].flatMap { URLComponents(string: $0) })
            let callback = "/c/north/signin/callback?" + (back.percentEncodedQuery ?? "")
            let done = try await browser.get(callback)
            #expect(done.status == 303)
            #expect(done.location == "/c/north/history")
            #expect(browser.cookie("attest-north") != nil && browser.cookie("attest-signin-north") == nil)
            #expect(try await browser.get("/c/north/history").status == 200)
            #expect(provider.tokenRefusals.withLock { $0 }.isEmpty)

            // Coming back again with the same code is refused (no sign-in in progress).
            let replay = try await WebClient(api.client).get(callback)
            #expect(replay.status == 401)
            #expect(replay.body.contains("Sign-in did not work"))

            // Another sign-in's state is refused before the code is spent.
            let other = WebClient(api.client)
            let second = try #require(
                try await other.get("/c/north/signin/start?issuer=\(WebClient.escape(provider.issuer))").location.flatMap {
                    URLComponents(string: $0)
                })
            var secondQuery: [String: String] = ["login_hint": "ana@example.edu"]
            for item in second.queryItems ?? [] { secondQuery[item.name] = item.value }
            let code = try #require(
                provider.authorize(secondQuery).headers[.location].flatMap {
                    URLComponents(string: $0)?.queryItems?.first { $0.name == "code" }?.value
                })
            let wrongState = try await other.get("/c/north/signin/callback?code=\(code)&state=\(String(repeating: "A", count: 43))")
            #expect(wrongState.status == 401)
            #expect(wrongState.body.contains("another sign-in"))
            #expect(other.cookie("attest-north") == nil)
            #expect(provider.grants.withLock { $0[code] } != nil, "the code was never redeemed")

            // The provider's own refusal shows as such.
            let denied = try await WebClient(api.client).get("/c/north/signin/callback?error=access_denied&state=x")
            #expect(denied.status == 401 && denied.body.contains("access_denied"))
        }
    }
}
