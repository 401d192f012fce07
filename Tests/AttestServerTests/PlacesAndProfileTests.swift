import AttestPlugins
import AttestPluginsTesting
import AttestPostgres
import AttestTestSupport
import BuiltinPlugins
import Community
import Foundation
import HTTPTypes
import Identity
import Journal
import Tenancy
import Testing

/// Saved places over national and global series, and the private health profile (issue 61).
@Suite("Places and the health profile")
struct PlacesAndProfileTests {
    static let placesPath = "/v1/campuses/{campus}/me/places"
    static let profilePath = "/v1/campuses/{campus}/me/profile"

    /// The US's running totals: 100 new cases a day, then a correction down on the last day.
    static func nationalCSV(end: LocalDate) -> String {
        var lines = ["date,cases,deaths"]
        for offset in stride(from: 20, through: 1, by: -1) {
            lines.append("\(end.adding(days: -offset)),\(1_000 + (21 - offset) * 100),\(21 - offset)")
        }
        lines.append("\(end),\(1_000 + 19 * 100),20")  // 100 fewer than the day before: a correction
        return lines.joined(separator: "\n") + "\n"
    }

    /// Our World in Data's layout: daily figures written as `12.0`, the world as OWID_WRL, a
    /// continent (skipped), Canada by alpha-3, and columns the import does not read.
    static func globalCSV(end: LocalDate) -> String {
        var lines = ["iso_code,continent,location,date,total_cases,new_cases,new_deaths,population,stringency_index"]
        for offset in stride(from: 20, through: 0, by: -1) {
            let date = end.adding(days: -offset)
            lines.append("OWID_WRL,,World,\(date),,7000.0,70.0,8000000000.0,")
            lines.append("OWID_EUR,,Europe,\(date),,3000.0,30.0,750000000.0,")
            lines.append("CAN,North America,Canada,\(date),,\(offset == 0 ? "-5.0" : "380.0"),1.0,38000000.0,40.5")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    @Test func nationalAndGlobalLayoutsReadTheirColumnsAndNameABadLine() throws {
        let end = LocalDate("2026-11-20")!
        let national = try CommunityLayout.national.parse(Data(Self.nationalCSV(end: end).utf8))
        let us = try #require(national.series(region: "US"))
        #expect(us.region.name == "United States" && us.days.count == 21)
        #expect(us.days.first?.newCases == 1_100 && us.days[1].newCases == 100 && us.days.last?.newCases == -100)
        #expect(us.days.last?.newDeaths == 0)

        let global = try CommunityLayout.global.parse(Data(Self.globalCSV(end: end).utf8))
        #expect(global.regionCount == 2)  // the world and Canada; Europe is an aggregate
        let world = try #require(global.series(region: "WORLD"))
        #expect(world.region.name == "World" && world.region.population == 8_000_000_000 && world.days.count == 21)
        let canada = try #require(global.series(region: "CA"))
        #expect(canada.region.name == "Canada" && canada.days.last?.newCases == -5 && canada.days.first?.newCases == 380)
        #expect(global.regions(matching: "cana", limit: 5).map(\.id) == ["CA"])

        // The cumulative form: totals become daily figures.
        let totals = "date,location,iso_code,total_cases,total_deaths\n2026-11-01,Chile,CHL,100,1\n2026-11-02,Chile,CHL,130,1\n"
        #expect(try CommunityLayout.global.parse(Data(totals.utf8)).series(region: "CL")?.days.map(\.newCases) == [100, 30])

        for (layout, text, expected) in [
            (
                CommunityLayout.global, "date,location,iso_code,new_cases\n2026-11-01,Nowhere,XYZ,1\n",
                "line 2: iso_code must be an ISO 3166-1 code"
            ),
            (.global, "date,location,iso_code,new_cases\n2026-11-01,Canada,CAN,1.5\n", "line 2: new_cases must be a whole number"),
            (.global, "date,location,iso_code\n2026-11-01,Canada,CAN\n", "the header needs new_cases (or total_cases)"),
            (.national, "date,cases,deaths\n2026-11-01,10,0\n2026-13-01,11,0\n", "line 3: date must be YYYY-MM-DD"),
            (.national, "date,deaths\n", "the header needs a cases column"),
            (.state, "date,county,state,fips,cases,deaths\n", "this file has a county column: import it with --layout county"),
            (.county, "date,state,fips,cases,deaths\n", "it has no county column"),
        ] {
            #expect(throws: CommunityDataFileError.self) { try layout.parse(Data(text.utf8)) }
            do { _ = try layout.parse(Data(text.utf8)) } catch { #expect("\(error)".contains(expected), "\(error)") }
        }
    }

    /// A campus whose `imported` provider reads counties, the nation and the world, imported
    /// with the CLI as an operator would.
    static func campusWithThreeDatasets(_ server: TestServer, at campus: String) async throws -> [String: String?] {
        let directory = FileManager.default.temporaryDirectory.appending(path: "places-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let end = LocalDate("2026-11-20")!
        let files: [(name: String, text: String)] = [
            ("counties.csv", CommunityDataTests.cumulativeCSV(end: end)), ("people.csv", CommunityDataTests.population),
            ("us.csv", nationalCSV(end: end)), ("us-people.csv", "id,population\nUS,330000000\n"), ("world.csv", globalCSV(end: end)),
        ]
        for file in files { try Data(file.text.utf8).write(to: directory.appending(path: file.name)) }
        func path(_ name: String) -> String { directory.appending(path: name).path }
        let environment: [String: String?] = ["DATABASE_URL": TestDatabase.url(database: server.database)]
        for (arguments, said) in [
            (["community", "import", path("counties.csv"), "--dataset", "testland", "--population", path("people.csv")], "3 regions"),
            (
                ["community", "import", path("us.csv"), "--layout", "national", "--dataset", "us", "--population", path("us-people.csv")],
                "1 region and 21 days"
            ),
            (["community", "import", path("world.csv"), "--layout", "global", "--dataset", "world"], "2 regions and 42 days"),
            (
                ["plugin", "enable", campus, "community-data", "imported", "--settings", #"{"dataset": ["testland", "us", "world"]}"#],
                ""
            ),
            (["campus", "set", campus, "region", "99001"], ""),
        ] {
            let done = try await ChildProcess.run([ChildProcess.attestBinary] + arguments, environment: environment)
            #expect(done.status == 0 && (said.isEmpty || done.stdout.contains(said)), "\(arguments): \(done.stdout) \(done.stderr)")
        }
        let wrongLayout = try await ChildProcess.run(
            [ChildProcess.attestBinary, "community", "import", path("world.csv"), "--layout", "planet", "--dataset", "x"],
            environment: environment)
        #expect(wrongLayout.status != 0 && wrongLayout.stderr.contains("--layout must be county, state, national or global"))
        return environment
    }

    @Test func membersFollowUpToTenPlacesTheCampusDataKnowsAndSeeTheirFigures() async throws {
        let server = try await TestServer.make()
        let north = try await server.campus("north")
        let (_, member) = try await server.user("m@example.edu", at: north)
        let (_, other) = try await server.user("o@example.edu", at: north)
        let (_, admin) = try await server.user("a@example.edu", at: north, roles: [.admin, .healthOfficer])
        _ = try await Self.campusWithThreeDatasets(server, at: "north")
        try await server.run { api in
            // The nation and the world, found by search and answered by id.
            let search = try await api.send(
                .get, "/v1/campuses/north/community/regions?search=united", template: CommunityDataTests.regionsPath, token: member)
            #expect((search.json["regions"] as? [[String: Any]])?.compactMap { $0["id"] as? String } == ["US"])
            let nation = try await api.send(
                .get, "/v1/campuses/north/community?region=US", template: CommunityDataTests.path, token: member)
            // The last week: six days of 100 and a correction of -100, over 7, per 330 million.
            #expect(nation.status == 200 && nation.json["newCases7DayAverage"] as? Double == 71.4)
            #expect(nation.json["region"].flatMap { ($0 as? [String: Any])?["population"] as? Int } == 330_000_000)

            let empty = try await api.send(.get, "/v1/campuses/north/me/places", template: Self.placesPath, token: member)
            #expect(empty.status == 200 && (empty.json["regions"] as? [Any])?.isEmpty == true && empty.json["limit"] as? Int == 10)
            #expect(empty.headers[.cacheControl] == "private, no-store")

            let saved = try await api.send(
                .put, "/v1/campuses/north/me/places", template: Self.placesPath, token: member,
                json: #"{"regions": ["CA", "99002", "WORLD"]}"#)
            #expect(saved.status == 200, "\(saved.body)")
            let places = (saved.json["regions"] as? [[String: Any]]) ?? []
            #expect(places.compactMap { $0["id"] as? String } == ["CA", "99002", "WORLD"])
            #expect(places.compactMap { $0["name"] as? String } == ["Canada", "Beta, North, Testland", "World"])
            #expect(places.first?["asOf"] as? String == "2026-11-20" && places.first?["available"] as? Bool == true)
            #expect(places.last?["newCases7DayAveragePer100k"] as? Double == 0.1 && places.last?["risk"] as? String == "low")
            let again = try await api.send(.get, "/v1/campuses/north/me/places", template: Self.placesPath, token: member)
            #expect(NSDictionary(dictionary: again.json) == NSDictionary(dictionary: saved.json))

            // Each member's own: another member, an admin and health officer see theirs (none).
            for token in [other, admin] {
                let theirs = try await api.send(.get, "/v1/campuses/north/me/places", template: Self.placesPath, token: token)
                #expect(theirs.status == 200 && (theirs.json["regions"] as? [Any])?.isEmpty == true)
            }

            for (body, field) in [
                (#"{"regions": ["nowhere-at-all"]}"#, "regions[0]"), (#"{"regions": ["US", "US"]}"#, "regions[1]"),
                (#"{"regions": ["US", "no spaces"]}"#, "regions[1]"), (#"{"regions": "US"}"#, "regions"), (#"{}"#, "regions"),
                (#"{"regions": ["US"], "home": "CA"}"#, "home"),
                (#"{"regions": [\#((0..<11).map { _ in #""US""# }.joined(separator: ","))]}"#, "regions"),
            ] {
                let refused = try await api.send(.put, "/v1/campuses/north/me/places", template: Self.placesPath, token: member, json: body)
                #expect(refused.status == 422 && refused.problem.fields.contains(field), "\(body): \(refused.status) \(refused.body)")
            }
            let unchanged = try await api.send(.get, "/v1/campuses/north/me/places", template: Self.placesPath, token: member)
            #expect(NSDictionary(dictionary: unchanged.json) == NSDictionary(dictionary: saved.json))  // nothing half-stored
        }
    }

    @Test func aProfileIsSealedSeenByItsMemberOnlyAndInAnExportOnlyWhenAsked() async throws {
        let (server, north, author, member, _) = try await ExportTests.setUp()
        let (_, other) = try await server.user("o@example.edu", at: north, roles: [.admin, .healthOfficer])
        try await server.run { api in
            let none = try await api.send(.get, "/v1/campuses/north/me/profile", template: Self.profilePath, token: member)
            #expect(none.status == 200 && none.json["birthYear"] is NSNull && none.json["bmi"] is NSNull)

            let kept = try await api.send(
                .put, "/v1/campuses/north/me/profile", template: Self.profilePath, token: member,
                json: #"{"birthYear": 1990, "heightCm": 170.04, "weightKg": 65}"#)
            #expect(kept.status == 200, "\(kept.body)")
            #expect(
                kept.json["heightCm"] as? Double == 170 && kept.json["weightKg"] as? Double == 65 && kept.json["bmi"] as? Double == 22.5)
            #expect(kept.headers[.cacheControl] == "private, no-store")

            // Sealed: the table holds no figure of it in the clear, and another row's copy does not open.
            let stored = try await server.pool.query(
                "SELECT sealed FROM member_profiles WHERE user_id = \(author.id.rawValue)",
                settings: CampusScope.settings(north.id.rawValue, member: author.id.rawValue))
            let sealed = try #require(try stored.first?.decode("sealed", as: Data.self))
            #expect(String(decoding: sealed, as: UTF8.self).contains("1990") == false)
            let unscoped = try await server.pool.query(
                "SELECT count(*)::int8 AS n FROM member_profiles", settings: CampusScope.settings(north.id.rawValue))
            #expect(try unscoped.first?.decode("n", as: Int64.self) == 0)  // without the member named, row-level security shows none

            let theirs = try await api.send(.get, "/v1/campuses/north/me/profile", template: Self.profilePath, token: other)
            #expect(theirs.status == 200 && theirs.json["birthYear"] is NSNull, "an admin and health officer sees only their own")

            for (body, fields) in [
                (#"{"birthYear": 1800}"#, ["birthYear"]), (#"{"heightCm": 10, "weightKg": "heavy"}"#, ["heightCm", "weightKg"]),
                (#"{"birthYear": 1990.5}"#, ["birthYear"]), (#"{"weightKg": 1e308, "shoeSize": 42}"#, ["weightKg", "shoeSize"]),
            ] {
                let refused = try await api.send(
                    .put, "/v1/campuses/north/me/profile", template: Self.profilePath, token: member, json: body)
                #expect(refused.status == 422 && Set(refused.problem.fields) == Set(fields), "\(body): \(refused.body)")
            }

            func export(_ query: String) async throws -> Data {
                let response = try await api.client.execute(
                    uri: "/v1/campuses/north/me/export?from=2026-11-01&to=2026-11-20\(query)", method: .get,
                    headers: [.authorization: "Bearer \(member)"], body: nil)
                #expect(response.status == .ok, "\(query)")
                return Data(response.body.readableBytesView)
            }
            let withProfile = try JSONSerialization.jsonObject(with: try await export("&format=json&profile=true")) as? [String: Any]
            let profile = try #require(withProfile?["profile"] as? [String: Any])
            #expect(profile["birthYear"] as? Int == 1990 && profile["heightCm"] as? Double == 170 && profile["bmi"] as? Double == 22.5)
            let without = try JSONSerialization.jsonObject(with: try await export("&format=json")) as? [String: Any]
            #expect(without?["profile"] == nil && without?["journal"] != nil)
            #expect(
                try await ExportTests.text(ofPDF: try await export("&profile=true")).contains(
                    "Health profile: born 1990 · 170 cm · 65 kg · BMI 22.5"))
            #expect(try await ExportTests.text(ofPDF: try await export("")).contains("Health profile") == false)
            let rows = try await WriterOracleTests.pythonCSV(try await export("&format=csv&profile=true"))
            #expect(rows.dropFirst().first?.prefix(4) == ["profile", "", "Health profile", "born 1990 · 170 cm · 65 kg · BMI 22.5"])
            let badFlag = try await api.send(
                .get, "/v1/campuses/north/me/export?profile=yes", template: "/v1/campuses/{campus}/me/export", token: member)
            #expect(badFlag.status == 422 && badFlag.problem.fields == ["profile"])

            // All parts null removes it.
            let cleared = try await api.send(
                .put, "/v1/campuses/north/me/profile", template: Self.profilePath, token: member, json: #"{"birthYear": null}"#)
            #expect(cleared.status == 200 && cleared.json["heightCm"] is NSNull)
            let gone = try await server.pool.query(
                "SELECT count(*)::int8 AS n FROM member_profiles",
                settings: CampusScope.settings(north.id.rawValue, member: author.id.rawValue))
            #expect(try gone.first?.decode("n", as: Int64.self) == 0)
        }
    }

    @Test func theCommunityPageListsHomeNationWorldAndFollowedPlacesAndTheProfileFormWithoutScript() async throws {
        let (server, campus) = try await WebPageTests.setUp()
        let ana = try #require(try await UserStore(client: server.pool).find(campus: campus.id, email: "ana@example.edu"))
        _ = try await Self.campusWithThreeDatasets(server, at: "north")
        try await server.run { api in
            let browser = WebClient(api.client)
            try await browser.demoSignIn(campus: "north", email: "ana@example.edu")
            let page = try await browser.get("/c/north/community")
            #expect(page.status == 200)
            for text in ["Alpha, Testland", "Campus region", "United States", "Nation", "World", "aria-current=\"page\">Community"] {
                #expect(page.body.contains(text), "\(text)")
            }
            #expect(!page.body.contains("Unfollow"))
            let search = try await browser.get("/c/north/community?search=cana")
            #expect(search.body.contains(">Canada</a>") && search.body.contains("action=\"/c/north/community/follow\""))
            let csrf = try #require(search.csrf)
            let followed = try await browser.post("/c/north/community/follow", form: [("csrf", csrf), ("region", "CA")])
            #expect(followed.status == 303 && followed.location == "/c/north/community?followed=1")
            let listed = try await browser.get("/c/north/community?followed=1")
            #expect(
                listed.body.contains("The place was added to your list.") && listed.body.contains("Followed")
                    && listed.body.contains("Unfollow"))
            let unknown = try await browser.post("/c/north/community/follow", form: [("csrf", csrf), ("region", "nowhere")])
            #expect(unknown.status == 422 && unknown.body.contains("figures have no such place"))
            let forged = try await browser.post("/c/north/community/follow", form: [("csrf", "forged"), ("region", "US")])
            #expect(forged.status == 403)

            // A place's 8 weeks: a chart with its table, deaths beside cases, source and date.
            let detail = try await browser.get("/c/north/community/US")
            #expect(detail.status == 200 && detail.body.contains("<h1>United States</h1>"))
            #expect(detail.body.contains("New cases a week in United States") && detail.body.contains("<rect"))
            #expect(
                detail.body.contains("New deaths") && detail.body.contains("2026-11-14 – 2026-11-20")
                    && detail.body.contains("Source: imported."))
            #expect(try await browser.get("/c/north/community/nowhere").status == 404)

            let unfollowed = try await browser.post("/c/north/community/unfollow", form: [("csrf", csrf), ("region", "CA")])
            #expect(unfollowed.status == 303)
            #expect(try await server.services.places.regions(campus: campus.id, user: ana.id).isEmpty)

            // The profile, as a form: wrong values named, then kept and shown with US units and BMI.
            let sharing = try await browser.get("/c/north/sharing")
            #expect(sharing.body.contains("Your health profile") && sharing.body.contains("id=\"export-profile\""))
            let wrong = try await browser.post(
                "/c/north/sharing/profile", form: [("csrf", csrf), ("birthYear", "18"), ("heightCm", "tall"), ("weightKg", "70")])
            #expect(wrong.status == 422 && wrong.body.contains("Enter a year from 1900 to 2026") && wrong.body.contains("Enter a height"))
            #expect(wrong.field("weightKg") == "70")
            let kept = try await browser.post(
                "/c/north/sharing/profile", form: [("csrf", csrf), ("birthYear", "1990"), ("heightCm", "180"), ("weightKg", "81")])
            #expect(kept.status == 303)
            let shown = try await browser.get("/c/north/sharing?profile=1")
            #expect(
                shown.body.contains("Your health profile was saved.") && shown.body.contains("≈ 5 ft 11 in")
                    && shown.body.contains("≈ 179 lb"))
            #expect(shown.body.contains("BMI 25.0"))
            let pdf = try await browser.get("/c/north/sharing/export?from=2026-11-01&to=2026-11-20&profile=true")
            #expect(try await ExportTests.text(ofPDF: pdf.bytes).contains("Health profile: born 1990 · 180 cm · 81 kg · BMI 25.0"))
        }
    }

    @Test func madeUpWeatherIsMarkedWhereverShownAndTheSummaryCarriesTheBMI() async throws {
        let clock = try TestClock("2026-11-20T14:00:00Z")
        let server = try await TestServer.make(registry: PluginRegistry.builtin.withDemoPlugins(), clock: clock.read)
        let north = try await server.campus("north")
        let (_, member) = try await server.user("m@example.edu", at: north)
        try await CampusPluginStore(client: server.pool).enable(
            campus: north, kind: .context, id: "made-up", settings: .null, actor: "test")
        try await server.run { api in
            let started = try await api.send(
                .post, "/v1/campuses/north/me/episodes", template: EpisodeTests.list, token: member,
                json: #"{"kind": "headache", "severity": 5, "location": {"lat": 40.75, "lon": -73.98}}"#)
            #expect(started.status == 201 && started.json["contextMadeUp"] as? Bool == true, "\(started.body)")
            let context = (started.json["context"] as? [[String: Any]]) ?? []
            #expect(context.count == 5 && context.contains { $0["factor"] as? String == "airQuality" && $0["unit"] as? String == "US AQI" })
            #expect((started.json["baseline"] as? [Any])?.count == 5)
            _ = try await api.send(
                .put, "/v1/campuses/north/me/profile", template: Self.profilePath, token: member,
                json: #"{"heightCm": 160, "weightKg": 64}"#)
            let summary = try await api.send(.get, "/v1/campuses/north/me/episodes/summary", template: EpisodeTests.summary, token: member)
            #expect(summary.json["madeUp"] as? Bool == true && summary.json["bmi"] as? Double == 25, "\(summary.body)")
            let export = try await api.client.execute(
                uri: "/v1/campuses/north/me/export?from=2026-11-01&to=2026-11-20", method: .get,
                headers: [.authorization: "Bearer \(member)"],
                body: nil)
            let text = try await ExportTests.text(ofPDF: Data(export.body.readableBytesView))
            #expect(text.contains("US AQI (made up by the demo's model"), "\(text)")
        }
    }
}
