import AttestPlugins
import AttestPluginsTesting
import AttestTestSupport
import Foundation
import Identity
import Surveys
import Tenancy
import Testing

@testable import AttestServer

/// The door mode (issue 60): a screener names the door, each verdict the server gives there is
/// counted per door and campus-local hour (colour, guest or member, refusal), never who; the
/// same badge shown again at once is counted once; admins read the counts (`admin/doors`) and
/// their CSV, which Python's csv module reads back.
@Suite("Counts per door")
struct DoorCountTests {
    static let doorsPath = "/v1/campuses/{campus}/admin/doors"

    static func verify(_ api: APIClient, _ token: String, door: String?, as screener: String) async throws -> APIClient.Reply {
        var body: [String: Any] = ["token": token]
        if let door { body["door"] = door }
        let json = String(decoding: try JSONSerialization.data(withJSONObject: body), as: UTF8.self)
        return try await api.send(.post, "/v1/campuses/north/badges/verify", template: BadgeTests.verifyPath, token: screener, json: json)
    }

    @Test func eachVerdictIsCountedAtItsDoorAndHourAndNeverWho() async throws {
        let clock = try TestClock("2026-11-20T14:30:00Z")  // 09:30 in New York
        let (server, north) = try await AttestationTests.setUp(clock: clock)
        let (_, green) = try await server.user("green@example.edu", at: north)
        let (_, yellow) = try await server.user("yellow@example.edu", at: north)
        let (_, screener) = try await server.user("door@example.edu", at: north, roles: [.screener])
        let (_, other) = try await server.user("gate@example.edu", at: north, roles: [.screener])
        let (_, admin) = try await server.user("admin@example.edu", at: north, roles: [.admin])
        let library = "Library east entrance", hall = #"Hall "B", north"#
        try await server.run { api in
            var tokens: [String: String] = [:]
            for (who, answers) in [(green, #"{"fever": false, "cough": false}"#), (yellow, #"{"fever": true, "cough": false}"#)] {
                let submitted = try await api.send(
                    .post, "/v1/campuses/north/attestations", template: BadgeTests.submitPath, token: who,
                    json: AttestationTests.body(answers))
                #expect(submitted.status == 201)
                let badge = try await api.send(.get, "/v1/campuses/north/me/badge", template: BadgeTests.badgePath, token: who)
                tokens[who] = try #require(badge.json["token"] as? String)
            }
            let greenToken = try #require(tokens[green]), yellowToken = try #require(tokens[yellow])

            // Spaces trimmed and made one, a control character dropped: one door.
            #expect(
                try await Self.verify(api, greenToken, door: "  Library   east\u{7}  entrance ", as: screener).json["valid"] as? Bool
                    == true)
            // Shown again to the same screener at once: counted once; to another screener: counted.
            #expect(try await Self.verify(api, greenToken, door: library, as: screener).status == 200)
            #expect(try await Self.verify(api, greenToken, door: library, as: other).status == 200)
            #expect(try await Self.verify(api, yellowToken, door: library, as: screener).json["color"] as? String == "yellow")
            let garbage = try await Self.verify(api, "a.b.c", door: library, as: screener)
            #expect(garbage.json["reason"] as? String == "malformed")
            // No door named (or only spaces): checked, not counted.
            #expect(try await Self.verify(api, yellowToken, door: nil, as: other).status == 200)
            #expect(try await Self.verify(api, greenToken, door: "   ", as: other).status == 200)
            #expect(try await Self.verify(api, yellowToken, door: hall, as: other).status == 200)
            // A name too long is a 422 naming the door, for verify and for scan (before the image is read).
            let long = try await Self.verify(api, greenToken, door: String(repeating: "é", count: 81), as: screener)
            #expect(long.status == 422 && long.problem.fields == ["door"], "\(long.body)")
            // Counted as sent, as the schema's maxLength counts: a control character dropped
            // later does not make 81 scalars fit (Schemathesis found this).
            let sneaky = try await Self.verify(
                api, greenToken, door: "\u{AB153}\u{8B}\u{A5}" + String(repeating: "*", count: 78), as: screener)
            #expect(sneaky.status == 422 && sneaky.problem.fields == ["door"], "\(sneaky.body)")
            #expect(long.body.contains("at most 80 characters, got 81"))
            let scan = try await api.send(
                .post, "/v1/campuses/north/badges/scan?door=" + String(repeating: "x", count: 81), template: BadgeScanTests.scanPath,
                token: screener, bytes: [0xFF, 0xD8, 0xFF], contentType: "image/jpeg")
            #expect(scan.status == 422 && scan.problem.fields == ["door"], "\(scan.body)")

            // An hour later (10:40 in New York), and tomorrow's badge is refused as expired.
            clock.advance(by: 70 * 60)
            #expect(try await Self.verify(api, greenToken, door: library, as: screener).status == 200)
            clock.advance(by: 24 * 3600)
            #expect(try await Self.verify(api, greenToken, door: library, as: screener).json["reason"] as? String == "expired")
            await server.services.doorCounts.flush()

            let doors = try await api.send(
                .get, "/v1/campuses/north/admin/doors?from=2026-11-20&to=2026-11-21", template: Self.doorsPath, token: admin)
            #expect(doors.status == 200, "\(doors.body)")
            let items = try #require(doors.json["doors"] as? [[String: Any]])
            #expect(items.map { $0["door"] as? String } == [hall, library])
            let libraryItem = try #require(items.last)
            let total = try #require(libraryItem["total"] as? [String: Any])
            #expect(total["members"] as? [String: Int] == ["green": 3, "yellow": 1, "red": 0, "gray": 0])
            #expect(total["guests"] as? [String: Int] == ["green": 0, "yellow": 0, "red": 0, "gray": 0])
            #expect(total["refused"] as? [String: Int] == ["malformed": 1, "expired": 1])
            #expect(total["count"] as? Int == 6)
            #expect(total["hour"] == nil)
            let hours = try #require(libraryItem["hours"] as? [[String: Any]])
            #expect(
                hours.map { $0["hour"] as? String }
                    == ["2026-11-20T09:00:00-05:00", "2026-11-20T10:00:00-05:00", "2026-11-21T10:00:00-05:00"])
            #expect(hours.map { $0["count"] as? Int } == [4, 1, 1])
            // One day's range holds that day's hours only.
            let oneDay = try await api.send(
                .get, "/v1/campuses/north/admin/doors?from=2026-11-21&to=2026-11-21", template: Self.doorsPath, token: admin)
            #expect((oneDay.json["doors"] as? [[String: Any]])?.map { $0["door"] as? String } == [library])
            // Admins only; a bad range names its field.
            #expect(
                try await api.send(
                    .get, "/v1/campuses/north/admin/doors?from=2026-11-20&to=2026-11-20", template: Self.doorsPath, token: screener
                ).status == 403)
            let bad = try await api.send(
                .get, "/v1/campuses/north/admin/doors?from=2026-11-20&to=yesterday", template: Self.doorsPath, token: admin)
            #expect(bad.status == 422 && bad.problem.fields == ["to"], "\(bad.body)")
            // Hours over more than a quarter would be a million rows at a busy campus: 422 naming `to`.
            let year = try await api.send(
                .get, "/v1/campuses/north/admin/doors?from=2026-01-01&to=2026-11-21", template: Self.doorsPath, token: admin)
            #expect(year.status == 422 && year.problem.fields == ["to"], "\(year.body)")
            #expect(year.body.contains("at most 91 days after from (2026-01-01) for counts by hour, this range spans 325 days"))

