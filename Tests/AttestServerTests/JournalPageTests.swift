import AttestPlugins
import AttestPluginsTesting
import AttestPostgres
import AttestTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import Identity
import Journal
import Synchronization
import Tenancy
import Testing

@testable import AttestAPI
@testable import AttestServer
@testable import AttestWeb

@Suite("The journal, episode and sharing pages over HTTP")
struct JournalPageTests {
    /// A server with the demo sign-in at 09:25 in New York, one campus and its people.
    static func setUp(clock: TestClock) async throws -> (TestServer, Campus) {
        var server = try await TestServer.make(clock: clock.read)
        server.configuration.web = WebConfiguration(demoSignIn: true)
        let campus = try await server.campus("north")
        for (email, roles) in [
            ("ana@example.edu", [Role]()), ("bob@example.edu", []), ("ada@example.edu", [.admin]), ("hana@example.edu", [.healthOfficer]),
        ] {
            _ = try await server.user(email, at: campus, roles: roles)
        }
        return (server, campus)
    }

    static func member(_ api: APIClient, _ email: String) async throws -> WebClient {
        let browser = WebClient(api.client)
        try await browser.demoSignIn(campus: "north", email: email)
        return browser
    }

    /// The fields of a journal form, as a browser sends them.
    static func entry(csrf: String, date: String = "2026-11-20", title: String, text: String = "", tags: [String] = []) -> [(
        String, String
    )] {
        [("csrf", csrf), ("date", date), ("title", title), ("text", text)] + tags.map { ("tag", $0) }
    }

    static func file(_ type: AudioType, named name: String, as contentType: String, count: Int = 2_000) -> (
        name: String, filename: String, type: String, bytes: Data
    ) {
        ("audio", name, contentType, JournalTests.recording(type, count: count))
    }

    /// An entry id from a redirect to its page.
    static func entryID(_ page: WebClient.Page) throws -> String {
        let location = try #require(page.location)
        return try #require(location.firstMatch(of: /\/c\/north\/journal\/([0-9a-f-]{36})\?saved=1/)?.1).description
    }

    static func entries(_ server: TestServer, _ campus: Campus, _ email: String) async throws -> [JournalEntry] {
        let user = try #require(try await UserStore(client: server.pool).find(campus: campus.id, email: email))
        return try await server.services.journal.list(campus: campus.id, user: user.id, after: nil, limit: 100).entries
    }

