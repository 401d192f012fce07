import AttestPlugins
import AttestPluginsTesting
import AttestPostgres
import AttestTestSupport
import Foundation
import Identity
import Tenancy
import Testing

@testable import AttestAPI
@testable import AttestServer
@testable import AttestWeb
@testable import Surveys

/// Statistics, the dashboard, follow-ups, reports and retention, each checked against a
/// brute-force recount over the attestations table.
@Suite("Statistics")
struct StatisticsTests {
    static let draft = QuestionnaireRules.Draft(
        title: "Check",
        questions: [
            Question(id: "fever", kind: .boolean, prompt: "Fever?", symptom: true),
            Question(id: "cough", kind: .boolean, prompt: "Cough?", symptom: true),
            Question(id: "positive_test", kind: .boolean, required: false, prompt: "Positive test?"),
            Question(id: "site", kind: .choice, required: false, prompt: "Where today?", options: ["campus", "remote"]),
            Question(id: "temperature", kind: .number, required: false, prompt: "Temperature", min: 34, max: 43, unit: "°C"),
        ])
    static let zone = TimeZone(identifier: "America/New_York")!

    /// What the attestations table says about one day, counted the slow way.
    struct Recount: Equatable {
        var active = 0, submitted = 0, onTime = 0, late = 0, green = 0, yellow = 0, red = 0
        var answers: [String: [String: Int]] = [:]
    }

    static func recount(_ server: TestServer, _ campus: Campus, days: [LocalDate]) async throws -> [LocalDate: Recount] {
        let rows = try await server.pool.query(
            "SELECT local_date, on_time, color, answers::text AS answers FROM attestations WHERE campus_id = \(campus.id)",
            campus: campus.id.rawValue)
        let members = try await server.pool.query(
            "SELECT (created_at AT TIME ZONE \(campus.timeZone))::date AS day FROM users WHERE campus_id = \(campus.id) AND active",
            campus: campus.id.rawValue)
        let created = try members.map { try $0.decode("day", as: LocalDate.self) }
        var result: [LocalDate: Recount] = [:]
        for day in days { result[day] = Recount(active: created.filter { $0 <= day }.count) }
        for row in rows {
            let day = try row.decode("local_date", as: LocalDate.self)
            guard var count = result[day] else { continue }
            count.submitted += 1
            if try row.decode("on_time", as: Bool.self) { count.onTime += 1 } else { count.late += 1 }
            switch try row.decode("color", as: String.self) {
            case "green": count.green += 1
            case "yellow": count.yellow += 1
            default: count.red += 1
            }
            if let text = try row.decode("answers", as: String?.self),
                let answers = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
            {
                for (question, value) in answers {
                    switch Self.draft.questions.first(where: { $0.id == question })?.kind {
                    case .boolean? where (value as? Bool) == true: count.answers[question, default: [:]]["true", default: 0] += 1
                    case .choice?: count.answers[question, default: [:]][value as? String ?? "?", default: 0] += 1
                    default: break
                    }
                }
            }
            result[day] = count
        }
        return result
    }

    /// Members submit random answers over several days, mornings on time and afternoons late,
    /// concurrently; then every figure of the dashboard, the stats and the report is compared
    /// with the recount.
    @Test func everyFigureEqualsABruteForceRecount() async throws {
        // Days after today: members are created now, so they are active on every test day.
        let today = LocalDate(Date(), in: Self.zone)
        let days = (2...5).map { today.adding(days: $0) }
        let clock = TestClock(days[0].start(in: Self.zone))
        let server = try await TestServer.make(clock: clock.read)
        let campus = try await server.campus("north")
        _ = try await CampusStore(client: server.pool).set(slug: "north", key: "stats-min-count", value: "3", actor: "test")
        _ = try await QuestionnaireStore(client: server.pool).publish(campus: campus, draft: Self.draft, actor: "test")
        var members: [String] = []
        for index in 0..<24 { members.append(try await server.user("m\(index)@example.edu", at: campus).token) }
        let tokens = members
        let (_, admin) = try await server.user("admin@example.edu", at: campus, roles: [.admin])
        try await server.run { api in
            var generator = SystemRandomNumberGenerator()
            for day in days {
                for hour in [8, 15] {  // 08:xx on time, 15:xx late (deadline 10:00)
                    clock.set(day.start(in: Self.zone).addingTimeInterval(Double(hour * 3600 + Int.random(in: 0..<3000))))
                    let submitting = tokens.enumerated().filter { $0.offset % 2 == (hour == 8 ? 0 : 1) && Bool.random() }.map(\.element)
                    let bodies = submitting.map { _ in
                        var answers: [String] = [
                            "\"fever\": \(Int.random(in: 0..<5, using: &generator) == 0)", "\"cough\": \(Bool.random(using: &generator))",
                        ]
                        if Bool.random(using: &generator) {
                            answers.append("\"positive_test\": \(Int.random(in: 0..<8, using: &generator) == 0)")
                        }
                        if Bool.random(using: &generator) {
                            answers.append("\"site\": \"\(["campus", "remote"].randomElement(using: &generator)!)\"")
                        }
                        if Bool.random(using: &generator) {
                            answers.append("\"temperature\": \(Double.random(in: 36...39.5, using: &generator))")
                        }
                        return #"{"surveyVersion": 1, "answers": {\#(answers.joined(separator: ", "))}}"#
                    }
                    let statuses = try await api.withConnections(submitting.count) { clients in
                        try await withThrowingTaskGroup(of: Int.self) { group in
                            for (index, (token, body)) in zip(submitting, bodies).enumerated() {
                                group.addTask {
                                    try await clients[index].send(
                                        .post, "/v1/campuses/north/attestations", template: "/v1/campuses/{campus}/attestations",
                                        token: token,
                                        json: body
                                    ).status
                                }
                            }
                            return try await group.reduce(into: [Int]()) { $0.append($1) }
                        }
                    }
                    #expect(statuses.allSatisfy { $0 == 201 })
                }
            }
            // One day before the first with nothing, to see zeros.
            let range = [today.adding(days: 1)] + days
            let counted = try await Self.recount(server, campus, days: range)
            #expect(counted.values.map(\.submitted).reduce(0, +) > 10)
            let from = range.first!, to = range.last!

            let dashboard = try await api.send(
                .get, "/v1/campuses/north/admin/dashboard?from=\(from)&to=\(to)", template: "/v1/campuses/{campus}/admin/dashboard",
                token: admin)
            #expect(dashboard.status == 200)
            let dashboardDays = try #require(dashboard.json["days"] as? [[String: Any]])
            #expect(dashboardDays.count == range.count)
            for (day, figures) in zip(range, dashboardDays) {
                let expected = try #require(counted[day])
                #expect(figures["date"] as? String == day.description)
                #expect(figures["activeMembers"] as? Int == expected.active, "\(day)")
                #expect(figures["submitted"] as? Int == expected.submitted, "\(day)")
                #expect(figures["onTime"] as? Int == expected.onTime, "\(day)")
                #expect(figures["late"] as? Int == expected.late, "\(day)")
                #expect(figures["missing"] as? Int == expected.active - expected.submitted, "\(day)")
                let colors = try #require(figures["colors"] as? [String: Int])
                #expect(colors == ["green": expected.green, "yellow": expected.yellow, "red": expected.red], "\(day)")
                #expect((figures["answers"] as? [String: [String: Int]]) ?? [:] == expected.answers, "\(day)")
                #expect(
                    figures["symptoms"] as? [String: Int] == [
                        "fever": expected.answers["fever"]?["true"] ?? 0, "cough": expected.answers["cough"]?["true"] ?? 0,
                    ])
                if expected.active > 0 {
                    #expect(abs((figures["complianceRate"] as? Double ?? -1) - Double(expected.onTime) / Double(expected.active)) < 1e-9)
                }
            }
            let total = try #require(dashboard.json["total"] as? [String: Any])
            let all = counted.values
            #expect(total["submitted"] as? Int == all.map(\.submitted).reduce(0, +))
            #expect(total["onTime"] as? Int == all.map(\.onTime).reduce(0, +))
            #expect(total["late"] as? Int == all.map(\.late).reduce(0, +))
            #expect(total["missing"] as? Int == all.map { $0.active - $0.submitted }.reduce(0, +))
            #expect(total["activeMembers"] as? Int == counted[to]?.active)
            #expect((total["colors"] as? [String: Int])?["red"] == all.map(\.red).reduce(0, +))
            #expect(
                (total["answers"] as? [String: [String: Int]])?["cough"]?["true"]
                    == all.compactMap { $0.answers["cough"]?["true"] }.reduce(0, +))