            // Never who: the table has no column that could name a member, a subject or a token.
            let columns: [String] = try await server.pool.query(
                "SELECT column_name FROM information_schema.columns WHERE table_name = 'door_counts' ORDER BY ordinal_position"
            ).map { try $0.decode("column_name") }
            #expect(columns == ["campus_id", "door", "hour", "verdict", "guest", "count"])

            // The dashboard's totals, summed in the database over any range, and its last day.
            let wholeYear = try #require(try? DateRange.parse(from: "2026-01-01", to: "2026-12-31"))
            let totals = try await server.services.doorCounts.totals(campus: north, range: wholeYear)
            #expect(totals.doors.map(\.door) == [hall, library])
            #expect(totals.doors.last?.members == ["green": 3, "yellow": 1])
            #expect(totals.doors.last?.refused == ["malformed": 1, "expired": 1])
            #expect(totals.lastDay == LocalDate("2026-11-21"))

            // The CSV, read back by Python's csv module.
            let range = try #require(try? DateRange.parse(from: "2026-11-20", to: "2026-11-21"))
            let csv = DoorCounts.csv(try await server.services.doorCounts.hours(campus: north, range: range), campus: north)
            let rows = try await WriterOracleTests.pythonCSV(Data(csv.utf8))
            #expect(
                rows == [
                    ["door", "hour", "badge", "verdict", "count"],
                    [hall, "2026-11-20T09:00:00-05:00", "member", "yellow", "1"],
                    [library, "2026-11-20T09:00:00-05:00", "member", "green", "2"],
                    [library, "2026-11-20T09:00:00-05:00", "member", "yellow", "1"],
                    [library, "2026-11-20T09:00:00-05:00", "refused", "malformed", "1"],
                    [library, "2026-11-20T10:00:00-05:00", "member", "green", "1"],
                    [library, "2026-11-21T10:00:00-05:00", "refused", "expired", "1"],
                ])

            // The same file from the admin's dashboard, by its link (the last 30 days), and refused
            // to a screener; a range too long for hours is a page saying so, not a file.
            let page = WebClient(api.client)
            page.cookies.withLock { $0["attest-north"] = admin }
            let dashboard = try await page.get("/c/north/admin")
            let link = try #require(
                dashboard.body.firstMatch(of: /href="([^"]*admin\/doors\.csv[^"]*)"/).map { String($0.output.1) }, "the link")
            let file = try await page.get(link.replacingOccurrences(of: "&amp;", with: "&"))
            #expect(
                file.status == 200 && file.headers[.contentType] == "text/csv; charset=utf-8", "\(file.status) \(file.body.prefix(300))")
            #expect(file.headers[.contentDisposition] == "attachment; filename=\"north-doors-2026-10-23-2026-11-21.csv\"")
            #expect(try await WriterOracleTests.pythonCSV(Data(file.body.utf8)) == (try await WriterOracleTests.pythonCSV(Data(csv.utf8))))
            let desk = WebClient(api.client)
            desk.cookies.withLock { $0["attest-north"] = screener }
            #expect(try await desk.get("/c/north/admin/doors.csv").status == 403)
            let tooLong = try await page.get("/c/north/admin/doors.csv?from=2026-01-01&to=2026-11-21")
            #expect(tooLong.status == 422 && tooLong.headers[.contentType]?.hasPrefix("text/html") == true, "\(tooLong.status)")
            #expect(tooLong.body.contains("at most 91 days after from (2026-01-01)"), "\(tooLong.body)")
        }
    }

    /// Counts from several flushes and servers add up; a campus sees only its own doors.
    @Test func countsAddUpAcrossFlushesAndStayWithTheirCampus() async throws {
        let clock = try TestClock("2026-11-20T14:30:00Z")
        let (server, north) = try await AttestationTests.setUp(clock: clock)
        let south = try await server.campus("south")
        let (_, southAdmin) = try await server.user("admin@example.edu", at: south, roles: [.admin])
        let (_, admin) = try await server.user("admin@example.edu", at: north, roles: [.admin])
        let first = DoorCounts(client: server.pool, logger: TestDatabase.testLogger)
        let second = DoorCounts(client: server.pool, logger: TestDatabase.testLogger)
        let door = try #require(try DoorName.parse("Gym"))
        for (index, counter) in [first, second, first].enumerated() {
            counter.count(
                .invalid(.expired), token: "t\(index)", door: door, campus: north, screener: UserID(UUID()), at: clock.read())
            await counter.flush()
        }
        try await server.run { api in
            let north = try await api.send(
                .get, "/v1/campuses/north/admin/doors?from=2026-11-20&to=2026-11-20", template: Self.doorsPath, token: admin)
            let items = try #require(north.json["doors"] as? [[String: Any]])
            #expect((items.first?["total"] as? [String: Any])?["refused"] as? [String: Int] == ["expired": 3])
            let southDoors = try await api.send(
                .get, "/v1/campuses/south/admin/doors?from=2026-11-20&to=2026-11-20", template: Self.doorsPath, token: southAdmin)
            #expect(southDoors.status == 200 && (southDoors.json["doors"] as? [Any])?.isEmpty == true, "\(southDoors.body)")
            // North's admin token is worth nothing at south.
            let crossed = try await api.send(
                .get, "/v1/campuses/south/admin/doors?from=2026-11-20&to=2026-11-20", template: Self.doorsPath, token: admin)
            #expect(crossed.status == 401 || crossed.status == 403, "\(crossed.status)")
        }
    }
}
