import AttestPostgres
import AttestTestSupport
import Foundation
import Tenancy
import Testing

@Suite("attest dev, end to end")
struct DevCommandTests {
    @Test func createsAClusterServesTheDemoCampusStopsItAndReusesItNextTime() async throws {
        let directory = "/tmp/attest-dev-\(UUID().uuidString.prefix(8))"
        defer {
            // Should a run fail half-way, leave no server behind.
            _ = try? ChildProcess([
                "/bin/sh", "-c",
                "runuser -u postgres -- \"$ATTEST_PG_BIN/pg_ctl\" stop -D \(directory)/pgdata -m immediate || \"$ATTEST_PG_BIN/pg_ctl\" stop -D \(directory)/pgdata -m immediate",
            ])
            try? FileManager.default.removeItem(atPath: directory)
        }
        let port = try LoopbackHTTP.freePort()
        let passedBefore = Self.deadlineHasPassed(minute: 600)
        let eight = Self.clockAtEight()  // the demo's members are reminded at 08:00
        let first = try ChildProcess(
            [ChildProcess.attestBinary, "dev", "--port", "\(port)", "--data-dir", directory],
            environment: ["DATABASE_URL": nil])
        try await LoopbackHTTP.waitFor(port: port, path: "/readyz", timeout: .seconds(90), while: first)
        #expect(first.stdout.contains("Demo campus:  demo"))
        #expect(first.stdout.contains("http://127.0.0.1:\(port)/readyz"))
        // Reminders: the window a member's time is chosen in, and after the deadline how to
        // open the rest of the day (unless the deadline passed while the server started).
        #expect(first.stdout.contains("(America/New_York, daily deadline 10:00)"))
        #expect(first.stdout.contains("/c/demo/settings sets yours: a time from 00:00 to 10:00, America/New_York time"))
        if passedBefore == Self.deadlineHasPassed(minute: 600) {
            #expect(first.stdout.contains("attest campus set demo deadline 23:59 (and back with 10:00)") == passedBefore)
        }
        if geteuid() == 0 { #expect(first.stdout.contains("runs as the unprivileged 'postgres' system user")) }

        // Only a Unix socket, in the data directory; its URL is saved for other commands.
        let url = try String(contentsOfFile: directory + "/database-url", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(url.contains("host=%2Ftmp%2Fattest-dev-"))
        let config = try String(contentsOfFile: directory + "/pgdata/postgresql.conf", encoding: .utf8)
        #expect(config.contains("listen_addresses = ''"))
        let client = PostgresClient(
            configuration: PostgresConfiguration(connectionString: url, applicationName: "attest-dev-test"), logger: TestDatabase.testLogger
        )
        // The server logs in as a member of attest_app that owns nothing, as `serve` must.
        let logins = try await client.query(
            "SELECT DISTINCT usename FROM pg_stat_activity WHERE datname = 'attest' AND application_name = 'attest'")
        #expect(try logins.map { try $0.decode("usename", as: String.self) } == ["attest_server"])
        let campus = try await client.query("SELECT slug, time_zone, deadline_minute FROM campuses")
        #expect(campus.count == 1)
        #expect(try campus[0].decode("slug", as: String.self) == "demo")
        #expect(try campus[0].decode("time_zone", as: String.self) == "America/New_York")
        #expect(try campus[0].decode("deadline_minute", as: Int.self) == 600)
        // The demo campus shows made-up community figures: two months ending today.
        let community = try await client.query(
            """
            SELECT c.community_region, p.plugin_id, (SELECT count(*) FROM community_days WHERE dataset = 'demo') AS days,
                   (SELECT max(day) FROM community_days WHERE dataset = 'demo') = (now() AT TIME ZONE 'America/New_York')::date AS current
            FROM campuses c JOIN campus_plugins p ON p.campus_id = c.id AND p.kind = 'community-data'
            """)
        #expect(try community.first?.decode("community_region", as: String.self) == "demo-county")
        #expect(try community.first?.decode("plugin_id", as: String.self) == "imported")
        #expect(try community.first?.decode("days", as: Int.self) == 180)  // two months each of the county, the nation and the world
        #expect(try community.first?.decode("current", as: Bool.self) == true)
        // Episodes there get made-up weather: the demo's own context provider.
        let context = try await client.query("SELECT plugin_id FROM campus_plugins WHERE kind = 'context'")
        #expect(try context.map { try $0.decode("plugin_id", as: String.self) } == ["made-up"])
        await client.shutdown()
        // Other commands reach a data directory other than ./.attest through the environment
        // the banner names (they look only in ./.attest): the URL and the cluster's own key.
        let environment = "DATABASE_URL=@\(directory)/database-url ATTEST_KEK_FILE=\(directory)/kek"
        #expect(first.stdout.contains("(saved in \(directory)/database-url; other attest commands use it with \(environment))"))
        let named: [String: String?] = [
            "DATABASE_URL": "@\(directory)/database-url", "ATTEST_KEK_FILE": "\(directory)/kek", "ATTEST_KEK": nil,
        ]
        // The key is the cluster's: `push keys new` refuses one no campus's badge keys are sealed under.
        let vapid = try await ChildProcess.run([ChildProcess.attestBinary, "push", "keys", "new", "demo"], environment: named)
        #expect(vapid.status == 0, "\(vapid.stderr)")
        let withoutKey = try await ChildProcess.run(
            [ChildProcess.attestBinary, "push", "keys", "new", "demo"],
            environment: ["DATABASE_URL": "@\(directory)/database-url", "ATTEST_KEK": nil])
        #expect(withoutKey.status == 1 && withoutKey.stderr.contains("pass --kek-file"), "\(withoutKey.stderr)")
        // Moved by an operator (here to midnight, always passed): the next run says so.
        let moved = try await ChildProcess.run(
            [ChildProcess.attestBinary, "campus", "set", "demo", "deadline", "00:00"], environment: named)
        #expect(moved.status == 0, "\(moved.stderr)")

        // The demo campus takes visitors: a visit's code is printed here, and it works.
        #expect(first.stdout.contains("/c/demo/visit"))
        let visit = try await LoopbackHTTP.request(
            "POST", port: port, path: "/v1/campuses/demo/guests/visits", headers: ["Content-Type": "application/json"],
            body: #"{"name": "Vera Visitor", "email": "vera@visitor.example.org", "host": "Alice Member"}"#)
        #expect(visit.status == 201, "\(visit.body)")
        let visitID = try #require(try JSONSerialization.jsonObject(with: Data(visit.body.utf8)) as? [String: Any])["id"] as? String
        var code: String?
        for _ in 0..<100 where code == nil {
            code = first.stdout.components(separatedBy: "Subject: ").dropFirst().last.map { String($0.prefix(6)) }
            if code == nil { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(first.stdout.contains("a visitor's code") && first.stdout.contains("To: vera@visitor.example.org"))
        let pass = try await LoopbackHTTP.request(
            "POST", port: port, path: "/v1/campuses/demo/guests/visits/\(visitID ?? "")/verify",
            headers: ["Content-Type": "application/json"], body: #"{"code": "\#(code ?? "")"}"#)
        #expect(pass.status == 200, "\(pass.body)")
        // What was due before the start is not all printed at once (only 08:00 itself could print one).
        if eight == Self.clockAtEight(), eight.0 == eight.1 {
            #expect(!first.stdout.contains("Subject: Reminder"), "\(first.stdout)")
        }

        first.signal(SIGTERM)
        #expect(try await first.wait(timeout: .seconds(30)) == 0)
        #expect(first.stdout.contains("run `attest dev --data-dir \(directory)` again to resume"))
        #expect(!FileManager.default.fileExists(atPath: directory + "/pgdata/postmaster.pid"), "PostgreSQL still running")

        // A second run reuses the cluster and its data, and stops on Ctrl-C (SIGINT) too.
        let second = try ChildProcess(
            [ChildProcess.attestBinary, "dev", "--port", "\(port)", "--data-dir", directory],
            environment: ["DATABASE_URL": nil])
        try await LoopbackHTTP.waitFor(port: port, path: "/readyz", timeout: .seconds(60), while: second)
        #expect(!second.stderr.contains("creating a PostgreSQL cluster"))
        #expect(second.stdout.contains("(America/New_York, daily deadline 00:00)"))
        #expect(second.stdout.contains("attest campus set demo deadline 23:59 (and back with 00:00)"))
        let again = PostgresClient(configuration: PostgresConfiguration(connectionString: url), logger: TestDatabase.testLogger)
        #expect(try await again.query("SELECT count(*) AS n FROM campuses")[0].decode("n", as: Int.self) == 1)
        // The demo machines' tokens the first start printed are revoked: this start's alone work.
        let tokens = try await again.query(
            "SELECT name, count(*) FILTER (WHERE revoked_at IS NULL)::int AS live, count(*)::int AS issued FROM machine_tokens GROUP BY name ORDER BY name"
        )
        #expect(
            try tokens.map {
                "\(try $0.decode("name", as: String.self)) \(try $0.decode("live", as: Int.self))/\(try $0.decode("issued", as: Int.self))"
            }
                == ["demo-directory 1/2", "demo-lab 1/2"])
        await again.shutdown()
        second.signal(SIGINT)
        #expect(try await second.wait(timeout: .seconds(30)) == 0)
        #expect(!FileManager.default.fileExists(atPath: directory + "/pgdata/postmaster.pid"))
    }

    /// Whether New York's clock has reached 08:00, and 08:01: the same when it is not 08:00 there.
    static func clockAtEight() -> (Bool, Bool) { (deadlineHasPassed(minute: 480), deadlineHasPassed(minute: 481)) }

    /// Whether the demo campus's clock (New York) shows `minute` or later now.
    static func deadlineHasPassed(minute: Int) -> Bool {
        CampusSchedule.hasPassed(minute: minute, in: TimeZone(identifier: "America/New_York") ?? .gmt, at: Date())
    }

    @Test func aDataDirectoryTooDeepForASocketIsRefusedClearly() async throws {
        let deep = "/tmp/" + String(repeating: "d", count: 100)
        let result = try await ChildProcess.run([ChildProcess.attestBinary, "dev", "--data-dir", deep])
        #expect(result.status == 1)
        #expect(result.stderr.contains("too deep for a Unix socket"))
        #expect(result.stderr.split(separator: "\n").count == 1)
        #expect(!FileManager.default.fileExists(atPath: deep))
    }
}