            let stats = try await api.send(
                .get, "/v1/campuses/north/stats?from=\(from)&to=\(to)", template: "/v1/campuses/{campus}/stats", token: tokens[0])
            #expect(stats.status == 200)
            #expect(stats.json["minCount"] as? Int == 3)
            let statsDays = try #require(stats.json["days"] as? [[String: Any]])
            for (day, figures) in zip(range, statsDays) {
                let expected = try #require(counted[day])
                func share(_ count: Int) -> Double { (Double(count) * 1000 / Double(expected.submitted)).rounded() / 10 }
                guard expected.submitted >= 3 else {
                    #expect(figures["suppressed"] as? Bool == true, "\(day)")
                    #expect(figures["submitted"] is NSNull, "\(day)")
                    continue
                }
                #expect(figures["suppressed"] as? Bool == false)
                #expect(figures["submitted"] as? Int == expected.submitted)
                // A shown share is the recount's; what is hidden leaves no count of 1 or 2 to be
                // read off or subtracted: every such count hidden, never one cell alone, and the
                // hidden cells together none or at least 3.
                let colors = try #require(figures["colors"] as? [String: Any])
                let counts = [("green", expected.green), ("yellow", expected.yellow), ("red", expected.red)]
                var hiddenTotal = 0, hiddenCells = 0
                for (name, count) in counts {
                    if colors[name] is NSNull {
                        hiddenTotal += count
                        hiddenCells += 1
                    } else {
                        #expect(colors[name] as? Double == share(count), "\(day) \(name)")
                        #expect(!(1...2).contains(count), "\(day): \(name) \(count) shown")
                    }
                }
                #expect(hiddenCells != 1 && (hiddenCells == 0 || hiddenCells == 3 || hiddenTotal >= 3), "\(day): \(counts) \(colors)")
                let symptoms = try #require(figures["symptoms"] as? [String: Any])
                for name in ["fever", "cough"] {
                    let yes = expected.answers[name]?["true"] ?? 0
                    if (1...2).contains(yes) || (1...2).contains(expected.submitted - yes) {
                        #expect(symptoms[name] is NSNull, "\(day) \(name)")
                    } else {
                        #expect(symptoms[name] as? Double == share(yes), "\(day) \(name)")
                    }
                }
                #expect(symptoms["positive_test"] == nil, "positive_test is not a symptom question")
            }

            // The report, through the CLI, says the same.
            let report = try await ChildProcess.run(
                [ChildProcess.attestBinary, "report", "north", "--from", from.description, "--to", to.description, "--format", "csv"],
                environment: ["DATABASE_URL": TestDatabase.url(database: server.database)])
            #expect(report.status == 0, "\(report.stderr)")
            let lines = report.stdout.split(separator: "\n").map {
                $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            }
            let header = try #require(lines.first)
            #expect(lines.count == range.count + 1)
            for (day, line) in zip(range, lines.dropFirst()) {
                let expected = try #require(counted[day])
                let row = Dictionary(uniqueKeysWithValues: zip(header, line))
                #expect(row["date"] == day.description)
                #expect(row["active_members"] == "\(expected.active)")
                #expect(row["submitted"] == "\(expected.submitted)")
                #expect(row["on_time"] == "\(expected.onTime)")
                #expect(row["late"] == "\(expected.late)")
                #expect(row["missing"] == "\(expected.active - expected.submitted)")
                #expect(row["green"] == "\(expected.green)" && row["yellow"] == "\(expected.yellow)" && row["red"] == "\(expected.red)")
                #expect(row["cough:true"] == "\(expected.answers["cough"]?["true"] ?? 0)", "\(day)")
                #expect(row["site:remote"] == "\(expected.answers["site"]?["remote"] ?? 0)", "\(day)")
            }

