import AttestAPI
import AttestPlugins
import AttestPluginsTesting
import AttestPostgres
import AttestServer
import AttestTestSupport
import AttestWeb
import Foundation
import HTTPTypes
import Identity
import Journal
import NIOCore
import Tenancy
import Testing

@Suite("Links shared with a clinician")
struct ShareTests {
    static let mine = "/v1/campuses/{campus}/me/shares"
    static let one = "/v1/campuses/{campus}/me/shares/{id}"
    static let shared = "/v1/campuses/{campus}/shared/{token}"

    @Test func aLinkOpensItsRangeWithoutSignInIsLoggedAndStopsWhenRevokedOrExpired() async throws {
        let (server, north, author, member, clock) = try await ExportTests.setUp()
        let south = try await server.campus("south")
        let (_, admin) = try await server.user("ada@example.edu", at: north, roles: [.admin, .healthOfficer])
        _ = south
        try await server.run { api in
            let made = try await api.send(
                .post, "/v1/campuses/north/me/shares", template: Self.mine, token: member,
                json: #"{"expiresIn": 86400, "from": "2026-11-18", "to": "2026-11-18"}"#)
            #expect(made.status == 201, "\(made.body)")
            let url = try #require(made.json["url"] as? String)
            let token = String(url.split(separator: "/").last ?? "")
            // The link names the campus and a random token: nothing of the member.
            #expect(url.hasPrefix("/v1/campuses/north/shared/") && token.count == 43)
            for personal in ["ana", author.id.rawValue.uuidString.lowercased(), "2026-11-18"] {
                #expect(!url.lowercased().contains(personal))
            }
            #expect(made.json["expiresAt"] as? String == "2026-11-21T20:00:04Z")

            // A GET (a chat's link preview, a mail scanner) shows whose record it is and opens nothing.
            for _ in 0..<3 {
                let page = try await api.send(.get, url, template: Self.shared)
                #expect(page.status == 200 && page.headers[.contentType] == "text/html; charset=utf-8")
                #expect(page.body.contains("Shared by <strong>ana@example.edu</strong> of North, from 2026-11-18 to 2026-11-18."))
                #expect(page.body.contains(#"<form method="post">"#) && page.body.contains(#"value="csv">Open as CSV"#))
                #expect(
                    page.body.contains("may be opened 20 more times")
                        && page.headers[.contentSecurityPolicy]?.contains("default-src 'none'") == true)
            }

            // Opened with no session by the page's POST: the range only, as PDF (inline) or JSON.
            let pdf = try await api.client.execute(uri: url, method: HTTPRequest.Method.post, headers: [:], body: nil)
            #expect(
                pdf.status == .ok && pdf.headers[.contentType] == "application/pdf"
                    && pdf.headers[.contentDisposition]?.hasPrefix("inline;") == true)
            let text = try await ExportTests.text(ofPDF: Data(pdf.body.readableBytesView))
            #expect(
                text.contains("Café visit, then a headache") && !text.contains("A long day")
                    && text.contains("From 2026-11-18 to 2026-11-18"))
            clock.advance(by: 1)
            let json = try await api.send(
                .post, url, template: Self.shared, json: "format=json", contentType: "application/x-www-form-urlencoded")
            #expect((json.json["journal"] as? [[String: Any]])?.compactMap { $0["title"] as? String } == ["Café visit, then a headache"])
            #expect((json.json["episodes"] as? [[String: Any]])?.count == 1)

            // Anything else is refused alike: a changed token, another campus, a made-up one.
            let changed = String(token.dropLast()) + (token.hasSuffix("A") ? "B" : "A")
            for uri in ["/v1/campuses/north/shared/\(changed)", "/v1/campuses/south/shared/\(token)", "/v1/campuses/north/shared/nothing"] {
                for method in [HTTPRequest.Method.get, .post] {
                    let refused = try await api.send(method, uri, template: Self.shared)
                    #expect(refused.status == 404 && refused.problem.detail.contains("does not open anything"), "\(method) \(uri)")
                }
            }

