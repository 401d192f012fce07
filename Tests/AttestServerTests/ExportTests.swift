import AttestAPI
import AttestFoundation
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

@Suite("Exports of the journal and episodes")
struct ExportTests {
    static let path = "/v1/campuses/{campus}/me/export"

    /// Text of a PDF, read back with poppler's pdftotext.
    static func text(ofPDF data: Data) async throws -> String {
        let file = FileManager.default.temporaryDirectory.appending(path: "export-\(UUID()).pdf")
        try data.write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/pdftotext") else {
            throw TestEnvironmentError("pdftotext is missing: scripts/install-browser-deps installs Debian's poppler-utils")
        }
        let result = try await ChildProcess.run(["/usr/bin/pdftotext", "-layout", file.path, "-"])
        #expect(result.status == 0, "pdftotext: \(result.stderr)")
        return result.stdout
    }

    /// A member with three entries (one outside the range, one long), a recording, and two episodes.
    static func setUp(rateLimits: RateLimits = RateLimits()) async throws -> (TestServer, Campus, User, String, TestClock) {
        let clock = try TestClock("2026-11-20T20:00:00Z")
        let server = try await TestServer.make(
            clock: clock.read,
            configuration: ServerConfiguration(rateLimits: rateLimits, outbound: .init(allowedHosts: ["127.0.0.1"])))
        let north = try await server.campus("north")
        let (author, member) = try await server.user("ana@example.edu", at: north)
        let journal = server.services.journal
        let words = (0..<1_400).map { ["fever", "rest", "water", "tea", "sleep", "walk"][$0 % 6] }.joined(separator: " ")
        for (date, title, text) in [
            ("2026-11-18", "Café visit, then a headache", "Espresso at 3 pm (a double). Then the pain began; “better” by 6."),
            ("2026-11-19", "=HYPERLINK(\"x\")", "Japanese notes: 頭痛"),
            ("2026-11-19", "A long day", words),
            ("2026-10-01", "Outside the range", "Not exported"),
        ] {
            clock.advance(by: 1)
            _ = try await journal.create(
                campus: north.id, user: author.id, JournalDraft(date: LocalDate(date)!, title: title, text: text, tags: [.symptom]),
                at: clock.read())
        }
        let first = try await journal.list(campus: north.id, user: author.id, after: nil, limit: 100).entries.first {
            $0.title.hasPrefix("Café")
        }
        try await journal.putAudio(
            campus: north.id, user: author.id, id: try #require(first).id, type: .ogg, bytes: JournalTests.recording(.ogg, count: 4_000))
        for (start, stop, temperature) in [("2026-11-18T20:00:00Z", "2026-11-18T21:30:00Z", 21.5), ("2026-11-19T12:00:00Z", nil, nil)]
            as [(String, String?, Double?)]
        {
            _ = try await server.services.episodes.start(
                campus: north.id, user: author.id,
                EpisodeDraft(
                    kind: "headache", severity: 7, notes: "behind the eyes", startedAt: try Date(start, strategy: .iso8601),
                    stoppedAt: try stop.map { try Date($0, strategy: .iso8601) }),
                context: temperature.map { EnvironmentFactors(temperature: $0, humidity: 40) }, baseline: nil, now: clock.read())
        }
        return (server, north, author, member, clock)
    }

    @Test func thePDFReadsBackWithEveryEntryAndEpisodeOfTheRangeAndPageNumbers() async throws {
        let (server, north, _, member, _) = try await Self.setUp()
        try await server.run { api in
            let response = try await api.client.execute(
                uri: "/v1/campuses/north/me/export?from=2026-11-01&to=2026-11-20&format=pdf", method: HTTPRequest.Method.get,
                headers: [.authorization: "Bearer \(member)"], body: nil)
            #expect(response.status == .ok && response.headers[.contentType] == "application/pdf")
            #expect(response.headers[.contentDisposition] == "attachment; filename=\"health-journal-2026-11-01-2026-11-20.pdf\"")
            #expect(response.headers[.cacheControl] == "private, no-store")
            let pdf = Data(response.body.readableBytesView)
            #expect(pdf.starts(with: Data("%PDF-1.4".utf8)))
            let text = try await Self.text(ofPDF: pdf)
            for expected in [
                "Health journal and episodes", "ana@example.edu · North", "From 2026-11-01 to 2026-11-20", "Journal: 3 entries",
                "2026-11-18 — Café visit, then a headache", "Espresso at 3 pm (a double). Then the pain began; “better” by 6.",
                "Recording: audio/ogg, 3 KB (not in this document)", "Japanese notes: ??",
                "Episodes: 2 · total 1 h 30 min · average 1 h 30 min",
                "headache", "2026-11-18 15:00", "2026-11-18 16:30", "1 h 30 min", "7/10", "21.5 °C, 40 %", "behind the eyes", "open",
                "Page 1 of ",
                "Page 2 of ",
            ] {
                #expect(text.contains(expected), "the PDF lacks \(expected)")
            }
            #expect(!text.contains("Outside the range"))
            // The long entry wraps: every word is there, no line runs past the page.
            #expect(text.components(separatedBy: "water").count - 1 == 1_400 / 6 + (1_400 % 6 > 2 ? 1 : 0))
        }
        _ = north
    }

    /// The PDF speaks the reader's language (Accept-Language here; the page's language on the
    /// sharing page): its words, the standard kinds' names, its title; the member's own words
    /// and the CSV's columns stay as they are. Every header cell fits its column.
    @Test func thePDFIsWrittenInTheReadersLanguage() async throws {
        let (server, _, _, member, _) = try await Self.setUp()
        try await server.run { api in
            let response = try await api.client.execute(
                uri: "/v1/campuses/north/me/export?from=2026-11-01&to=2026-11-20&format=pdf", method: HTTPRequest.Method.get,
                headers: [.authorization: "Bearer \(member)", .acceptLanguage: "es-MX,es;q=0.9,en;q=0.5"], body: nil)
            #expect(response.status == .ok && response.headers[.contentType] == "application/pdf")
            let pdf = Data(response.body.readableBytesView)
            let text = try await Self.text(ofPDF: pdf)
            for expected in [
                "Diario de salud y episodios", "ana@example.edu · North", "Del 2026-11-01 al 2026-11-20 · hecho el 2026-11-20 15:00",
                "Diario: 3 entradas", "2026-11-18 — Café visit, then a headache", "Etiquetas: symptom",
                "Grabación: audio/ogg, 3 KB (no incluida en este documento)",
                "Episodios: 2 · total 1 h 30 min · promedio 1 h 30 min", "Tipo", "Inicio", "Fin", "Duración", "Intensidad", "Temperatura",
                "Dolor de cabeza", "7/10", "Tiempo al inicio: 21.5 °C, 40 %", "behind the eyes", "abierto",
            ] {
                #expect(text.contains(expected), "the PDF lacks \(expected)")
            }
            #expect(!text.contains("Health journal") && !text.contains("Episodes:") && !text.contains("…"), "\(text)")
            // The document's title (its Info dictionary), as poppler reads it.
            let file = FileManager.default.temporaryDirectory.appending(path: "export-\(UUID().uuidString).pdf")
            try pdf.write(to: file)
            defer { try? FileManager.default.removeItem(at: file) }
            let info = try await ChildProcess.run(["/usr/bin/pdfinfo", file.path])
            #expect(info.stdout.contains("Diario de salud y episodios, del 2026-11-01 al 2026-11-20"), "\(info.stdout)")
            // Nothing else changes with the language: the CSV's columns are software's.
            let csv = try await api.client.execute(
                uri: "/v1/campuses/north/me/export?from=2026-11-01&to=2026-11-20&format=csv", method: HTTPRequest.Method.get,
                headers: [.authorization: "Bearer \(member)", .acceptLanguage: "es"], body: nil)
            #expect(try CSV.records(String(buffer: csv.body)).first?.fields == MemberExport.csvColumns)
        }
    }

    @Test func csvAndJSONCarryEverythingAndTheAuditLogOnlyThatAnExportHappened() async throws {
        let (server, north, _, member, _) = try await Self.setUp()
        try await server.run { api in
            let csv = try await api.client.execute(
                uri: "/v1/campuses/north/me/export?from=2026-11-01&to=2026-11-20&format=csv", method: HTTPRequest.Method.get,
                headers: [.authorization: "Bearer \(member)"], body: nil)
            #expect(csv.status == .ok && csv.headers[.contentType] == "text/csv; charset=utf-8")
            let records = try CSV.records(String(buffer: csv.body))
            #expect(records.first?.fields == MemberExport.csvColumns)
            #expect(records.dropFirst().filter { $0.fields.first == "journal" }.count == 3)
            #expect(records.contains { $0.fields.count > 2 && $0.fields[2] == "'=HYPERLINK(\"x\")" })  // no formula for a spreadsheet to run
            #expect(records.contains { $0.fields.count > 3 && $0.fields[3] == "Japanese notes: 頭痛" })
            let episode = try #require(records.first { $0.fields.first == "episode" && $0.fields[9] != "" })
            #expect(
                episode.fields[6] == "headache" && episode.fields[8] == "2026-11-18 15:00" && episode.fields[10] == "90"
                    && episode.fields[13] == "21.5")

            let json = try await api.send(
                .get, "/v1/campuses/north/me/export?from=2026-11-01&to=2026-11-20&format=json", template: Self.path, token: member)
            #expect((json.json["journal"] as? [[String: Any]])?.count == 3 && (json.json["episodes"] as? [[String: Any]])?.count == 2)
            let audio = (json.json["journal"] as? [[String: Any]])?.compactMap { $0["audio"] as? [String: Any] }.first
            #expect(audio?["type"] as? String == "audio/ogg" && audio?["size"] as? Int == 4_004)

            for (query, field) in [
                ("format=docx", "format"), ("from=2026-11-20&to=2026-11-01", "from"), ("from=2020-01-01&to=2026-11-20", "from"),
                ("to=soon", "to"),
            ] {
                let bad = try await api.send(.get, "/v1/campuses/north/me/export?\(query)", template: Self.path, token: member)
                #expect(bad.status == 422 && bad.problem.fields == [field], "\(query)")
            }
        }
        let audit = try await AuditLog(client: TestDatabase.client(database: server.database)).entries(campus: north.id)
        let exports = audit.filter { $0.action == "member.export" }
        #expect(exports.count == 2)
        let formats: [String] = exports.map { entry in entry.details["format"] ?? "" }.sorted()
        #expect(formats == ["csv", "json"])
        for entry in exports {
            #expect(entry.target == "" && entry.details.count == 1 && entry.actor == "user:ana@example.edu")
        }
    }
}