    @Test func thePrivatePagesNeedSignInAndShowEachMemberOnlyTheirOwn() async throws {
        let clock = try TestClock("2026-11-20T14:25:00Z")
        let (server, _) = try await Self.setUp(clock: clock)
        try await server.run { api in
            let stranger = WebClient(api.client)
            for path in [
                "/c/north/journal", "/c/north/episodes", "/c/north/sharing", "/c/north/journal/\(UUID())", "/c/north/episodes/\(UUID())",
            ] {
                let page = try await stranger.get(path)
                #expect(page.status == 303 && page.location?.hasPrefix("/c/north/signin?next=") == true, "\(path)")
            }
            let ana = try await Self.member(api, "ana@example.edu")
            let journal = try await ana.get("/c/north/journal")
            #expect(
                journal.status == 200 && journal.body.contains("enctype=\"multipart/form-data\"")
                    && journal.body.contains("No entries yet."))
            #expect(journal.body.contains("aria-current=\"page\">Journal</a>"))
            let saved = try await ana.post(
                "/c/north/journal",
                multipart: Self.entry(csrf: try #require(journal.csrf), title: "Ana's secret", text: "Felt dizzy", tags: ["symptom"]),
                files: [Self.file(.wav, named: "voice.wav", as: "audio/wav")])
            #expect(saved.status == 303, "\(saved.body)")
            let id = try Self.entryID(saved)
            let page = try await ana.get("/c/north/journal/\(id)?saved=1")
            #expect(page.status == 200 && page.body.contains("<h1>Ana&#39;s secret</h1>") && page.body.contains("Saved."))
            #expect(page.body.contains("<audio controls preload=\"metadata\" src=\"/c/north/journal/\(id)/audio\">"))
            #expect(try await ana.get("/c/north/journal").body.contains("Ana&#39;s secret"))
            // An entry without tags or text shows neither, nor their separators.
            let bare = try Self.entryID(
                try await ana.post("/c/north/journal", multipart: Self.entry(csrf: try #require(journal.csrf), title: "Bare"), files: []))
            #expect(
                try await ana.get("/c/north/journal/\(bare)").body.contains(
                    "<p class=\"hint\">Fri, Nov 20, 2026</p>\n<div class=\"entry-text\"></div>"))
            #expect(try await ana.get("/c/north/journal").body.contains("<p class=\"hint\">Fri, Nov 20, 2026</p>\n</li>"))

            // Another member, an administrator and a health officer: nothing of Ana's, anywhere.
            for email in ["bob@example.edu", "ada@example.edu", "hana@example.edu"] {
                let other = try await Self.member(api, email)
                let own = try await other.get("/c/north/journal")
                #expect(own.status == 200 && !own.body.contains("secret") && own.body.contains("No entries yet."), "\(email)")
                let refused = try await other.get("/c/north/journal/\(id)")
                #expect(refused.status == 404 && refused.body.contains("There is no such entry in your journal"), "\(email)")
                #expect(try await other.get("/c/north/journal/\(id)/audio").status == 404, "\(email)")
                let deleted = try await other.post("/c/north/journal/\(id)/delete", form: [("csrf", try #require(own.csrf))])
                #expect(deleted.status == 404, "\(email)")
            }
            #expect(try await ana.get("/c/north/journal/\(id)").status == 200, "still there")
        }
    }

    @Test func anEntryWithProblemsComesBackWithEachMessageByItsFieldAndNothingIsStored() async throws {
        let clock = try TestClock("2026-11-20T14:25:00Z")
        let (server, campus) = try await Self.setUp(clock: clock)
        try await server.run { api in
            let ana = try await Self.member(api, "ana@example.edu")
            let csrf = try #require(try await ana.get("/c/north/journal").csrf)
            let long = String(repeating: "é", count: 10_001)
            let bad = try await ana.post(
                "/c/north/journal",
                multipart: Self.entry(csrf: csrf, date: "2026-02-30", title: "  ", text: long, tags: ["symptom", "secret"]),
                files: [("audio", "notes.mp3", "audio/mpeg", Data("just some text, not a recording".utf8))])
            #expect(bad.status == 422)
            #expect(bad.body.contains("<title>Error: Your journal") && bad.body.contains("There is a problem"))
            for anchor in ["entry-date", "entry-title", "entry-text", "entry-tag-symptom", "entry-audio"] {
                #expect(bad.body.contains("<a href=\"#\(anchor)\">"), "summary links \(anchor)")
            }
            #expect(bad.body.contains("Enter a real date from 2000-01-01 to 2026-11-21."))
            #expect(bad.body.contains("Write at most 10,000 characters (this has 10,001)."))
            #expect(bad.body.contains("This file is not a recording the journal keeps"))
            #expect(
                bad.count(" autofocus") == 1
                    && bad.body.contains(
                        "id=\"entry-date\" name=\"date\" value=\"2026-02-30\" aria-invalid=\"true\" aria-describedby=\"entry-date-error\" autofocus"
                    ))
            #expect(bad.body.contains(long), "what was typed stays")

            // A recording renamed to another type is refused by its bytes.
            let renamed = try await ana.post(
                "/c/north/journal", multipart: Self.entry(csrf: csrf, title: "Renamed"),
                files: [Self.file(.wav, named: "voice.mp3", as: "audio/mpeg")])
            #expect(renamed.status == 422 && renamed.body.contains("This file is named as MP3 but holds WAV"))
            // One over 5 MB (within the form's limit) is named; beyond the limit the page says so too.
            let large = try await ana.post(
                "/c/north/journal", multipart: Self.entry(csrf: csrf, title: "Large"),
                files: [Self.file(.webm, named: "long.webm", as: "audio/webm", count: AudioType.maxSize)])
            #expect(large.status == 422 && large.body.contains("The recording is larger than 5 MB"))
            let huge = try await ana.post(
                "/c/north/journal", multipart: Self.entry(csrf: csrf, title: "Huge"),
                files: [Self.file(.webm, named: "long.webm", as: "audio/webm", count: JournalPages.uploadLimit)])
            #expect(huge.status == 413 && huge.body.contains("The recording is larger than 5 MB: record a shorter one"))
            // Without the form's token, or from another site: refused.
            let forged = try await ana.post("/c/north/journal", multipart: Self.entry(csrf: "nope", title: "Forged"), files: [])
            #expect(forged.status == 403)
            let crossSite = try await ana.post(
                "/c/north/journal", multipart: Self.entry(csrf: csrf, title: "Cross"), files: [],
                headers: [HTTPField.Name("Sec-Fetch-Site")!: "cross-site"])
            #expect(crossSite.status == 403)
            // A body that is not a well-formed form.
            let broken = try await ana.send(
                method: .post, "/c/north/journal", headers: [.contentType: "multipart/form-data; boundary=xyz"],
                bytes: ByteBuffer(string: "--xyz\r\nno headers"))
            #expect(broken.status == 400 && broken.body.contains("The form could not be read: reload the page and send it again."))
            #expect(try await Self.entries(server, campus, "ana@example.edu").isEmpty)
        }
    }

    @Test func aRecordingIsStreamedWithRangesAndAnEntryIsEditedAndDeleted() async throws {
        let clock = try TestClock("2026-11-20T14:25:00Z")
        let (server, campus) = try await Self.setUp(clock: clock)
        try await server.run { api in
            let ana = try await Self.member(api, "ana@example.edu")
            let csrf = try #require(try await ana.get("/c/north/journal").csrf)
            let webm = Self.file(.webm, named: "recording.webm", as: "audio/webm")
            let id = try Self.entryID(
                try await ana.post(
                    "/c/north/journal", multipart: Self.entry(csrf: csrf, title: "Cough", tags: ["symptom", "place"]), files: [webm]))
            let whole = try await ana.get("/c/north/journal/\(id)/audio")
            #expect(whole.status == 200 && whole.headers[.contentType] == "audio/webm" && whole.bytes == webm.bytes)
            #expect(whole.headers[.cacheControl] == "no-store")
            let part = try await ana.get("/c/north/journal/\(id)/audio", headers: [.range: "bytes=0-9"])
            #expect(
                part.status == 206 && part.bytes == webm.bytes.prefix(10) && part.headers[.contentRange] == "bytes 0-9/\(webm.bytes.count)")

            // An edit without a file keeps the recording; with one, replaces it.
            let edited = try await ana.post(
                "/c/north/journal/\(id)",
                multipart: Self.entry(csrf: csrf, date: "2026-11-19", title: "Cough, day 2", text: "Better", tags: ["treatment"]),
                files: [])
            #expect(edited.status == 303 && edited.location == "/c/north/journal/\(id)?saved=1")
            var stored = try #require(try await Self.entries(server, campus, "ana@example.edu").first)
            #expect(
                stored.title == "Cough, day 2" && stored.text == "Better" && stored.tags == [.treatment]
                    && stored.date.description == "2026-11-19")
            #expect(stored.audio?.type == .webm)
            let ogg = Self.file(.ogg, named: "take2.ogg", as: "audio/ogg", count: 3_000)
            _ = try await ana.post(
                "/c/north/journal/\(id)", multipart: Self.entry(csrf: csrf, date: "2026-11-19", title: "Cough, day 2"), files: [ogg])
            #expect(try await ana.get("/c/north/journal/\(id)/audio").bytes == ogg.bytes)
            // An edit with a problem shows the form open with the message, the entry unchanged.
            let bad = try await ana.post("/c/north/journal/\(id)", multipart: Self.entry(csrf: csrf, title: ""), files: [])
            #expect(
                bad.status == 422 && bad.body.contains("<details class=\"card\" open>")
                    && bad.body.contains("Enter a title of 1 to 200 characters."))
            stored = try #require(try await Self.entries(server, campus, "ana@example.edu").first)
            #expect(stored.title == "Cough, day 2" && stored.audio?.type == .ogg && stored.audio?.size == ogg.bytes.count)

            let unrecorded = try await ana.post("/c/north/journal/\(id)/audio/delete", form: [("csrf", csrf)])
            #expect(unrecorded.status == 303)
            #expect(try await ana.get("/c/north/journal/\(id)/audio").status == 404)
            #expect(!(try await ana.get("/c/north/journal/\(id)")).body.contains("<audio controls preload"))
            let deleted = try await ana.post("/c/north/journal/\(id)/delete", form: [("csrf", csrf)])
            #expect(deleted.status == 303 && deleted.location == "/c/north/journal?deleted=1")
            #expect(try await ana.get("/c/north/journal?deleted=1").body.contains("The entry was deleted."))
            #expect(try await ana.get("/c/north/journal/\(id)").status == 404)
            #expect(try await Self.entries(server, campus, "ana@example.edu").isEmpty)
        }
    }

    @Test func anEpisodeStartsAndStopsInOneTapAndItsTimesAreTheCampusesLocalTimes() async throws {
        let clock = try TestClock("2026-11-20T14:25:00Z")  // 09:25 in New York
        let (server, _) = try await Self.setUp(clock: clock)
        try await server.run { api in
            let ana = try await Self.member(api, "ana@example.edu")
            let token = try #require(ana.cookie("attest-north"))
            let page = try await ana.get("/c/north/episodes")
            #expect(
                page.status == 200 && page.body.contains(">Start a headache</button>") && page.body.contains(">Start a migraine</button>"))
            let csrf = try #require(page.csrf)
            let start: [(String, String)] = [
                ("csrf", csrf), ("severity", "6"), ("notes", "Behind the eyes"), ("startedAt", ""), ("lat", ""), ("lon", ""),
                ("kind", "headache"),
            ]
            let started = try await ana.post("/c/north/episodes", form: start)
            #expect(started.status == 303 && started.location == "/c/north/episodes?started=1")
            let open = try await ana.get("/c/north/episodes?started=1")
            #expect(
                open.body.contains("Headache since 09:25, Fri, Nov 20, 2026 (0 min so far)")
                    && open.body.contains(">Stop the headache</button>"))
            let again = try await ana.post("/c/north/episodes", form: start)
            #expect(again.status == 422 && again.body.contains("A headache episode is already open: stop it first."))
            #expect(again.body.contains("<a href=\"#episode-start-headache\">"))

            let listed = try await api.send(
                .get, "/v1/campuses/north/me/episodes", template: "/v1/campuses/{campus}/me/episodes", token: token)
            let item = try #require((listed.json["items"] as? [[String: Any]])?.first)
            let id = try #require(item["id"] as? String)
            #expect(item["severity"] as? Int == 6 && item["notes"] as? String == "Behind the eyes" && item["stoppedAt"] is NSNull)
            clock.advance(by: 2 * 3600 + 30)
            let stopped = try await ana.post("/c/north/episodes/\(id)/stop", form: [("csrf", csrf)])
            #expect(stopped.status == 303 && stopped.location == "/c/north/episodes?stopped=1")
            let detail = try await ana.get("/c/north/episodes/\(id)")
            #expect(
                detail.body.contains("<dd>2 h 00 min</dd>") && detail.body.contains("value=\"2026-11-20T09:25\"")
                    && detail.body.contains("value=\"2026-11-20T11:25\""))
            #expect(detail.body.contains("<h2>Notes</h2><div class=\"entry-text\">Behind the eyes</div>"))