            // The member sees every opening; nobody else sees the links.
            let listed = try await api.send(.get, "/v1/campuses/north/me/shares", template: Self.mine, token: member)
            let item = try #require((listed.json["items"] as? [[String: Any]])?.first)
            #expect(
                item["status"] as? String == "active"
                    && (item["openings"] as? [[String: Any]])?.compactMap { $0["format"] as? String } == ["json", "pdf"])
            let theirs = try await api.send(.get, "/v1/campuses/north/me/shares", template: Self.mine, token: admin)
            #expect((theirs.json["items"] as? [[String: Any]])?.isEmpty == true)
            let id = try #require(made.json["id"] as? String)
            #expect((try await api.send(.delete, "/v1/campuses/north/me/shares/\(id)", template: Self.one, token: admin)).status == 404)

            // Revoked: closed at once.
            #expect((try await api.send(.delete, "/v1/campuses/north/me/shares/\(id)", template: Self.one, token: member)).status == 204)
            #expect((try await api.send(.get, url, template: Self.shared)).status == 404)
            #expect((try await api.send(.post, url, template: Self.shared)).status == 404)
            #expect((try await api.send(.delete, "/v1/campuses/north/me/shares/\(id)", template: Self.one, token: member)).status == 404)

            // Expired: an hour's link after an hour.
            clock.advance(by: 1)
            let hour = try await api.send(
                .post, "/v1/campuses/north/me/shares", template: Self.mine, token: member,
                json: #"{"expiresIn": 3600, "from": "2026-11-01", "to": "2026-11-20"}"#)
            let hourURL = try #require(hour.json["url"] as? String)
            #expect((try await api.send(.post, hourURL + "?format=json", template: Self.shared)).status == 200)
            clock.advance(by: 3_601)
            #expect((try await api.send(.post, hourURL + "?format=json", template: Self.shared)).status == 404)
            let statuses = try await api.send(.get, "/v1/campuses/north/me/shares", template: Self.mine, token: member)
            #expect((statuses.json["items"] as? [[String: Any]])?.compactMap { $0["status"] as? String } == ["expired", "revoked"])

            for (body, fields) in [
                (#"{"expiresIn": 60, "from": "2026-11-01", "to": "2026-11-20"}"#, ["expiresIn"]),
                (#"{"expiresIn": 2592001, "from": "2026-11-01", "to": "2026-11-20"}"#, ["expiresIn"]),
                (#"{"expiresIn": 3600, "from": "2026-11-20", "to": "2026-11-01"}"#, ["from"]),
                (#"{"expiresIn": 3600.5, "to": "2026-11-01", "who": "Dr. X"}"#, ["expiresIn", "from", "who"]),
            ] {
                let refused = try await api.send(.post, "/v1/campuses/north/me/shares", template: Self.mine, token: member, json: body)
                #expect(refused.status == 422 && refused.problem.fields.sorted() == fields, "\(body): \(refused.body)")
            }
        }
        // The audit log: that two shares were made, nothing of their range or openings.
        let audit = try await AuditLog(client: TestDatabase.client(database: server.database)).entries(campus: north.id)
        #expect(audit.filter { $0.action == "member.share" }.count == 2)
        #expect(audit.filter { $0.action == "member.share" }.allSatisfy { $0.details.isEmpty && $0.target == "" })
        #expect(!audit.contains { $0.action.contains("open") })
    }

    /// A clinician's browser gets the link's page in its language, and every refusal as a page
    /// saying what to do (an unknown campus's too); a script keeps problem+json.
    @Test func aClinicianSeesTheLinkAndItsRefusalsInTheirLanguage() async throws {
        var limits = RateLimits()
        limits.unknownTokensPerAddress = .init(burst: 8, perMinute: 0)
        let (server, _, _, member, _) = try await ExportTests.setUp(rateLimits: limits)
        let browser: HTTPFields = [.accept: "text/html,application/xhtml+xml,*/*;q=0.8", .acceptLanguage: "en-GB,en;q=0.9"]
        let spanish: HTTPFields = [.accept: "text/html", .acceptLanguage: "es-MX,es;q=0.9,en;q=0.4"]
        try await server.run { api in
            let made = try await api.send(
                .post, "/v1/campuses/north/me/shares", template: Self.mine, token: member,
                json: #"{"expiresIn": 86400, "from": "2026-11-18", "to": "2026-11-18"}"#)
            let url = try #require(made.json["url"] as? String)
            let page = try await api.send(.get, url, template: Self.shared, headers: spanish)
            #expect(
                page.status == 200 && page.body.contains(#"<html lang="es">"#)
                    && page.body.contains("<title>Diario de salud compartido por ana@example.edu</title>")
                    && page.body.contains("Compartido por <strong>ana@example.edu</strong> de North, del 2026-11-18 al 2026-11-18.")
                    && page.body.contains("puede abrirse 20 veces más") && page.body.contains(#"value="csv">Abrir como CSV"#),
                "\(page.body)")
            let english = try await api.send(.get, url + "?format=json", template: Self.shared, headers: browser)
            #expect(
                english.body.contains(#"<html lang="en">"#)
                    && english.body.contains(#"<p><button type="submit" name="format" value="json">Open as JSON"#))

            // Opened, the PDF is in the clinician's language too.
            let opened = try await api.client.execute(
                uri: url, method: HTTPRequest.Method.post, headers: [.acceptLanguage: "es-MX,es;q=0.9"], body: nil)
            #expect(opened.status == .ok && opened.headers[.contentType] == "application/pdf")
            let text = try await ExportTests.text(ofPDF: Data(opened.body.readableBytesView))
            #expect(text.contains("Diario de salud y episodios") && text.contains("Del 2026-11-18 al 2026-11-18"), "\(text)")

            // Refusals a browser gets as pages, each with its status, in its language.
            let token = String(url.split(separator: "/").last ?? "")
            let changed = "/v1/campuses/north/shared/\(token.dropLast(2))"
            for (method, uri, headers, status, words) in [
                (HTTPRequest.Method.get, changed, browser, 404, "This link does not open anything"),
                (.post, changed, spanish, 404, "Pida un enlace nuevo a la persona que lo compartió"),
                (.get, "/v1/campuses/nowhere/shared/\(token)", browser, 404, "Ask the person who shared it for a new link"),
                (.get, url + "?format=xls", browser, 422, "it opens as PDF, CSV or JSON"),
                (.post, url + "?format=doc", spanish, 422, "Este enlace se modificó"),
            ] {
                let refused = try await api.send(method, uri, template: Self.shared, headers: headers)
                #expect(
                    refused.status == status && refused.headers[.contentType] == "text/html; charset=utf-8"
                        && refused.body.contains(words) && refused.headers[.contentSecurityPolicy]?.contains("default-src 'none'") == true,
                    "\(method) \(uri): \(refused.body)")
                #expect(refused.body.contains("· North</title>") == uri.contains("/north/"), "the campus named when it is known")
                // A script (no text/html) keeps the problem.
                let script = try await api.send(method, uri, template: Self.shared, headers: [.accept: "application/json"])
                #expect(script.status == status && script.headers[.contentType] == "application/problem+json")
            }
            // Too many unknown links from one address: the page says to wait, with Retry-After.
            var slowed: APIClient.Reply?
            for _ in 0..<8 where slowed == nil {
                let reply = try await api.send(.get, changed, template: Self.shared, headers: browser)
                if reply.status == 429 { slowed = reply }
            }
            #expect(
                slowed?.body.contains("<h1>Too many tries</h1>") == true && slowed?.headers[.retryAfter] != nil
                    && slowed?.headers[.contentType] == "text/html; charset=utf-8")
        }
    }

    /// A link opens at most `maxOpenings` times; then a 429 naming the limit, and nothing more
    /// is recorded. Describing it costs no opening.
    @Test func aLinkOpensAsOftenAsTheLimitAndNoMore() async throws {
        let (server, _, _, member, _) = try await ExportTests.setUp(
            rateLimits: RateLimits(exportsPerMember: .init(burst: 100, perMinute: 0)))
        try await server.run { api in
            let made = try await api.send(
                .post, "/v1/campuses/north/me/shares", template: Self.mine, token: member,
                json: #"{"expiresIn": 86400, "from": "2026-11-18", "to": "2026-11-19"}"#)
            let url = try #require(made.json["url"] as? String)
            for index in 0..<JournalShareStore.maxOpenings {
                #expect(try await api.send(.post, url + "?format=json", template: Self.shared).status == 200, "opening \(index + 1)")
            }
            #expect(try await api.send(.get, url, template: Self.shared).body.contains("may be opened 0 more times"))
            let refused = try await api.send(.post, url + "?format=csv", template: Self.shared)
            #expect(
                refused.status == 429 && refused.problem.type.hasSuffix("/link-openings-exhausted")
                    && refused.problem.detail.contains("at most 20 times"))
            let page = try await api.send(.post, url, template: Self.shared, headers: [.accept: "text/html", .acceptLanguage: "es"])
            #expect(
                page.status == 429 && page.body.contains("<h1>Este enlace ya se abrió todas las veces permitidas</h1>")
                    && page.body.contains("como máximo 20 veces"), "\(page.body)")
            let listed = try await api.send(.get, "/v1/campuses/north/me/shares", template: Self.mine, token: member)
            #expect(((listed.json["items"] as? [[String: Any]])?.first?["openings"] as? [Any])?.count == JournalShareStore.maxOpenings)
            let unknownField = try await api.send(
                .post, url, template: Self.shared, json: "format=pdf&who=me", contentType: "application/x-www-form-urlencoded")
            #expect(unknownField.status == 422 && unknownField.problem.fields == ["who"])
        }
    }
}