            // Compaction folds the writers' shard rows into one row per day (and answer) and
            // changes no figure.
            let shardRows = try await Self.shardRows(server, campus)
            let folded = try await StatisticsStore(client: server.pool).compact(campus: campus.id, before: to.adding(days: 1))
            #expect(folded == shardRows)
            #expect(try await Self.shardRows(server, campus) == 0)
            let perDay = try await server.pool.query(
                "SELECT count(*) AS rows, count(DISTINCT local_date) AS days FROM daily_stats WHERE campus_id = \(campus.id)",
                campus: campus.id.rawValue)[0]
            #expect(try perDay.decode("rows", as: Int.self) == perDay.decode("days", as: Int.self))
            let compacted = try await api.send(
                .get, "/v1/campuses/north/admin/dashboard?from=\(from)&to=\(to)", template: "/v1/campuses/{campus}/admin/dashboard",
                token: admin)
            #expect(NSDictionary(dictionary: compacted.json).isEqual(to: dashboard.json))
            #expect(try await StatisticsStore(client: server.pool).compact(campus: campus.id, before: to.adding(days: 1)) == 0)
        }
    }

    /// A settled day (before `StatisticsStore.firstOpenDay`) is read once and kept; an open
    /// day is read on every request; a day missing from what is kept has the whole range
    /// read again; and one campus's kept days are never another's. Rollups are changed
    /// by hand between requests, which no server does to a settled day, to see where each
    /// figure came from.
    @Test func settledDaysAreKeptAndOpenDaysAreReadEveryTime() async throws {
        let now = Date()
        let server = try await TestServer.make(clock: TestClock(now).read)
        let north = try await server.campus("north"), south = try await server.campus("south")
        let (_, northAdmin) = try await server.user("admin@example.edu", at: north, roles: [.admin])
        let (_, southAdmin) = try await server.user("admin@example.edu", at: south, roles: [.admin])
        let open = StatisticsStore.firstOpenDay(at: now)
        let (older, settled) = (open.adding(days: -2), open.adding(days: -1))
        @Sendable func set(_ campus: Campus, _ date: LocalDate, submitted: Int) async throws {
            try await server.pool.query(
                """
                INSERT INTO daily_stats (campus_id, local_date, shard, submitted, on_time) VALUES (\(campus.id), \(date), 0, \(submitted), \(submitted))
                ON CONFLICT (campus_id, local_date, shard) DO UPDATE SET submitted = EXCLUDED.submitted, on_time = EXCLUDED.on_time
                """, campus: campus.id.rawValue)
        }
        try await set(north, older, submitted: 3)
        try await set(north, settled, submitted: 5)
        try await set(north, open, submitted: 7)
        try await set(south, settled, submitted: 50)
        try await set(south, open, submitted: 70)
        try await server.run { api in
            func submitted(_ slug: String, _ token: String, from: LocalDate, to: LocalDate) async throws -> [Int] {
                let response = try await api.send(
                    .get, "/v1/campuses/\(slug)/admin/dashboard?from=\(from)&to=\(to)", template: "/v1/campuses/{campus}/admin/dashboard",
                    token: token)
                #expect(response.status == 200, "\(response.json)")
                let days = try #require(response.json["days"] as? [[String: Any]])
                #expect(days.map { $0["date"] as? String } == DateRange(from: from, to: to).dates.map(\.description))
                return days.map { $0["submitted"] as? Int ?? -1 }
            }
            #expect(try await submitted("north", northAdmin, from: settled, to: open) == [5, 7])
            try await set(north, settled, submitted: 6)
            try await set(north, open, submitted: 8)
            // The settled day as it was read; the open day as it is now.
            #expect(try await submitted("north", northAdmin, from: settled, to: open) == [5, 8])
            #expect(try await submitted("north", northAdmin, from: settled, to: settled) == [5])
            // South's days are its own, the same dates kept for north notwithstanding.
            #expect(try await submitted("south", southAdmin, from: settled, to: open) == [50, 70])
            // A store without kept days (the CLI's report) reads the database.
            let fresh = try await StatisticsStore(client: server.pool).days(campus: north.id, range: DateRange(from: settled, to: open))
            #expect(fresh.map(\.submitted) == [6, 8])
            // A range built backwards (`DateRange.parse` refuses one) reads nothing and traps nowhere.
            #expect(try await StatisticsStore(client: server.pool).days(campus: north.id, range: DateRange(from: open, to: older)).isEmpty)
            #expect(DateRange(from: open, to: older).dates.isEmpty)
            // A settled day not kept yet: the range is read whole, and its settled days kept.
            #expect(try await submitted("north", northAdmin, from: older, to: open) == [3, 6, 8])
            try await set(north, older, submitted: 4)
            #expect(try await submitted("north", northAdmin, from: older, to: settled) == [3, 6])
        }
    }

    /// A server writes a range's settled days once and keeps what it wrote with their totals:
    /// asked again, it writes only the open days, and the body is what writing every day
    /// afresh gives, the totals too, with an open day's change in both.
    @Test func writtenSettledDaysAreWhatWritingThemAfreshGives() async throws {
        let now = Date()
        let server = try await TestServer.make(clock: TestClock(now).read)
        let north = try await server.campus("north"), south = try await server.campus("south")
        for campus in [north, south] {
            _ = try await QuestionnaireStore(client: server.pool).publish(campus: campus, draft: Self.draft, actor: "test")
        }
        let (_, admin) = try await server.user("admin@example.edu", at: north, roles: [.admin])
        let (_, southAdmin) = try await server.user("admin@example.edu", at: south, roles: [.admin])
        let open = StatisticsStore.firstOpenDay(at: now)
        let (from, to) = (open.adding(days: -3), open.adding(days: 1))
        @Sendable func set(_ campus: Campus, _ date: LocalDate, submitted: Int, fever: Int, site: Int) async throws {
            try await server.pool.query(
                """
                INSERT INTO daily_stats (campus_id, local_date, shard, submitted, on_time, late, green, yellow, red)
                VALUES (\(campus.id), \(date), 0, \(submitted), \(submitted - 1), 1, \(submitted - fever), \(fever), 0)
                ON CONFLICT (campus_id, local_date, shard) DO UPDATE
                SET submitted = EXCLUDED.submitted, on_time = EXCLUDED.on_time, green = EXCLUDED.green, yellow = EXCLUDED.yellow
                """, campus: campus.id.rawValue)
            for (question, answer, count) in [("fever", "true", fever), ("fever", "false", submitted - fever), ("site", "remote", site)] {
                try await server.pool.query(
                    """
                    INSERT INTO daily_answer_counts (campus_id, local_date, question_id, answer, shard, count)
                    VALUES (\(campus.id), \(date), \(question), \(answer), 0, \(count))
                    ON CONFLICT (campus_id, local_date, question_id, answer, shard) DO UPDATE SET count = EXCLUDED.count
                    """, campus: campus.id.rawValue)
            }
        }
        for (offset, date) in DateRange(from: from, to: to).dates.enumerated() {
            try await set(north, date, submitted: 10 + offset, fever: offset, site: 2 * offset + 1)
            try await set(south, date, submitted: 100 + offset, fever: 50, site: 1)
        }
        /// The dashboard written afresh from the database, by `JSONEncoder`.
        @Sendable func afresh(_ campus: Campus) async throws -> NSDictionary? {
            let days = try await StatisticsStore(client: server.pool).days(campus: campus.id, range: DateRange(from: from, to: to))
            func figures(
                _ date: String?, active: Int, submitted: Int, onTime: Int, late: Int, missing: Int, green: Int, yellow: Int, red: Int,
                answers: [String: [String: Int]], rate: Double?
            ) -> StatisticsRoutes.DashboardFigures {
                .init(
                    date: date, activeMembers: active, submitted: submitted, onTime: onTime, late: late, missing: missing,
                    colors: .init(green: green, yellow: yellow, red: red),
                    symptoms: ["fever": answers["fever"]?["true"] ?? 0, "cough": answers["cough"]?["true"] ?? 0], answers: answers,
                    complianceRate: rate)
            }
            let total = RangeTotals(days)
            let body = StatisticsRoutes.DashboardBody(
                from: from.description, to: to.description,
                days: days.map {
                    figures(
                        $0.date.description, active: $0.active, submitted: $0.submitted, onTime: $0.onTime, late: $0.late,
                        missing: $0.missing,
                        green: $0.green, yellow: $0.yellow, red: $0.red, answers: $0.answers, rate: $0.complianceRate)
                },
                total: figures(
                    nil, active: total.activeMembers, submitted: total.submitted, onTime: total.onTime, late: total.late,
                    missing: total.missing,
                    green: total.green, yellow: total.yellow, red: total.red, answers: total.answers, rate: total.complianceRate))
            return try JSONSerialization.jsonObject(with: JSONEncoder().encode(body)) as? NSDictionary
        }
        try await server.run { api in
            func dashboard(_ slug: String, _ token: String) async throws -> (body: String, json: NSDictionary?) {
                let response = try await api.send(
                    .get, "/v1/campuses/\(slug)/admin/dashboard?from=\(from)&to=\(to)", template: "/v1/campuses/{campus}/admin/dashboard",
                    token: token)
                #expect(response.status == 200, "\(response.body)")
                return (response.body, try JSONSerialization.jsonObject(with: Data(response.body.utf8)) as? NSDictionary)
            }
            let first = try await dashboard("north", admin)
            let expected = try await afresh(north)
            #expect(expected != nil && first.json == expected, "\(first.body)")
            let total = try #require(first.json?["total"] as? [String: Any])
            #expect(
                total["submitted"] as? Int == (10...14).reduce(0, +)
                    && (total["symptoms"] as? [String: Int])?["fever"] == (0...4).reduce(0, +))
            // Asked again: the settled days as written the first time, byte for byte.
            #expect(try await dashboard("north", admin).body == first.body)
            // South's days, the same dates and survey, are its own.
            let southFirst = try await dashboard("south", southAdmin)
            #expect(southFirst.json == (try await afresh(south)) && southFirst.body != first.body)
            // An open day changes: it and the totals show it, the settled days as they were.
            try await set(north, open, submitted: 40, fever: 9, site: 0)
            let changed = try await dashboard("north", admin)
            #expect(changed.json == (try await afresh(north)), "\(changed.body)")
            let changedTotal = try #require(changed.json?["total"] as? [String: Any])
            #expect(changedTotal["submitted"] as? Int == (10...14).reduce(0, +) - 13 + 40)
            let days = try #require(changed.json?["days"] as? [NSDictionary])
            #expect(days.prefix(3) == (first.json?["days"] as? [NSDictionary])?.prefix(3))
        }
    }

    /// Rollup rows outside shard 0, in both rollup tables.
    static func shardRows(_ server: TestServer, _ campus: Campus) async throws -> Int {
        try await server.pool.query(
            """
            SELECT (SELECT count(*) FROM daily_stats WHERE campus_id = \(campus.id) AND shard <> 0)
                 + (SELECT count(*) FROM daily_answer_counts WHERE campus_id = \(campus.id) AND shard <> 0) AS n
            """, campus: campus.id.rawValue)[0].decode("n", as: Int.self)
    }

    @Test func theDirectlyWrittenDashboardIsWhatJSONEncoderWrites() throws {
        typealias Figures = StatisticsRoutes.DashboardFigures
        let day = Figures(
            date: "2026-11-20", activeMembers: 1_200, submitted: 997, onTime: 990, late: 7, missing: 203,
            colors: .init(green: 900, yellow: 90, red: 7), symptoms: ["fever": 12, "cough": 0, "naïve \"q\"\n": 3],
            answers: ["fever": ["true": 12, "false": 985], "mood": ["good": 1], "naïve \"q\"\n": ["true": 3]], complianceRate: 0.830833)
        let empty = Figures(
            date: "2026-11-21", activeMembers: 0, submitted: 0, onTime: 0, late: 0, missing: 0, colors: .init(green: 0, yellow: 0, red: 0),
            symptoms: [:], answers: [:], complianceRate: nil)
        var total = day
        total.date = nil
        total.complianceRate = 1
        let body = StatisticsRoutes.DashboardBody(from: "2026-11-20", to: "2026-11-21", days: [day, empty], total: total)
        let direct = try JSONSerialization.jsonObject(with: Data(body.json.text.utf8)) as? NSDictionary
        let encoded = try JSONSerialization.jsonObject(with: JSONEncoder().encode(body)) as? NSDictionary
        #expect(direct != nil && direct == encoded, "\(body.json.text)")
        // Keys sorted, so the same figures give the same bytes.
        #expect(body.json.text.contains(#""symptoms":{"cough":0,"fever":12,"naïve \"q\"\n":3}"#), "\(body.json.text)")
    }

    @Test func smallCountsAreSuppressedForMembers() async throws {
        let today = LocalDate(Date(), in: Self.zone)
        let (busy, quiet) = (today.adding(days: 1), today.adding(days: 2))
        let clock = TestClock(busy.start(in: Self.zone).addingTimeInterval(8 * 3600))
        let server = try await TestServer.make(clock: clock.read)
        let campus = try await server.campus("north")
        _ = try await QuestionnaireStore(client: server.pool).publish(campus: campus, draft: Self.draft, actor: "test")
        var members: [String] = []
        for index in 0..<12 { members.append(try await server.user("m\(index)@example.edu", at: campus).token) }
        let tokens = members
        try await server.run { api in
            // Busy day: 12 attestations, 2 with a fever (yellow under the standard rule), none coughing.
            for (index, token) in tokens.enumerated() {
                let body = #"{"surveyVersion": 1, "answers": {"fever": \#(index < 2), "cough": false}}"#
                #expect(
                    try await api.send(
                        .post, "/v1/campuses/north/attestations", template: "/v1/campuses/{campus}/attestations", token: token, json: body
                    ).status == 201)
            }
            // Quiet day: 9, under the default threshold of 10.
            clock.set(quiet.start(in: Self.zone).addingTimeInterval(8 * 3600))
            for token in tokens.prefix(9) {
                let body = #"{"surveyVersion": 1, "answers": {"fever": false, "cough": false}}"#
                #expect(
                    try await api.send(
                        .post, "/v1/campuses/north/attestations", template: "/v1/campuses/{campus}/attestations", token: token, json: body
                    ).status == 201)
            }
            let stats = try await api.send(
                .get, "/v1/campuses/north/stats?from=\(busy)&to=\(quiet)", template: "/v1/campuses/{campus}/stats", token: tokens[5])
            let days = try #require(stats.json["days"] as? [[String: Any]])
            #expect(stats.json["minCount"] as? Int == 10)
            let busyDay = days[0], quietDay = days[1]
            #expect(busyDay["suppressed"] as? Bool == false)
            #expect(busyDay["submitted"] as? Int == 12)
            // 2 yellow could be singled out, and so could they be by subtraction: 100 − green − red.
            // Red is hidden with them, and since yellow and red together are still 2, green too.
            let colors = try #require(busyDay["colors"] as? [String: Any])
            #expect(colors["yellow"] is NSNull)
            #expect(colors["red"] is NSNull)
            #expect(colors["green"] is NSNull)
            let symptoms = try #require(busyDay["symptoms"] as? [String: Any])
            #expect(symptoms["fever"] is NSNull)
            #expect(symptoms["cough"] as? Double == 0)  // nobody coughed, and 12 did not: nothing to single out
            #expect(quietDay["suppressed"] as? Bool == true)
            #expect(quietDay["submitted"] is NSNull)
            #expect((quietDay["colors"] as? [String: Any])?["green"] is NSNull)
        }
    }

    @Test func followUpsAreForHealthOfficersAndEveryReadIsAudited() async throws {
        let today = LocalDate(Date(), in: Self.zone)
        let day = today.adding(days: 1)
        let clock = TestClock(day.start(in: Self.zone).addingTimeInterval(8 * 3600))
        let server = try await TestServer.make(clock: clock.read)
        let campus = try await server.campus("north")
        let other = try await server.campus("south")
        _ = try await QuestionnaireStore(client: server.pool).publish(campus: campus, draft: Self.draft, actor: "test")
        let (_, member) = try await server.user("member@example.edu", at: campus)
        let (_, feverish) = try await server.user("feverish@example.edu", at: campus)
        let (_, positive) = try await server.user("positive@example.edu", at: campus)
        let (_, admin) = try await server.user("admin@example.edu", at: campus, roles: [.admin])
        let (_, officer) = try await server.user("officer@example.edu", at: campus, roles: [.healthOfficer])
        let (_, elsewhere) = try await server.user("officer@example.edu", at: other, roles: [.healthOfficer, .admin])
        let path = "/v1/campuses/{campus}/admin/follow-ups"
        try await server.run { api in
            for (token, answers) in [
                (member, #"{"fever": false, "cough": false}"#), (feverish, #"{"fever": true, "cough": false}"#),
                (positive, #"{"fever": false, "cough": false, "positive_test": true}"#),
            ] {
                let reply = try await api.send(
                    .post, "/v1/campuses/north/attestations", template: "/v1/campuses/{campus}/attestations", token: token,
                    json: #"{"surveyVersion": 1, "answers": \#(answers)}"#)
                #expect(reply.status == 201)
            }
            let url = "/v1/campuses/north/admin/follow-ups?date=\(day)"
            #expect(try await api.send(.get, url, template: path, token: member).status == 403)
            #expect(try await api.send(.get, url, template: path, token: admin).status == 403)
            #expect(try await api.send(.get, url, template: path).status == 401)
            #expect(try await api.send(.get, url, template: path, token: elsewhere).status == 401)
            #expect(
                try await api.send(
                    .get, "/v1/campuses/north/admin/dashboard?from=\(day)&to=\(day)", template: "/v1/campuses/{campus}/admin/dashboard",
                    token: member
                ).status == 403)
            #expect(
                try await api.send(
                    .get, "/v1/campuses/north/admin/dashboard?from=\(day)&to=\(day)", template: "/v1/campuses/{campus}/admin/dashboard",
                    token: elsewhere
                ).status == 401)
            #expect(
                try await api.send(
                    .get, "/v1/campuses/north/stats?from=\(day)&to=\(day)", template: "/v1/campuses/{campus}/stats", token: elsewhere
                ).status == 401)

            let list = try await api.send(.get, url, template: path, token: officer)
            #expect(list.status == 200)
            #expect(list.headers[.cacheControl] == "no-store")
            let items = try #require(list.json["items"] as? [[String: Any]])
            #expect(items.map { $0["email"] as? String } == ["positive@example.edu", "feverish@example.edu"])  // red first
            #expect(items.map { $0["color"] as? String } == ["red", "yellow"])
            #expect(items[1]["name"] as? String == "feverish@example.edu")
            #expect((items[1]["reason"] as? String)?.isEmpty == false)
            let reds = try await api.send(.get, url + "&color=red", template: path, token: officer)
            #expect((reds.json["items"] as? [[String: Any]])?.count == 1)
            let otherDay = try await api.send(.get, "/v1/campuses/north/admin/follow-ups?date=\(today)", template: path, token: officer)
            #expect((otherDay.json["items"] as? [[String: Any]])?.isEmpty == true)

            let audit = try await AuditLog(client: server.pool).entries(campus: campus.id).filter { $0.action == "follow-ups.read" }
            #expect(audit.count == 3)
            #expect(audit.allSatisfy { $0.actor == "user:officer@example.edu" })
            #expect(audit.map { $0.details["colors"] } == ["red,yellow", "red", "red,yellow"])
            #expect(audit.map { $0.details["date"] } == [day.description, day.description, today.description])
            #expect(audit[0].details["rows"] == "2")
            // A refused read is not a read: nothing was audited for the member's or admin's tries.
            #expect(try await AuditLog(client: server.pool).entries(campus: other.id).filter { $0.action == "follow-ups.read" }.isEmpty)
        }
    }

    /// A page at a time: following nextCursor gives the whole list in its order, each member
    /// once, where several submitted at the same instant (the cursor's tie-break) and some
    /// at other instants; every page read is audited.
    @Test func followUpsArePagedWithoutGapsOrRepeats() async throws {
        let day = LocalDate(Date(), in: Self.zone).adding(days: 1)
        let clock = TestClock(day.start(in: Self.zone).addingTimeInterval(8 * 3600))
        let server = try await TestServer.make(clock: clock.read)
        let campus = try await server.campus("north")
        _ = try await QuestionnaireStore(client: server.pool).publish(campus: campus, draft: Self.draft, actor: "test")
        let (_, officer) = try await server.user("officer@example.edu", at: campus, roles: [.healthOfficer])
        let path = "/v1/campuses/{campus}/admin/follow-ups"
        try await server.run { api in
            // 3 red and 6 yellow, in three instants (minute 0, 0, 0, 1, 1, 1, ...), and one green;
            // emails sort against the order members are made in, so neither stands in for the id.
            for index in 0..<10 {
                let (_, token) = try await server.user("m\(9 - index)@example.edu", at: campus)
                clock.set(day.start(in: Self.zone).addingTimeInterval(8 * 3600 + Double(index / 3) * 60))
                let answers =
                    index == 9
                    ? #"{"fever": false, "cough": false}"#
                    : index % 3 == 1 ? #"{"fever": false, "cough": false, "positive_test": true}"# : #"{"fever": true, "cough": false}"#
                let reply = try await api.send(
                    .post, "/v1/campuses/north/attestations", template: "/v1/campuses/{campus}/attestations", token: token,
                    json: #"{"surveyVersion": 1, "answers": \#(answers)}"#)
                #expect(reply.status == 201)
            }
            func read(_ query: String) async throws -> (ids: [String], colors: [String], next: String?) {
                let reply = try await api.send(
                    .get, "/v1/campuses/north/admin/follow-ups?date=\(day)" + query, template: path, token: officer)
                #expect(reply.status == 200, "\(query)")
                let items = try #require(reply.json["items"] as? [[String: Any]])
                let ids: [String] = items.compactMap { $0["userId"] as? String }
                let colors: [String] = items.compactMap { $0["color"] as? String }
                return (ids, colors, reply.json["nextCursor"] as? String)
            }
            let whole = try await read("")
            #expect(whole.ids.count == 9 && Set(whole.ids).count == 9)
            #expect(whole.colors == Array(repeating: "red", count: 3) + Array(repeating: "yellow", count: 6))
            #expect(whole.next == nil)
            for (filter, size, expected) in [("", 2, whole.ids), ("", 4, whole.ids), ("&color=yellow", 2, Array(whole.ids.suffix(6)))] {
                var pages: [[String]] = [], cursor: String? = nil
                repeat {
                    let page = try await read(filter + "&limit=\(size)" + (cursor.map { "&cursor=\($0)" } ?? ""))
                    pages.append(page.ids)
                    cursor = page.next
                } while cursor != nil && pages.count < 10
                let joined: [String] = Array(pages.joined())
                #expect(joined == expected, "\(filter) by \(size)")
                #expect(pages.dropLast().allSatisfy { $0.count == size } && pages.last?.isEmpty == false, "\(filter) by \(size)")
            }
            let audit = try await AuditLog(client: server.pool).entries(campus: campus.id).filter { $0.action == "follow-ups.read" }
            // The whole list, then 5 + 3 + 3 pages; the first page of each list is not a continuation.
            #expect(audit.count == 12)
            #expect(audit.filter { $0.details["continued"] == "false" }.count == 4)
            let rows: [Int] = audit.compactMap { entry in entry.details["rows"].flatMap { Int($0) } }
            #expect(rows.reduce(0, +) == 33)  // 9 + 9 + 9 + 6
        }
    }

    @Test func badRangesAndFiltersAre422NamingTheField() async throws {
        let server = try await TestServer.make()
        let campus = try await server.campus("north")
        let (_, admin) = try await server.user("admin@example.edu", at: campus, roles: [.admin, .healthOfficer])
        try await server.run { api in
            func fields(_ url: String, _ template: String) async throws -> [String] {
                let reply = try await api.send(.get, url, template: template, token: admin)
                #expect(reply.status == 422, "\(url)")
                return reply.problem.fields
            }
            let dashboard = "/v1/campuses/{campus}/admin/dashboard", stats = "/v1/campuses/{campus}/stats"
            #expect(try await fields("/v1/campuses/north/stats", stats) == ["from", "to"])
            #expect(try await fields("/v1/campuses/north/stats?from=2026-11-01&to=2026-13-01", stats) == ["to"])
            #expect(try await fields("/v1/campuses/north/stats?from=2026-02-30&to=2026-03-01", stats) == ["from"])
            #expect(try await fields("/v1/campuses/north/admin/dashboard?from=2026-11-10&to=2026-11-01", dashboard) == ["to"])
            #expect(try await fields("/v1/campuses/north/admin/dashboard?from=2025-01-01&to=2026-01-02", dashboard) == ["to"])
            let yearOK = try await api.send(
                .get, "/v1/campuses/north/admin/dashboard?from=2024-01-01&to=2024-12-31", template: dashboard, token: admin)
            #expect(yearOK.status == 200)  // 366 days in a leap year: the most allowed
            #expect((yearOK.json["days"] as? [Any])?.count == 366)
            let followUps = "/v1/campuses/{campus}/admin/follow-ups"
            #expect(try await fields("/v1/campuses/north/admin/follow-ups", followUps) == ["date"])
            #expect(try await fields("/v1/campuses/north/admin/follow-ups?date=2026-11-21&color=green", followUps) == ["color"])
            #expect(
                try await fields("/v1/campuses/north/admin/follow-ups?date=yesterday&email=x", followUps).sorted() == ["date", "email"])
            #expect(try await fields("/v1/campuses/north/admin/follow-ups?date=2026-11-21&limit=0", followUps) == ["limit"])
            #expect(try await fields("/v1/campuses/north/admin/follow-ups?date=2026-11-21&limit=1001", followUps) == ["limit"])
            #expect(try await fields("/v1/campuses/north/admin/follow-ups?date=2026-11-21&limit=ten", followUps) == ["limit"])
            for cursor in [
                "x", "r.12", "g.12.00000000-0000-0000-0000-000000000000", "r.-12.00000000-0000-0000-0000-000000000000",
                "r.99999999999999999999.00000000-0000-0000-0000-000000000000", "y.12.not-a-uuid",
            ] {
                #expect(
                    try await fields("/v1/campuses/north/admin/follow-ups?date=2026-11-21&cursor=\(cursor)", followUps) == ["cursor"],
                    "\(cursor)")
            }
            #expect(try await AuditLog(client: server.pool).entries(campus: campus.id).filter { $0.action == "follow-ups.read" }.isEmpty)
        }
    }

    /// The purge removes old answers and keeps badges and rollups; a dry run changes nothing;
    /// the daily run is claimed once per campus day.
    @Test func purgeRemovesOldAnswersAndKeepsRollups() async throws {
        let today = LocalDate(Date(), in: Self.zone)
        let clock = TestClock(today.adding(days: 1).start(in: Self.zone).addingTimeInterval(8 * 3600))
        let server = try await TestServer.make(clock: clock.read)
        let campus = try await server.campus("north")
        _ = try await CampusStore(client: server.pool).set(slug: "north", key: "retention-days", value: "7", actor: "test")
        _ = try await QuestionnaireStore(client: server.pool).publish(campus: campus, draft: Self.draft, actor: "test")
        let (_, token) = try await server.user("m@example.edu", at: campus)
        let (_, admin) = try await server.user("admin@example.edu", at: campus, roles: [.admin])
        let days = (1...12).map { today.adding(days: $0) }
        let dashboardURL = "/v1/campuses/north/admin/dashboard?from=\(days.first!)&to=\(days.last!)"
        try await server.run { api in
            for day in days {
                clock.set(day.start(in: Self.zone).addingTimeInterval(8 * 3600))
                let reply = try await api.send(
                    .post, "/v1/campuses/north/attestations", template: "/v1/campuses/{campus}/attestations", token: token,
                    json: #"{"surveyVersion": 1, "answers": {"fever": true, "cough": false}}"#)
                #expect(reply.status == 201)
            }
            let before = try await api.send(.get, dashboardURL, template: "/v1/campuses/{campus}/admin/dashboard", token: admin).json

            let found = try await CampusStore(client: server.pool).require(slug: "north")
            let now = days.last!.start(in: Self.zone).addingTimeInterval(12 * 3600)
            let purger = RetentionPurger(client: server.pool)
            let dry = try await purger.purge(campus: found, now: now, dryRun: true, actor: "test")
            // Kept: the last 7 days and today; purged: days before today − 7.
            let cutoff = days.last!.adding(days: -7)
            #expect(dry.cutoff == cutoff)
            #expect(dry.purged == days.filter { $0 < cutoff }.count)
            func withAnswers() async throws -> [LocalDate] {
                try await server.pool.query(
                    "SELECT local_date FROM attestations WHERE campus_id = \(campus.id) AND answers IS NOT NULL ORDER BY local_date",
                    campus: campus.id.rawValue
                ).map { try $0.decode("local_date", as: LocalDate.self) }
            }
            #expect(try await withAnswers() == days)

            let done = try await purger.purge(campus: found, now: now, dryRun: false, actor: "cli:test")
            #expect(done.purged == dry.purged)
            #expect(try await withAnswers() == days.filter { $0 >= cutoff })
            #expect(try await purger.purge(campus: found, now: now, dryRun: false, actor: "cli:test").purged == 0)
            let purgedRows = try await server.pool.query(
                "SELECT count(*) AS n FROM attestations WHERE campus_id = \(campus.id) AND answers_purged_at IS NOT NULL AND color = 'yellow'",
                campus: campus.id.rawValue)
            #expect(try purgedRows[0].decode("n", as: Int.self) == dry.purged)  // badges stay
            let after = try await api.send(.get, dashboardURL, template: "/v1/campuses/{campus}/admin/dashboard", token: admin).json
            #expect(!before.isEmpty)
            #expect(NSDictionary(dictionary: after).isEqual(to: before))
            // The member's own history shows the purged days with null answers.
            let history = try await api.send(
                .get, "/v1/campuses/north/me/attestations?limit=100", template: "/v1/campuses/{campus}/me/attestations", token: token)
            let items = try #require(history.json["items"] as? [[String: Any]])
            #expect(items.count == days.count)
            #expect(items.filter { $0["answers"] is NSNull }.count == dry.purged)

            let audit = try await AuditLog(client: server.pool).entries(campus: campus.id).filter { $0.action == "answers.purged" }
            #expect(audit.count == 1)
            #expect(audit.first?.actor == "cli:test")
            #expect(audit.first?.details["attestations"] == "\(dry.purged)")

            // The daily run: one claim per campus-local day, however many servers ask.
            let claims = try await withThrowingTaskGroup(of: Bool.self) { group in
                for _ in 0..<4 { group.addTask { try await purger.claimDailyRun(campus: found, now: now) } }
                return try await group.reduce(into: [Bool]()) { $0.append($1) }
            }
            #expect(claims.filter { $0 }.count == 1)
            #expect(try await purger.claimDailyRun(campus: found, now: now.addingTimeInterval(86_400)))
            // The servers' service: two days on, the cutoff has moved two days; run again the
            // same day, it does nothing.
            let service = RetentionService(
                client: server.pool, logger: TestDatabase.testLogger, clock: { now.addingTimeInterval(2 * 86_400) })
            #expect(await service.runOnce().map(\.purged) == [2])
            #expect(await service.runOnce().isEmpty)
            #expect(try await withAnswers() == days.filter { $0 >= cutoff.adding(days: 2) })
            // The same daily run folded the rollups of the finished days into shard 0.
            #expect(try await Self.shardRows(server, campus) == 0)
            let compacted = try await api.send(.get, dashboardURL, template: "/v1/campuses/{campus}/admin/dashboard", token: admin).json
            #expect(NSDictionary(dictionary: compacted).isEqual(to: before))
        }
    }

    /// Seeded instants agree with their campus-local dates, the deadline and the end of the
    /// day, through a year of daylight-saving changes north and south of the equator; north's
    /// deadline of 02:30 puts on-time minutes around the changes themselves, and Santiago's
    /// clocks change at midnight, so one day has no 00:00 to 00:59 (its deadline is 00:30) and
    /// one ends with an hour twice. A seed of more than one slice names existing members in
    /// every slice, and every seeded member holds the member role alone.
    @Test func seededInstantsAreCampusLocal() async throws {
        let server = try await TestServer.make()
        let environment: [String: String?] = ["DATABASE_URL": TestDatabase.url(database: server.database)]
        for (slug, zone, deadline) in [
            ("north", "America/New_York", 150), ("south", "Pacific/Auckland", 600), ("chile", "America/Santiago", 30),
        ] {
            let campus = try await server.campus(slug, timeZone: zone, deadlineMinute: deadline)
            let seeded = try await ChildProcess.run(
                [ChildProcess.attestBinary, "dev", "seed", "--campus", slug, "--members", "20", "--days", "400"], environment: environment)
            #expect(seeded.status == 0, "\(seeded.stderr)")
            let row = try #require(
                try await server.pool.query(
                    """
                    SELECT count(*) AS n, count(*) FILTER (WHERE a.on_time) AS on_time, count(DISTINCT a.user_id) AS members,
                           count(*) FILTER (WHERE (a.submitted_at AT TIME ZONE c.time_zone)::date <> a.local_date
                               OR a.on_time <> ((a.submitted_at AT TIME ZONE c.time_zone)::time
                                                < make_time(c.deadline_minute / 60, c.deadline_minute % 60, 0))
                               OR a.valid_until <> (a.local_date + 1)::timestamp AT TIME ZONE c.time_zone) AS wrong
                    FROM attestations a JOIN campuses c ON c.id = a.campus_id
                    WHERE a.campus_id = \(campus.id)
                    """, campus: campus.id.rawValue
                ).first)
            let count = try row.decode("n", as: Int.self), onTime = try row.decode("on_time", as: Int.self)
            #expect(count > 7_000 && count < 7_700, "\(slug): \(count) attestations of 20 members over 400 days")
            #expect(onTime > 0 && onTime < count)
            #expect(try row.decode("members", as: Int.self) == 20)
            #expect(try row.decode("wrong", as: Int.self) == 0, "\(slug)")
        }
        // More members than one slice (2,500): the second slice's rows name its own members.
        let wide = try await server.campus("wide")
        let seeded = try await ChildProcess.run(
            [ChildProcess.attestBinary, "dev", "seed", "--campus", "wide", "--members", "2600", "--days", "2"], environment: environment)
        #expect(seeded.status == 0, "\(seeded.stderr)")
        let row = try #require(
            try await server.pool.query(
                """
                SELECT count(*) AS n, count(DISTINCT a.user_id) AS members, count(*) FILTER (WHERE u.id IS NULL) AS orphans,
                       (SELECT count(*) FROM users m WHERE m.campus_id = \(wide.id) AND m.roles <> '{member}') AS roleless
                FROM attestations a LEFT JOIN users u ON u.campus_id = a.campus_id AND u.id = a.user_id
                WHERE a.campus_id = \(wide.id)
                """, campus: wide.id.rawValue
            ).first)
        #expect(try row.decode("orphans", as: Int.self) == 0)
        // Each seeded member holds the member role alone, as one who signed in does.
        #expect(try row.decode("roleless", as: Int.self) == 0)
        #expect(try row.decode("members", as: Int.self) > 2_500)
        #expect(try row.decode("n", as: Int.self) > 4_600)
    }

    /// Connected as an ordinary role, for which the server refuses `COPY` into a table with
    /// row-level security, the seed goes through a temporary table, with every row's
    /// foreign keys checked; its rollups still match its rows, across two slices.
    @Test func anOrdinaryRoleSeedsThroughATemporaryTable() async throws {
        let server = try await TestServer.make()
        let campus = try await server.campus("north")
        let role = "seeder_\(UUID().uuidString.prefix(8).lowercased())"
        let admin = TestDatabase.client(database: server.database, role: nil, maxConnections: 1)
        _ = try await admin.withConnection { try await $0.runScript(unsafeSQL: "CREATE ROLE \(role) LOGIN NOSUPERUSER IN ROLE attest_app") }
        let environment: [String: String?] = ["DATABASE_URL": TestDatabase.url(database: server.database) + " user=\(role)"]
        // Without the right to temporary tables: refused before anything is stored, with the fix.
        _ = try await admin.withConnection {
            try await $0.runScript(unsafeSQL: "REVOKE TEMPORARY ON DATABASE \(server.database) FROM PUBLIC")
        }
        let refused = try await ChildProcess.run(
            [ChildProcess.attestBinary, "dev", "seed", "--campus", "north", "--members", "10", "--days", "3"], environment: environment)
        #expect(refused.status == 1)
        #expect(
            refused.stderr.contains("role \"attest_app\" may not create temporary tables in database \"\(server.database)\""),
            "\(refused.stderr)")
        #expect(refused.stderr.contains("GRANT TEMPORARY ON DATABASE \"\(server.database)\" TO \"attest_app\""), "\(refused.stderr)")
        let leftBehind = try await server.pool.query(
            """
            SELECT (SELECT count(*) FROM users WHERE campus_id = \(campus.id)) + (SELECT count(*) FROM questionnaires WHERE campus_id = \(campus.id)) AS n
            """, campus: campus.id.rawValue)[0].decode("n", as: Int.self)
        #expect(leftBehind == 0, "nothing stored, not even the demo survey")
        _ = try await admin.withConnection { try await $0.runScript(unsafeSQL: "GRANT TEMPORARY ON DATABASE \(server.database) TO PUBLIC") }

        let seeded = try await ChildProcess.run(
            [ChildProcess.attestBinary, "dev", "seed", "--campus", "north", "--members", "2600", "--days", "3"], environment: environment)
        _ = try await admin.withConnection { try await $0.runScript(unsafeSQL: "DROP ROLE \(role)") }
        await admin.shutdown()
        #expect(seeded.status == 0, "\(seeded.stderr)")
        #expect(seeded.stdout.contains("Seeded north: 2600 members"), "\(seeded.stdout)")
        #expect(!seeded.stdout.contains("superuser"), "\(seeded.stdout)")
        let today = LocalDate(Date(), in: Self.zone)
        let range = (1...3).map { today.adding(days: -$0) }.reversed().map { $0 }
        let counted = try await Self.recount(server, campus, days: range)
        let days = try await StatisticsStore(client: server.pool).days(
            campus: campus.id, range: DateRange(from: range.first!, to: range.last!))
        #expect(days.count == 3)
        // A standby that cannot be reached (DATABASE_READ_URL): the same figures, from the primary.
        let unreachable = PostgresClient(
            configuration: PostgresConfiguration(connectionString: "postgresql://127.0.0.1:1/attest?connect_timeout=2"),
            options: .init(maxConnections: 1), logger: TestDatabase.testLogger)
        let fallback = try await StatisticsStore(client: server.pool, reader: unreachable)
            .days(campus: campus.id, range: DateRange(from: range.first!, to: range.last!))
        await unreachable.shutdown()
        #expect(fallback == days)
        for day in days {
            let expected = try #require(counted[day.date])
            #expect(expected.submitted > 2_100, "\(day.date): about 92% of 2,600 attest")
            #expect(day.submitted == expected.submitted && day.onTime == expected.onTime, "\(day.date)")
            #expect(day.green == expected.green && day.yellow == expected.yellow && day.red == expected.red, "\(day.date)")
        }
        // Each symptom's yeses, recounted from the stored answers (the demo survey's).
        let yeses = try await server.pool.query(
            """
            SELECT local_date, key, count(*) AS n FROM attestations, jsonb_each(answers)
            WHERE campus_id = \(campus.id) AND value = 'true'::jsonb GROUP BY local_date, key
            """, campus: campus.id.rawValue)
        var stored: [String: Int] = [:]
        for row in yeses {
            stored["\(try row.decode("local_date", as: LocalDate.self))/\(try row.decode("key", as: String.self))"] = try row.decode("n")
        }
        var rolled: [String: Int] = [:]
        for day in days { for (question, counts) in day.answers { rolled["\(day.date)/\(question)"] = counts["true"] } }
        #expect(stored.count > 20)
        #expect(rolled == stored)
        let orphans = try await server.pool.query(
            """
            SELECT count(*) AS n FROM attestations a LEFT JOIN users u ON u.campus_id = a.campus_id AND u.id = a.user_id
            WHERE a.campus_id = \(campus.id) AND u.id IS NULL
            """, campus: campus.id.rawValue)[0].decode("n", as: Int.self)
        #expect(orphans == 0)
    }

    /// `attest dev seed` writes history whose rollups match its attestations, and an
    /// identifiable report of it is audited.
    @Test func seededHistoryAddsUpAndIdentifiableReportsAreAudited() async throws {
        let server = try await TestServer.make()
        let campus = try await server.campus("north")
        let (_, admin) = try await server.user("admin@example.edu", at: campus, roles: [.admin])
        let environment: [String: String?] = ["DATABASE_URL": TestDatabase.url(database: server.database)]
        let seeded = try await ChildProcess.run(
            [ChildProcess.attestBinary, "dev", "seed", "--campus", "north", "--members", "60", "--days", "20"], environment: environment)
        #expect(seeded.status == 0, "\(seeded.stderr)")
        #expect(seeded.stdout.contains("published the demo survey"))
        #expect(seeded.stdout.contains("Seeded north: 60 members"))
        // The tests connect as a superuser: the slices go back to it from the application role.
        #expect(seeded.stdout.contains("(as a superuser: per-row foreign-key checks skipped)"), "\(seeded.stdout)")
        #expect(try await Self.shardRows(server, campus) == 0, "the seed compacts its rollups")
        let today = LocalDate(Date(), in: Self.zone)
        let range = (1...21).map { today.adding(days: -$0) }.reversed().map { $0 }
        let counted = try await Self.recount(server, campus, days: range)
        #expect(counted[range[0]]?.submitted == 0)  // the day before the history starts
        #expect(counted[range[1]]?.active == 60)
        // The demo survey's symptom counts, recounted from the stored answers.
        let rows = try await server.pool.query(
            """
            SELECT local_date, key, count(*) AS n FROM attestations, jsonb_each(answers)
            WHERE campus_id = \(campus.id) AND value = 'true'::jsonb GROUP BY local_date, key
            """, campus: campus.id.rawValue)
        let days = try await StatisticsStore(client: server.pool).days(
            campus: campus.id, range: DateRange(from: range.first!, to: range.last!))
        var stored: [String: Int] = [:]
        for row in rows {
            stored["\(try row.decode("local_date", as: LocalDate.self))/\(try row.decode("key", as: String.self))"] = try row.decode("n")
        }
        var rolled: [String: Int] = [:]
        for day in days { for (question, counts) in day.answers { rolled["\(day.date)/\(question)"] = counts["true"] } }
        #expect(!stored.isEmpty)
        #expect(rolled == stored)

        let report = try await ChildProcess.run(
            [
                ChildProcess.attestBinary, "report", "north", "--from", range.first!.description, "--to", range.last!.description,
                "--format", "json", "--identifiable",
            ], environment: environment)
        #expect(report.status == 0, "\(report.stderr)")
        let listed = try JSONSerialization.jsonObject(with: Data(report.stdout.utf8)) as? [String: Any]
        let attestations = try #require(listed?["attestations"] as? [[String: Any]])
        #expect(attestations.count == counted.values.map(\.submitted).reduce(0, +))
        #expect(attestations.first?["email"] as? String != nil)
        #expect(attestations.allSatisfy { $0["answers"] == nil })
        let audit = try await AuditLog(client: server.pool).entries(campus: campus.id).filter { $0.action == "report.identifiable" }
        #expect(audit.count == 1)
        #expect(audit.first?.actor.hasPrefix("cli:") == true)
        #expect(audit.first?.details["rows"] == "\(attestations.count)")
        // An aggregate report is not identifiable: no entry.
        _ = try await ChildProcess.run(
            [ChildProcess.attestBinary, "report", "north", "--from", range.first!.description, "--to", range.last!.description],
            environment: environment)
        #expect(try await AuditLog(client: server.pool).entries(campus: campus.id).filter { $0.action == "report.identifiable" }.count == 1)
        let bad = try await ChildProcess.run(
            [ChildProcess.attestBinary, "report", "north", "--from", "2026-11-10", "--to", "2026-11-01"], environment: environment)
        #expect(bad.status == 1)
        #expect(bad.stderr.contains("--to must not be before --from (2026-11-10)"), "\(bad.stderr)")
        let long = try await ChildProcess.run(
            [ChildProcess.attestBinary, "report", "north", "--from", "2025-01-01", "--to", "2026-01-02"], environment: environment)
        #expect(long.status == 1)
        #expect(
            long.stderr.contains("--to must be at most 365 days after --from (2025-01-01): a range spans at most 366 days, this one 367"),
            "\(long.stderr)")
        try await server.run { api in
            let reply = try await api.send(
                .get, "/v1/campuses/north/admin/dashboard?from=\(range.first!)&to=\(range.last!)",
                template: "/v1/campuses/{campus}/admin/dashboard", token: admin)
            let days = try #require(reply.json["days"] as? [[String: Any]])
            for (day, figures) in zip(range, days) {
                let expected = try #require(counted[day])
                #expect(figures["activeMembers"] as? Int == expected.active, "\(day)")
                #expect(figures["submitted"] as? Int == expected.submitted, "\(day)")
                #expect(figures["onTime"] as? Int == expected.onTime, "\(day)")
                #expect(
                    figures["colors"] as? [String: Int] == ["green": expected.green, "yellow": expected.yellow, "red": expected.red],
                    "\(day)")
            }
        }
    }

    /// An identifiable report is read a page at a time and written as it goes: every row
    /// once, in order, across pages; valid JSON and CSV whatever the page size; `--out` is
    /// whole or absent; the read is audited before it starts.
    @Test func identifiableReportsArePagedAndWrittenWhole() async throws {
        let server = try await TestServer.make()
        let campus = try await server.campus("north")
        let environment: [String: String?] = ["DATABASE_URL": TestDatabase.url(database: server.database)]
        let seeded = try await ChildProcess.run(
            [ChildProcess.attestBinary, "dev", "seed", "--campus", "north", "--members", "30", "--days", "10"], environment: environment)
        #expect(seeded.status == 0, "\(seeded.stderr)")
        // A name CSV must quote and guard as a formula, and JSON must escape.
        let awkward = "=Doe, \"Jo\"\nSecond line"
        try await server.pool.query(
            "UPDATE users SET display_name = \(awkward) WHERE campus_id = \(campus.id) AND id = (SELECT id FROM users WHERE campus_id = \(campus.id) ORDER BY id LIMIT 1)",
            campus: campus.id.rawValue)
        let today = LocalDate(Date(), in: Self.zone)
        let range = DateRange(from: today.adding(days: -10), to: today.adding(days: -1))
        let expected = try await server.pool.query(
            """
            SELECT a.local_date::text AS date, u.email FROM attestations a JOIN users u ON u.campus_id = a.campus_id AND u.id = a.user_id
            WHERE a.campus_id = \(campus.id) AND a.local_date BETWEEN \(range.from) AND \(range.to) ORDER BY a.local_date, u.email
            """, campus: campus.id.rawValue
        ).map { "\(try $0.decode("date", as: String.self)) \(try $0.decode("email", as: String.self))" }
        #expect(expected.count > 200)

        // The store: pages of at most 7, all full but the last, every row once and in order.
        var pages: [[StatisticsStore.IdentifiedAttestation]] = []
        let total = try await StatisticsStore(client: server.pool).exportIdentified(
            campus: campus.id, range: range, actor: "test", pageSize: 7
        ) { pages.append($0) }
        #expect(total == expected.count)
        #expect(pages.dropLast().allSatisfy { $0.count == 7 } && (1...7).contains(pages.last?.count ?? 0))
        #expect(pages.joined().map { "\($0.date) \($0.email)" } == expected)
        let audited = try await AuditLog(client: server.pool).entries(campus: campus.id).filter { $0.action == "report.identifiable" }
        #expect(audited.map { $0.details["rows"] } == ["\(expected.count)"])

        // The CLI, through small pages: JSON that parses, CSV with one line per row.
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("report-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let base = [
            ChildProcess.attestBinary, "report", "north", "--from", range.from.description, "--to", range.to.description, "--identifiable",
            "--page-size", "7",
        ]
        let json = try await ChildProcess.run(base + ["--format", "json"], environment: environment)
        #expect(json.status == 0, "\(json.stderr)")
        let listed = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: [[String: Any]]])
        let objects = try #require(listed["attestations"])
        #expect(objects.map { "\($0["date"] as? String ?? "") \($0["email"] as? String ?? "")" } == expected)
        #expect(objects.contains { $0["name"] as? String == awkward })
        #expect(objects.allSatisfy { Set($0.keys) == ["date", "email", "name", "color", "reason", "onTime", "submittedAt"] })

        let file = directory.appendingPathComponent("report.csv").path
        // A `.partial` left readable by a run that stopped: the new report's is still its owner's alone.
        #expect(
            FileManager.default.createFile(atPath: file + ".partial", contents: Data("old".utf8), attributes: [.posixPermissions: 0o644]))
        let csv = try await ChildProcess.run(base + ["--out", file], environment: environment)
        #expect(csv.status == 0, "\(csv.stderr)")
        #expect(csv.stderr.contains("Wrote \(file)."))
        #expect(!FileManager.default.fileExists(atPath: file + ".partial"))
        let permissions = try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int
        #expect(permissions == 0o600, "an identifiable report is for its owner only")
        let text = try String(contentsOfFile: file, encoding: .utf8)
        #expect(text.hasPrefix("date,email,name,color,reason,on_time,submitted_at\n"))
        #expect(text.contains(#","'=Doe, ""Jo""\#nSecond line","#))
        // One line per row, plus the header and the line inside each quoted awkward name.
        let awkwardRows = objects.filter { $0["name"] as? String == awkward }.count
        #expect(text.split(separator: "\n").count == 1 + expected.count + awkwardRows)

        // A directory that is not there: refused before anything is read (no audit entry).
        let nowhere = try await ChildProcess.run(
            base.dropLast(2) + ["--out", directory.path + "/missing/report.csv"], environment: environment)
        #expect(nowhere.status == 1)
        #expect(
            nowhere.stderr.contains("cannot write") && nowhere.stderr.contains("No such file or directory")
                && nowhere.stderr.contains("check the directory exists"), "\(nowhere.stderr)")
        // A directory for --out: refused by name, and no `.partial` written beside it.
        let intoDirectory = try await ChildProcess.run(base.dropLast(2) + ["--out", directory.path], environment: environment)
        #expect(intoDirectory.status == 1)
        #expect(
            intoDirectory.stderr.contains(
                "--out \(directory.path) is a directory: give the path of a file, such as \(directory.path)/report.csv"),
            "\(intoDirectory.stderr)")
        #expect(!FileManager.default.fileExists(atPath: directory.path + ".partial"))
        let entries = try await AuditLog(client: server.pool).entries(campus: campus.id).filter { $0.action == "report.identifiable" }
        #expect(entries.count == 3)  // the store's, the JSON's and the CSV's; none for the refused one
    }

    /// What stays hidden so that no count from 1 to minCount − 1 can be read off a day, alone
    /// or by subtracting what is shown from the total.
    @Test func suppressionLeavesNoSmallCountToSubtract() {
        #expect(SmallCounts.hidden([90, 0, 12], minCount: 10) == [])
        #expect(SmallCounts.hidden([95, 3, 12], minCount: 10) == [1, 2])  // yellow, and red with it
        #expect(SmallCounts.hidden([100, 3, 0], minCount: 10) == [0, 1, 2])  // red 0 with yellow 3: still 3 in all
        #expect(SmallCounts.hidden([80, 4, 7], minCount: 10) == [1, 2])  // two small ones that make 11
        #expect(SmallCounts.hidden([2, 3, 4], minCount: 10) == [0, 1, 2])
        #expect(SmallCounts.hidden([5, 0, 0], minCount: 0) == [])
        // Whatever the counts, the shown cells never let a hidden small count be worked out.
        var generator = SeededGenerator(seed: Fuzz.seed)
        for _ in 0..<5_000 {
            let minCount = Int.random(in: 1...12, using: &generator)
            let counts = (0..<3).map { _ in Int.random(in: 0...25, using: &generator) }
            let hidden = SmallCounts.hidden(counts, minCount: minCount)
            let gap = counts.indices.filter(hidden.contains).reduce(0) { $0 + counts[$1] }
            #expect(hidden.isEmpty || hidden.count == counts.count || gap >= minCount, "\(counts) min \(minCount) hides \(hidden)")
            #expect(hidden.count != 1, "\(counts) min \(minCount): one hidden cell is the total minus the rest")
            #expect(counts.indices.allSatisfy { hidden.contains($0) || !(1..<minCount).contains(counts[$0]) }, "\(counts)")
        }
        #expect(SmallCounts.hidesYes(2, of: 12, minCount: 10) && SmallCounts.hidesYes(10, of: 12, minCount: 10))
        #expect(!SmallCounts.hidesYes(0, of: 12, minCount: 10) && !SmallCounts.hidesYes(12, of: 12, minCount: 10))
    }
}