            // Times typed in the campus's zone.
            let edit: [(String, String)] = [
                ("csrf", csrf), ("kind", "migraine"), ("severity", "7"), ("notes", ""), ("startedAt", "2026-11-19T22:00"),
                ("stoppedAt", "2026-11-20T01:30"),
            ]
            let edited = try await ana.post("/c/north/episodes/\(id)", form: edit)
            #expect(edited.status == 303, "\(edited.body)")
            let after = try await api.send(
                .get, "/v1/campuses/north/me/episodes/\(id)", template: "/v1/campuses/{campus}/me/episodes/{id}", token: token)
            #expect(
                after.json["startedAt"] as? String == "2026-11-20T03:00:00Z" && after.json["stoppedAt"] as? String == "2026-11-20T06:30:00Z"
            )
            #expect(after.json["kind"] as? String == "migraine" && after.json["durationMinutes"] as? Int == 210)
            #expect(!(try await ana.get("/c/north/episodes/\(id)")).body.contains("<h2>Notes</h2>"), "no heading over no notes")
            for (field, value, message) in [
                ("stoppedAt", "2026-11-19T21:00", "not before it started"), ("stoppedAt", "", "A stopped episode stays stopped"),
                ("startedAt", "yesterday", "Enter when it started"), ("severity", "11", "Choose a severity from 0 to 10."),
                ("kind", "hangover", "Choose a kind of episode: headache, migraine."),
            ] {
                let bad = try await ana.post("/c/north/episodes/\(id)", form: edit.map { $0.0 == field ? (field, value) : $0 })
                #expect(
                    bad.status == 422 && bad.body.contains(message) && bad.body.contains("<details class=\"card\" open>"),
                    "\(field)=\(value)")
            }
            let inSpanish = try await ana.post(
                "/c/north/episodes/\(id)", form: edit.map { $0.0 == "kind" ? ("kind", "resaca") : $0 }, headers: [.acceptLanguage: "es"])
            #expect(inSpanish.status == 422 && inSpanish.body.contains("Elija un tipo de episodio: dolor de cabeza, migraña."))
            let deleted = try await ana.post("/c/north/episodes/\(id)/delete", form: [("csrf", csrf)])
            #expect(deleted.status == 303 && deleted.location == "/c/north/episodes?deleted=1")
            #expect(try await ana.get("/c/north/episodes/\(id)").status == 404)
            // Bob cannot stop or see Ana's episodes.
            _ = try await ana.post("/c/north/episodes", form: start)
            let again2 = try await api.send(
                .get, "/v1/campuses/north/me/episodes", template: "/v1/campuses/{campus}/me/episodes", token: token)
            let second = try #require((again2.json["items"] as? [[String: Any]])?.first?["id"] as? String)
            let bob = try await Self.member(api, "bob@example.edu")
            let bobs = try await bob.get("/c/north/episodes")
            #expect(bobs.body.contains("No episodes yet.") && !bobs.body.contains("Behind the eyes"))
            #expect(try await bob.post("/c/north/episodes/\(second)/stop", form: [("csrf", try #require(bobs.csrf))]).status == 404)
            let refused = try await bob.get("/c/north/episodes/\(second)")
            #expect(refused.status == 404 && refused.body.contains("There is no such episode of yours"))
        }
    }

    @Test func theWeatherWhereAnEpisodeBeganAndTheSummaryChartsShowTheAPIsFigures() async throws {
        let clock = try TestClock("2026-11-20T14:25:00Z")
        let (server, campus) = try await Self.setUp(clock: clock)
        let router = Router()
        router.get("weather") { request, _ -> Response in
            let time = request.uri.queryParameters.get("time") ?? ""
            let body = time.hasPrefix("2026-11-20") ? #"{"temperature": 20.5, "humidity": 50}"# : #"{"temperature": 10.5, "humidity": 70}"#
            return Response(status: .ok, body: .init(byteBuffer: ByteBuffer(string: body)))
        }
        let (port, task) = try await startLoopbackServer(router)
        defer { task.cancel() }
        try await CampusPluginStore(client: server.pool).enable(
            campus: campus, kind: .context, id: "json-feed",
            settings: .object(["url": .string("http://127.0.0.1:\(port)/weather?lat={lat}&lon={lon}&time={time}")]), actor: "test")
        try await server.run { api in
            let ana = try await Self.member(api, "ana@example.edu")
            let token = try #require(ana.cookie("attest-north"))
            let csrf = try #require(try await ana.get("/c/north/episodes").csrf)
            // The page's script keeps the place to a tenth of a degree.
            let started = try await ana.post(
                "/c/north/episodes", form: [("csrf", csrf), ("severity", "4"), ("lat", "40.8"), ("lon", "-74.0"), ("kind", "migraine")])
            #expect(started.status == 303)
            let badPlace = try await ana.post(
                "/c/north/episodes", form: [("csrf", csrf), ("severity", "4"), ("lat", "91"), ("lon", "0"), ("kind", "headache")])
            #expect(badPlace.status == 422 && badPlace.body.contains("The location could not be read"))
            let listed = try await api.send(
                .get, "/v1/campuses/north/me/episodes", template: "/v1/campuses/{campus}/me/episodes", token: token)
            let id = try #require((listed.json["items"] as? [[String: Any]])?.first?["id"] as? String)
            let detail = try await ana.get("/c/north/episodes/\(id)")
            #expect(
                detail.body.contains("About 40.8, -74.0") && detail.body.contains("https://www.openstreetmap.org/?mlat=40.8&amp;mlon=-74.0")
            )
            #expect(detail.body.contains("<caption>Weather where it began</caption>"))
            #expect(detail.body.contains("<th scope=\"row\">Temperature</th><td class=\"num\">20.5 °C</td><td class=\"num\">10.5 °C</td>"))

            // Episodes in two months, through the API; the page's figures are the summary's.
            for (start, stop) in [
                ("2026-10-05T12:00:00Z", "2026-10-05T13:30:00Z"), ("2026-10-20T12:00:00Z", "2026-10-20T12:30:00Z"),
                ("2026-11-02T12:00:00Z", "2026-11-02T16:00:00Z"),
            ] {
                let made = try await api.send(
                    .post, "/v1/campuses/north/me/episodes", template: "/v1/campuses/{campus}/me/episodes", token: token,
                    json: #"{"kind": "headache", "severity": 3, "startedAt": "\#(start)"}"#)
                let madeID = try #require(made.json["id"] as? String)
                // Stopped by an edit: long past, the platform would close it at 72 h first.
                let stopped = try await api.send(
                    .patch, "/v1/campuses/north/me/episodes/\(madeID)", template: "/v1/campuses/{campus}/me/episodes/{id}", token: token,
                    json: #"{"stoppedAt": "\#(stop)"}"#)
                #expect(stopped.json["autoClosed"] as? Bool == false)
            }
            let summary = try await api.send(
                .get, "/v1/campuses/north/me/episodes/summary?from=2026-10-01&to=2026-11-20",
                template: "/v1/campuses/{campus}/me/episodes/summary", token: token)
            let months = try #require(summary.json["months"] as? [[String: Any]])
            #expect(
                months.map { "\($0["month"] ?? "") \($0["count"] ?? "") \($0["totalMinutes"] ?? "")" } == [
                    "2026-10 2 120", "2026-11 2 240",
                ])
            let page = try await ana.get("/c/north/episodes?from=2026-10-01&to=2026-11-20")
            #expect(page.status == 200)
            #expect(page.body.contains("Episodes: 4 (3 stopped). Time in all: 6 h 00 min; on average: 2 h 00 min."))
            #expect(
                page.body.contains(
                    "<th scope=\"row\">2026-10</th><td class=\"num\">2</td><td class=\"num\">2</td><td class=\"num\">2 h 00 min</td><td class=\"num\">1 h 00 min</td>"
                ))
            #expect(
                page.body.contains(
                    "<th scope=\"row\">2026-11</th><td class=\"num\">2</td><td class=\"num\">1</td><td class=\"num\">4 h 00 min</td><td class=\"num\">4 h 00 min</td>"
                ))
            for chart in ["episodes-per-month", "average-duration", "weather"] {
                #expect(page.body.contains("aria-labelledby=\"\(chart)-title \(chart)-desc\""), "\(chart)")
            }
            #expect(page.body.contains("<title>2026-10: 2</title>"), "a bar of two episodes")
            #expect(page.body.contains("<th scope=\"row\">Temperature</th><td class=\"num\">20.5 °C</td><td class=\"num\">10.5 °C</td>"))
            // A month without episodes is a zero in the table (and no bar), so the months read as a trend.
            let wider = try await ana.get("/c/north/episodes?from=2026-09-15&to=2026-11-20")
            #expect(
                wider.body.contains(
                    "<th scope=\"row\">2026-09</th><td class=\"num\">0</td><td class=\"num\">0</td><td class=\"num\">0 min</td><td class=\"num\">–</td>"
                ))
            #expect(!wider.body.contains("<title>2026-09:"))
            // A range backwards is the page again with the problem by the date, the episodes still listed.
            let badRange = try await ana.get("/c/north/episodes?from=2026-11-20&to=2026-10-01", headers: [.acceptLanguage: "es"])
            #expect(badRange.status == 422 && badRange.headers[.contentType] == "text/html; charset=utf-8")
            #expect(badRange.body.contains("<a href=\"#to\">Elija un último día igual o posterior al primero, "), "\(badRange.body)")
            #expect(badRange.body.contains(#"name="to" value="2026-10-01" aria-invalid="true""#))
            #expect(badRange.body.contains("id=\"list-heading\"") && !badRange.body.contains("episodes-per-month-title"))
        }
    }

    @Test func exportsLinksAndKeepingFromThePage() async throws {
        let clock = try TestClock("2026-11-20T14:25:00Z")
        let (server, campus) = try await Self.setUp(clock: clock)
        try await server.run { api in
            let ana = try await Self.member(api, "ana@example.edu")
            let csrf = try #require(try await ana.get("/c/north/journal").csrf)
            _ = try await ana.post(
                "/c/north/journal", multipart: Self.entry(csrf: csrf, title: "Saw the nurse", text: "Rest two days"), files: [])
            let sharing = try await ana.get("/c/north/sharing")
            #expect(sharing.status == 200 && sharing.body.contains("value=\"2026-10-22\"") && sharing.body.contains("No links yet."))
            let csv = try await ana.get("/c/north/sharing/export?from=2026-11-01&to=2026-11-20&format=csv")
            #expect(csv.status == 200 && csv.headers[.contentType] == "text/csv; charset=utf-8" && csv.body.contains("Saw the nurse"))
            #expect(csv.headers[.contentDisposition] == "attachment; filename=\"health-journal-2026-11-01-2026-11-20.csv\"")
            let pdf = try await ana.get("/c/north/sharing/export?from=2026-11-01&to=2026-11-20&format=pdf")
            #expect(pdf.status == 200 && pdf.bytes.starts(with: Data("%PDF-".utf8)))
            #expect(try await ana.get("/c/north/sharing/export?from=2026-11-20&to=2026-11-01&format=csv").status == 422)

            // A link: shown once, opens without sign-in, every opening listed, then revoked.
            let made = try await ana.post(
                "/c/north/sharing/links", form: [("csrf", csrf), ("from", "2026-11-01"), ("to", "2026-11-20"), ("expiresIn", "3600")])
            #expect(made.status == 201 && made.body.contains("Copy it now: it is shown only this once."))
            let url = try #require(made.body.firstMatch(of: /id="new-link-url" value="(http:\/\/[^"]+)"/)?.1).description
            let path = try #require(URL(string: url)?.path)
            #expect(path.hasPrefix("/v1/campuses/north/shared/"))
            #expect(try await WebClient(api.client).get(path).body.contains("Open as CSV"))
            let opened = try await WebClient(api.client).post(path, form: [("format", "csv")])
            #expect(opened.status == 200 && opened.body.contains("Saw the nurse"))
            let listed = try await ana.get("/c/north/sharing")
            #expect(
                listed.body.contains("Opened 1 times:") && listed.body.contains("(CSV)")
                    && listed.body.contains("active until 10:25, Fri, Nov 20, 2026"))
            #expect(!listed.body.contains(path), "the link is not shown again")
            let revoke = try #require(listed.body.firstMatch(of: /action="(\/c\/north\/sharing\/links\/[0-9a-f-]{36}\/revoke)"/)?.1)
                .description
            #expect(try await ana.post(revoke, form: [("csrf", csrf)]).location == "/c/north/sharing?revoked=1")
            #expect(try await WebClient(api.client).get(path).status == 404)
            #expect(try await ana.get("/c/north/sharing").body.contains("revoked at 09:25"))
            #expect(try await ana.post(revoke, form: [("csrf", csrf)]).status == 404, "revoked once")
            let bob = try await Self.member(api, "bob@example.edu")
            #expect(try await bob.get("/c/north/sharing").body.contains("No links yet."))

            for (form, message) in [
                ([("from", "2026-11-01"), ("to", "2026-11-20"), ("expiresIn", "12345")], "Choose how long the link lives."),
                ([("from", "2026-11-20"), ("to", "2026-11-01"), ("expiresIn", "3600")], "The first date must not be after the second"),
                ([("from", "soon"), ("to", "2026-11-01"), ("expiresIn", "3600")], "Enter a real date as YYYY-MM-DD."),
            ] {
                let bad = try await ana.post("/c/north/sharing/links", form: [("csrf", csrf)] + form)
                #expect(bad.status == 422 && bad.body.contains(message) && !bad.body.contains("new-link-url"), "\(form)")
            }

            // Keeping.
            #expect(
                try await ana.post("/c/north/sharing/keeping", form: [("csrf", csrf), ("keepDays", "90")]).location
                    == "/c/north/sharing?kept=1")
            #expect(try await ana.get("/c/north/sharing?kept=1").body.contains("more than 90 days ago are deleted each day"))
            let bad = try await ana.post("/c/north/sharing/keeping", form: [("csrf", csrf), ("keepDays", "0")])
            #expect(bad.status == 422 && bad.body.contains("Enter a whole number of days from 1 to 3650"))
            _ = try await ana.post("/c/north/sharing/keeping", form: [("csrf", csrf), ("keepDays", "")])
            #expect(try await ana.get("/c/north/sharing").body.contains("kept until you delete them"))
        }
        let audit = try await AuditLog(client: TestDatabase.client(database: server.database)).entries(campus: campus.id)
        #expect(audit.filter { $0.action == "member.export" }.map { $0.details["format"] ?? "" }.sorted() == ["csv", "pdf"])
        #expect(audit.filter { $0.action == "member.share" }.count == 1)
    }
}
