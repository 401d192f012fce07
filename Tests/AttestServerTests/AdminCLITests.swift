import AttestPlugins
import AttestPostgres
import AttestTestSupport
import BuiltinPlugins
import Foundation
import Identity
import Tenancy
import Testing

/// The admin CLI end to end: the real `attest` binary against a test database.
@Suite("Admin CLI")
struct AdminCLITests {
    struct CLI {
        let database: String
        func run(_ arguments: String..., directory: String? = nil) async throws -> (status: Int32, stdout: String, stderr: String) {
            try await ChildProcess.run(
                [ChildProcess.attestBinary] + arguments, environment: ["DATABASE_URL": TestDatabase.url(database: database)],
                directory: directory)
        }
    }

    static func cli() async throws -> CLI { CLI(database: try await TestDatabase.create()) }

    /// A failed command: exit 1, one line on stderr containing `text`.
    static func expectFailure(
        _ result: (status: Int32, stdout: String, stderr: String), _ text: String, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(result.status == 1, "\(result.stderr)", sourceLocation: sourceLocation)
        #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)", sourceLocation: sourceLocation)
        #expect(result.stderr.contains(text), "\(result.stderr)", sourceLocation: sourceLocation)
    }

    @Test func campusCreateListShowSetAndItsErrors() async throws {
        let cli = try await Self.cli()
        let created = try await cli.run(
            "campus", "create", "north-u", "--name", "North U", "--timezone", "Pacific/Auckland",
            "--deadline", "09:30", "--email-domain", "north.edu", "--json")
        #expect(created.status == 0, "\(created.stderr)")
        let object = try JSONSerialization.jsonObject(with: Data(created.stdout.utf8)) as? [String: Any]
        #expect(object?["deadline"] as? String == "09:30")
        #expect(object?["emailDomains"] as? [String] == ["north.edu"])

        Self.expectFailure(try await cli.run("campus", "create", "north-u", "--name", "Again", "--timezone", "UTC"), "already exists")
        Self.expectFailure(try await cli.run("campus", "create", "Bad_Slug", "--name", "X", "--timezone", "UTC"), "invalid campus slug")
        Self.expectFailure(
            try await cli.run("campus", "create", "mars", "--name", "Mars", "--timezone", "Mars/Olympus"),
            "unknown time zone \"Mars/Olympus\"")
        // A name is on one line: it is every page's title and each email's subject.
        Self.expectFailure(
            try await cli.run("campus", "create", "evil", "--name", "Evil\u{1B}[2J\r\nU", "--timezone", "UTC"),
            "the campus name must be 1 to 200 characters on one line")
        Self.expectFailure(try await cli.run("campus", "set", "north-u", "name", "   "), "the campus name must be")
        #expect(try await cli.run("campus", "set", "north-u", "timezone", "Asia/Kolkata").status == 0)
        #expect(try await cli.run("campus", "set", "north-u", "timezone", "Pacific/Auckland").status == 0)
        Self.expectFailure(
            try await cli.run("campus", "create", "late", "--name", "Late", "--timezone", "UTC", "--deadline", "25:00"),
            "invalid --deadline")
        Self.expectFailure(try await cli.run("campus", "show", "nowhere"), "no campus with slug \"nowhere\"")

        let list = try await cli.run("campus", "list", "--json")
        let campuses = try JSONSerialization.jsonObject(with: Data(list.stdout.utf8)) as? [[String: Any]]
        #expect(campuses?.map { $0["slug"] as? String } == ["north-u"])

        let unknownKey = try await cli.run("campus", "set", "north-u", "colour", "blue")
        #expect(unknownKey.status != 0)
        #expect(unknownKey.stderr.contains("unknown campus setting \"colour\""))
        #expect(unknownKey.stderr.contains("deadline") && unknownKey.stderr.contains("email-domains"))
        Self.expectFailure(try await cli.run("campus", "set", "north-u", "retention-days", "0"), "invalid value \"0\" for retention-days")
        Self.expectFailure(try await cli.run("campus", "set", "north-u", "settings", "[1]"), "expected a JSON object")
        Self.expectFailure(
            try await cli.run("campus", "set", "north-u", "settings", #"{"a": 1, "a": 2}"#),
            #"expected a JSON object such as {"key": "value"} (this is not JSON: the key "a" repeated at byte"#)
        Self.expectFailure(
            try await cli.run("campus", "set", "north-u", "settings", #"{"isolationDays": 1e400}"#),
            "(this is not JSON: a number too large for a double at byte")
        #expect(try await cli.run("campus", "set", "north-u", "deadline", "11:15").status == 0)
        #expect(try await cli.run("campus", "set", "north-u", "session-lifetime", "12h").status == 0)
        let shown = try await cli.run("campus", "show", "north-u")
        #expect(shown.stdout.contains("deadline:         11:15"))
        #expect(shown.stdout.contains("session-lifetime: 12h"))

        // `settings` merges: what other keys keep there stays (sign-in for the directory's
        // users only, guests), a key given null goes, and a key of its own is refused there.
        for (key, value) in [("provisioning", "scim-only"), ("guests", "on")] {
            #expect(try await cli.run("campus", "set", "north-u", key, value).status == 0)
        }
        for value in [
            #"{"shc-identity": "off", "isolationDays": 5}"#, #"{"isolationDays": 7, "episodeKinds": ["x"]}"#, #"{"episodeKinds": null}"#,
        ] {
            #expect(try await cli.run("campus", "set", "north-u", "settings", value).status == 0)
        }
        Self.expectFailure(
            try await cli.run("campus", "set", "north-u", "settings", #"{"provisioning": "open"}"#),
            #"without "provisioning", which is set (and checked) with its own key: attest campus set <slug> provisioning <value>"#)
        // The keys the product reads are checked (where a wrong value would quietly keep the default).
        let refused = try await cli.run(
            "campus", "set", "north-u", "settings",
            #"{"isolationDays": 61, "quarantineDays": 2.5, "shc-identity": "loose", "openLinks": "5", "episodeKinds": ["Cluster"], "redAt": 38}"#
        )
        #expect(refused.status != 0)
        for named in [
            "isolationDays: a whole number of days from 0 to 60", "quarantineDays: a whole number of days from 0 to 60",
            "shc-identity: off, lenient or strict", "openLinks: a whole number from 1 to 1000", "episodeKinds: an array of kinds",
        ] {
            #expect(refused.stderr.contains(named), "\(named): \(refused.stderr)")
        }
        #expect(!refused.stderr.contains("redAt"), "a plugin's own key passes")
        // A key a letter or two (or a letter case) from one the product reads is a typo, refused.
        let typos = try await cli.run(
            "campus", "set", "north-u", "settings", #"{"isolationDay": 5, "QuarantineDays": 3, "timeZone": "UTC", "note": "x"}"#)
        #expect(typos.status != 0)
        for named in [
            #"isolationDay: not a key Campus Attest reads; did you mean "isolationDays"?"#,
            #"QuarantineDays: not a key Campus Attest reads; did you mean "quarantineDays"?"#,
            "timeZone: not a key Campus Attest reads in settings; did you mean the setting timezone (attest campus set <slug> timezone <value>)?",
        ] {
            #expect(typos.stderr.contains(named), "\(named): \(typos.stderr)")
        }
        #expect(!typos.stderr.contains("note"), "a plugin's own key passes")
        // One kept before this check can still be removed.
        #expect(try await cli.run("campus", "set", "north-u", "settings", #"{"isolationDay": null}"#).status == 0)
        let merged = try await cli.run("campus", "show", "north-u", "--json")
        let settings = try #require(try JSONSerialization.jsonObject(with: Data(merged.stdout.utf8)) as? [String: Any])["settings"]
        #expect(
            NSDictionary(dictionary: try #require(settings as? [String: Any]))
                == ["provisioning": "scim-only", "guests": "on", "shc-identity": "off", "isolationDays": 7] as NSDictionary,
            "\(merged.stdout)")
    }

    @Test func usersRolesTokensAndTheAuditTrail() async throws {
        let cli = try await Self.cli()
        #expect(
            try await cli.run("campus", "create", "lab", "--name", "Lab", "--timezone", "Europe/Berlin", "--email-domain", "lab.org").status
                == 0)
        #expect(try await cli.run("user", "add", "lab", "Kim@Lab.org", "--name", "Kim").status == 0)
        Self.expectFailure(try await cli.run("user", "add", "lab", "kim@lab.org"), "already exists")
        Self.expectFailure(try await cli.run("user", "add", "lab", "kim@elsewhere.org"), "not in this campus's email domains")
        Self.expectFailure(try await cli.run("user", "add", "lab", "not an email"), "invalid email address")

        #expect(try await cli.run("role", "grant", "lab", "kim@lab.org", "health-officer").status == 0)
        let again = try await cli.run("role", "grant", "lab", "kim@lab.org", "health_officer")
        #expect(again.stdout.contains("already has"))
        Self.expectFailure(try await cli.run("role", "grant", "lab", "nobody@lab.org", "admin"), "no user with email nobody@lab.org")
        let badRole = try await cli.run("role", "grant", "lab", "kim@lab.org", "superuser")
        #expect(badRole.status != 0 && badRole.stderr.contains("unknown role \"superuser\""))
        let roles = try await cli.run("role", "list", "lab", "--json")
        #expect(roles.stdout.contains(#""roles":["health_officer"]"#))
        #expect(try await cli.run("role", "revoke", "lab", "kim@lab.org", "health_officer").status == 0)
        #expect(try await cli.run("role", "list", "lab").stdout.contains("No roles beyond member"))

        let issued = try await cli.run("token", "issue", "lab", "kim@lab.org", "--ttl", "1h")
        #expect(issued.status == 0)
        let token = issued.stdout.trimmingCharacters(in: .newlines)
        #expect(token.count == 43 && !token.contains(" "))
        Self.expectFailure(try await cli.run("token", "issue", "lab", "new@lab.org"), "pass --create")
        let created = try await cli.run("token", "issue", "lab", "new@lab.org", "--create")
        #expect(created.status == 0)
        let badTTL = try await cli.run("token", "issue", "lab", "kim@lab.org", "--ttl", "forever")
        #expect(badTTL.status != 0 && badTTL.stderr.contains("invalid --ttl"))

        // The token works at its campus, through the same store the server uses.
        let client = TestDatabase.client(database: cli.database)
        let campus = try await CampusStore(client: client).require(slug: "lab")
        let session = try await SessionStore(client: client).authenticate(campus: campus.id, token: token)
        #expect(session?.user.email == "kim@lab.org")
        #expect(session.map { $0.expiresAt.timeIntervalSinceNow < 3700 } == true)
        await client.shutdown()

        let audit = try await cli.run("audit", "lab", "--json")
        let entries = try JSONSerialization.jsonObject(with: Data(audit.stdout.utf8)) as? [[String: Any]] ?? []
        let actions = entries.compactMap { $0["action"] as? String }
        #expect(actions == ["campus.create", "user.add", "role.grant", "role.revoke", "token.issue", "user.add", "token.issue"])
        #expect(entries.allSatisfy { ($0["actor"] as? String)?.hasPrefix("cli:") == true })
        #expect(!audit.stdout.contains(token))
        let future = try await cli.run("audit", "lab", "--since", "2999-01-01")
        #expect(future.status == 0 && future.stdout.isEmpty)
        let badDate = try await cli.run("audit", "lab", "--since", "yesterday")
        #expect(badDate.status != 0 && badDate.stderr.contains("YYYY-MM-DD"))
    }

    @Test func csvImportIsAllOrNothing() async throws {
        let cli = try await Self.cli()
        #expect(
            try await cli.run("campus", "create", "csv-u", "--name", "CSV U", "--timezone", "UTC", "--email-domain", "csv.edu").status == 0)
        let directory = FileManager.default.temporaryDirectory.appending(path: "attest-csv-\(UUID().uuidString.prefix(6))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let bad = directory.appending(path: "bad.csv")
        try """
        email,name,roles
        ann@csv.edu,Ann,admin
        "bo@csv.edu","Bo, Jr.",screener;health_officer
        carl@csv.edu,Carl,wizard
        dee@csv.edu,Dee
        """.write(to: bad, atomically: true, encoding: .utf8)
        Self.expectFailure(try await cli.run("user", "import", "csv-u", bad.path), "line 4: unknown role \"wizard\"")
        #expect(try await cli.run("user", "list", "csv-u", "--json").stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "[]")

        let duplicate = directory.appending(path: "dup.csv")
        try "ann@csv.edu,Ann\nANN@csv.edu,Ann again\n".write(to: duplicate, atomically: true, encoding: .utf8)
        Self.expectFailure(
            try await cli.run("user", "import", "csv-u", duplicate.path), "line 2: ann@csv.edu appears again (first on line 1)")
        let foreign = directory.appending(path: "foreign.csv")
        try "ann@csv.edu,Ann\nzed@other.edu,Zed\n".write(to: foreign, atomically: true, encoding: .utf8)
        Self.expectFailure(try await cli.run("user", "import", "csv-u", foreign.path), "line 2:")
        Self.expectFailure(try await cli.run("user", "import", "csv-u", directory.appending(path: "missing.csv").path), "cannot read")
        let semicolons = directory.appending(path: "semicolons.csv")
        try "email;name\r\nann@csv.edu;Ann\r\n".write(to: semicolons, atomically: true, encoding: .utf8)
        Self.expectFailure(
            try await cli.run("user", "import", "csv-u", semicolons.path),
            "line 1: expected 2 or 3 columns (email,name[,roles]), found 1 (the line is separated by semicolons: save the file as CSV separated by commas)"
        )

        // As a spreadsheet saves "CSV UTF-8": a byte order mark first, CRLF line ends.
        let good = directory.appending(path: "good.csv")
        try "\u{FEFF}email,name,roles\r\nann@csv.edu,Ann,admin\r\n\"bo@csv.edu\",\"Bo, Jr.\",screener;health_officer\r\ndee@csv.edu,Dee\r\n"
            .write(to: good, atomically: true, encoding: .utf8)
        let imported = try await cli.run("user", "import", "csv-u", good.path, "--json")
        #expect(imported.status == 0, "\(imported.stderr)")
        #expect(imported.stdout.contains(#""created":3"#) && imported.stdout.contains(#""rolesGranted":3"#))
        let users =
            try JSONSerialization.jsonObject(with: Data(try await cli.run("user", "list", "csv-u", "--json").stdout.utf8))
            as? [[String: Any]] ?? []
        #expect(users.count == 3)
        #expect(users.first { $0["email"] as? String == "bo@csv.edu" }?["displayName"] as? String == "Bo, Jr.")
        #expect(users.first { $0["email"] as? String == "bo@csv.edu" }?["roles"] as? [String] == ["member", "screener", "health_officer"])
        let reimport = try await cli.run("user", "import", "csv-u", good.path, "--json")
        #expect(reimport.stdout.contains(#""created":0"#) && reimport.stdout.contains(#""updated":3"#))
    }

    @Test func pluginEnableDisableListAndBadgeKeyRotation() async throws {
        let cli = try await Self.cli()
        #expect(try await cli.run("campus", "create", "plug-u", "--name", "Plug U", "--timezone", "UTC").status == 0)
        let directory = FileManager.default.temporaryDirectory.appending(path: "attest-plugin-\(UUID().uuidString.prefix(6))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        // Saved as Windows' Notepad and PowerShell 5 save UTF-8: a byte order mark first.
        let survey = directory.appending(path: "survey.json")
        let questionnaire = #"{"title": "Check", "questions": [{"id": "fever", "kind": "boolean", "prompt": "Fever?"}]}"#
        try ("\u{FEFF}" + questionnaire).write(to: survey, atomically: true, encoding: .utf8)
        let published = try await cli.run("survey", "publish", "plug-u", survey.path)
        #expect(published.status == 0, "\(published.stderr)")

        let offered = try await cli.run("plugin", "list")
        #expect(offered.stdout.contains("badge-rule: standard"), "\(offered.stdout)")
        #expect(try await cli.run("plugin", "list", "plug-u").stdout.contains("badge-rule standard (default table; none enabled)"))

        let unknownQuestion = #"{"rules": [{"when": {"question": "cough", "equals": true}, "color": "red", "reason": "Cough"}]}"#
        Self.expectFailure(
            try await cli.run("plugin", "enable", "plug-u", "badge-rule", "standard", "--settings", unknownQuestion), "nothing was changed")
        Self.expectFailure(
            try await cli.run("plugin", "enable", "plug-u", "badge-rule", "standard", "--settings", "{nope"),
            "--settings is not valid JSON (")
        Self.expectFailure(
            try await cli.run("plugin", "enable", "plug-u", "sink", "log", "--settings", #"{"events": [], "events": ["badge.red"]}"#),
            #"--settings is not valid JSON (the key "events" repeated at byte"#)
        Self.expectFailure(
            try await cli.run(
                "plugin", "enable", "plug-u", "badge-rule", "standard", "--settings", directory.appending(path: "none.json").path),
            "cannot read --settings \(directory.appending(path: "none.json").path): No such file or directory; give a JSON file")
        Self.expectFailure(
            try await cli.run("plugin", "enable", "plug-u", "badge-rule", "strict"),
            "no badge rule \"strict\" in this build: available are standard")
        Self.expectFailure(
            try await cli.run("plugin", "enable", "plug-u", "sink", "webhook", "--settings", "{}"),
            "sink webhook refused these settings: url is required")
        Self.expectFailure(
            try await cli.run("plugin", "enable", "plug-u", "testing-locations", "atlas"),
            "no testing-locations provider \"atlas\" in this build: available are json-feed, static")
        let hook = #"{"url": "https://hooks.example.edu/attest", "secret": "hook-secret-0123456789", "events": ["badge.red"]}"#
        // A secret is never taken from the command line, only from a file or standard input.
        Self.expectFailure(
            try await cli.run("plugin", "enable", "plug-u", "sink", "webhook", "--settings", hook), "holds \"secret\" on the command line")
        let hookFile = directory.appending(path: "hook.json")
        try Data(([0xEF, 0xBB, 0xBF] as [UInt8]) + Array(hook.utf8)).write(to: hookFile)
        let piped = try await ChildProcess.run(
            ["/bin/sh", "-c", #""$0" plugin enable plug-u sink webhook --settings - < "$1""#, ChildProcess.attestBinary, hookFile.path],
            environment: ["DATABASE_URL": TestDatabase.url(database: cli.database)])
        #expect(piped.status == 0, "\(piped.stderr)")
        #expect(try await cli.run("plugin", "enable", "plug-u", "sink", "webhook", "--settings", "@" + hookFile.path).status == 0)
        // A misspelt member is refused by name: "evnts" would have sent the receiver every event.
        let misspelt = directory.appending(path: "misspelt.json")
        try Data(hook.replacingOccurrences(of: #""events""#, with: #""evnts""#).utf8).write(to: misspelt)
        Self.expectFailure(
            try await cli.run("plugin", "enable", "plug-u", "sink", "webhook", "--settings", misspelt.path),
            "sink webhook refused these settings: evnts is not a setting here (url, secret, timeoutSeconds, events); nothing was changed")
        Self.expectFailure(
            try await cli.run(
                "plugin", "enable", "plug-u", "sink", "email", "--settings",
                #"{"host": "smtp.example.edu", "from": "health@example.edu", "replyto": "desk@example.edu"}"#),
            "sink email refused these settings: replyto is not a setting here (host, port")
        Self.expectFailure(
            try await cli.run(
                "plugin", "enable", "plug-u", "badge-rule", "standard", "--settings",
                #"{"rules": [{"when": {"question": "fever", "equals": true}, "color": "red", "reason": "Fever", "lastDays": 10}]}"#),
            "rules[0].lastDays is not a setting here")
        let sinks = try await cli.run("plugin", "list", "plug-u")
        #expect(
            sinks.stdout.contains("sink webhook") && sinks.stdout.contains(#""secret":"(sealed)""#)
                && !sinks.stdout.contains("hook-secret"), "\(sinks.stdout)")
        #expect(try await cli.run("plugin", "disable", "plug-u", "sink", "webhook").status == 0)
        #expect(try await cli.run("outbox", "list", "plug-u").stdout.contains("No pending notifications at plug-u."))
        #expect(try await cli.run("outbox", "dead", "plug-u", "--json").stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "[]")
        #expect(try await cli.run("outbox", "retry", "plug-u").stdout.contains("No dead letters to retry"))
        Self.expectFailure(try await cli.run("outbox", "retry", "plug-u", "--event", "nope"), "--event nope is not an event id")
        #expect(try await cli.run("plugin", "enable", "plug-u", "widget", "x").status == 64)
        #expect(try await cli.run("plugin", "list", "plug-u", "--json").stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "[]")

        let rules = directory.appending(path: "rules.json")
        try
            #"{"rules": [{"when": {"question": "fever", "equals": true}, "color": "red", "reason": "Fever", "apiToken": "s3cret"}], "default": {"color": "green", "reason": "Fine"}}"#
            .write(to: rules, atomically: true, encoding: .utf8)
        // The rule takes no such member: refused by name, before anything is sealed or stored.
        Self.expectFailure(
            try await cli.run("plugin", "enable", "plug-u", "badge-rule", "standard", "--settings", rules.path),
            "rules[0].apiToken is not a setting here")
        // A plugin that takes one (not checked by the registry) has the member holding it sealed whole.
        let nested = try JSONDecoder().decode(JSONValue.self, from: Data(try Data(contentsOf: rules)))
        #expect(PluginRegistry.builtin.secretMembers(of: nested, kind: .badgeRule, id: "someone-elses") == ["rules"])
        try
            #"{"rules": [{"when": {"question": "fever", "equals": true}, "color": "red", "reason": "Fever"}], "default": {"color": "green", "reason": "Fine"}}"#
            .write(to: rules, atomically: true, encoding: .utf8)
        let enabled = try await cli.run("plugin", "enable", "plug-u", "badge-rule", "standard", "--settings", rules.path)
        #expect(enabled.status == 0, "\(enabled.stderr)")
        let listed =
            try JSONSerialization.jsonObject(with: Data(try await cli.run("plugin", "list", "plug-u", "--json").stdout.utf8))
            as? [[String: Any]] ?? []
        #expect(listed.map { $0["kind"] as? String } == ["badge-rule"])
        #expect((listed.first?["settings"] as? [String: Any])?["default"] is [String: Any])
        #expect(listed.first?["sealed"] as? [String] == [])

        #expect(try await cli.run("plugin", "disable", "plug-u", "badge-rule", "standard").status == 0)
        Self.expectFailure(try await cli.run("plugin", "disable", "plug-u", "badge-rule", "standard"), "has no badge-rule standard enabled")

        let first = try await cli.run("campus", "rotate-badge-key", "plug-u", "--json")
        #expect(first.status == 0, "\(first.stderr)")
        let rotation = try JSONSerialization.jsonObject(with: Data(first.stdout.utf8)) as? [String: Any]
        #expect((rotation?["retired"] as? [String])?.count == 1)
        let second =
            try JSONSerialization.jsonObject(with: Data(try await cli.run("campus", "rotate-badge-key", "plug-u", "--json").stdout.utf8))
            as? [String: Any]
        #expect(second?["retired"] as? [String] == [rotation?["kid"] as? String].compactMap { $0 })
        Self.expectFailure(try await cli.run("campus", "rotate-badge-key", "nowhere"), "no campus with slug")

        let audit = try await cli.run("audit", "plug-u")
        #expect(
            audit.stdout.contains("plugin.enable") && audit.stdout.contains("plugin.disable") && audit.stdout.contains("badge-key.rotate"))
        #expect(!audit.stdout.contains("s3cret"))
    }

    @Test func locationsImportListRemove() async throws {
        let cli = try await Self.cli()
        #expect(try await cli.run("campus", "create", "loc-u", "--name", "Loc U", "--timezone", "UTC").status == 0)
        let directory = FileManager.default.temporaryDirectory.appending(path: "attest-loc-\(UUID().uuidString.prefix(6))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let bad = directory.appending(path: "bad.csv")
        try "name,lat,lon\nClinic,40.1,-73.2\nLab,200,0\n".write(to: bad, atomically: true, encoding: .utf8)
        Self.expectFailure(
            try await cli.run("locations", "import", "loc-u", bad.path), "line 3: lat must be between -90 and 90; nothing was imported")
        #expect(try await cli.run("locations", "list", "loc-u").stdout.contains("no locations of its own"))
        let good = directory.appending(path: "good.json")
        try #"[{"name": "Clinic", "lat": 40.1, "lon": -73.2}, {"name": "Lab", "lat": 40.2, "lon": -73.1, "hours": "9-5"}]"#
            .write(to: good, atomically: true, encoding: .utf8)
        #expect(try await cli.run("locations", "import", "loc-u", good.path).stdout.contains("Imported 2 testing locations"))
        let listed =
            try JSONSerialization.jsonObject(with: Data(try await cli.run("locations", "list", "loc-u", "--json").stdout.utf8))
            as? [[String: Any]] ?? []
        #expect(listed.compactMap { $0["name"] as? String } == ["Clinic", "Lab"])
        let id = try #require(listed.first?["id"] as? String)
        #expect(try await cli.run("locations", "remove", "loc-u", id).stdout.contains("Removed 1 location"))
        Self.expectFailure(try await cli.run("locations", "remove", "loc-u", id), "has no location")
        #expect(try await cli.run("locations", "remove", "loc-u", "--all").stdout.contains("Removed 1 location"))
        #expect(try await cli.run("locations", "remove", "loc-u").status == 64)
        let feed = #"{"url": "https://feeds.example.edu/locations.json", "ttlSeconds": 600}"#
        #expect(try await cli.run("plugin", "enable", "loc-u", "testing-locations", "json-feed", "--settings", feed).status == 0)
        Self.expectFailure(
            try await cli.run("plugin", "enable", "loc-u", "testing-locations", "json-feed", "--settings", "{}"), "url is required")
        #expect(try await cli.run("audit", "loc-u").stdout.contains("locations.import"))
    }

    @Test func oidcIssuersAddListRemove() async throws {
        let cli = try await Self.cli()
        #expect(try await cli.run("campus", "create", "idp-u", "--name", "IdP U", "--timezone", "UTC").status == 0)
        // Without email domains nobody can sign in, and `campus show` says so, until an issuer
        // is added with --allow-any-domain.
        #expect(try await cli.run("campus", "show", "idp-u").stdout.contains("nobody can sign in"))
        #expect(try await cli.run("campus", "oidc", "add", "idp-u", "--google", "--audience", "123.apps.googleusercontent.com").status == 0)
        #expect(try await cli.run("campus", "show", "idp-u").stdout.contains("nobody can sign in"))
        #expect(
            try await cli.run(
                "campus", "oidc", "add", "idp-u", "--google", "--audience", "123.apps.googleusercontent.com", "--allow-any-domain"
            ).status == 0)
        let shown = try await cli.run("campus", "show", "idp-u")
        #expect(
            shown.stdout.contains("https://accounts.google.com (any email domain)") && !shown.stdout.contains("nobody can sign in"),
            "\(shown.stdout)")
        let json =
            try JSONSerialization.jsonObject(with: Data(try await cli.run("campus", "show", "idp-u", "--json").stdout.utf8))
            as? [String: Any]
        #expect(((json?["oidcIssuers"] as? [[String: Any]])?.first?["allowAnyDomain"] as? Bool) == true)
        let badURL = try await cli.run(
            "campus", "oidc", "add", "idp-u", "--issuer", "http://idp.example", "--audience", "a", "--jwks-url", "http://idp.example/keys")
        Self.expectFailure(badURL, "use an https:// URL")
        let directory = FileManager.default.temporaryDirectory.appending(path: "attest-jwks-\(UUID().uuidString.prefix(6)).json")
        try #"{"keys":[{"kty":"EC","crv":"P-256","kid":"k1","x":"not-a-point","y":"nope"}]}"#.write(
            to: directory, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: directory) }
        Self.expectFailure(
            try await cli.run(
                "campus", "oidc", "add", "idp-u", "--issuer", "https://idp.example", "--audience", "a", "--jwks-file", directory.path),
            "not a usable key set")
        let both = try await cli.run("campus", "oidc", "add", "idp-u", "--issuer", "https://idp.example", "--audience", "a")
        #expect(both.status != 0 && both.stderr.contains("exactly one of --jwks-url and --jwks-file"))
        let list = try await cli.run("campus", "oidc", "list", "idp-u", "--json")
        #expect(list.stdout.contains("https://accounts.google.com") && list.stdout.contains("123.apps.googleusercontent.com"))
        #expect(try await cli.run("campus", "oidc", "remove", "idp-u", "--issuer", "https://accounts.google.com").status == 0)
        Self.expectFailure(
            try await cli.run("campus", "oidc", "remove", "idp-u", "--issuer", "https://accounts.google.com"), "is not configured")
    }

    /// Beside `attest dev` (its `./.attest/database-url` and `./.attest/kek`), a command needs
    /// no `--kek-file`: with the dev cluster it uses the key `attest dev` made; with any other
    /// database named, never.
    @Test func theDevClustersKeyIsUsedWithTheDevClusterOnly() async throws {
        let database = try await TestDatabase.create()
        let url = TestDatabase.url(database: database)
        let directory = FileManager.default.temporaryDirectory.appending(path: "attest-devkey-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: directory + "/.attest", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let made = try await ChildProcess.run([ChildProcess.attestBinary, "keys", "new-kek"])
        try Data(made.stdout.utf8).write(to: URL(fileURLWithPath: directory + "/.attest/kek"))
        try Data(url.utf8).write(to: URL(fileURLWithPath: directory + "/.attest/database-url"))
        func attest(_ arguments: String..., databaseURL: String? = nil) async throws -> (status: Int32, stdout: String, stderr: String) {
            try await ChildProcess.run(
                [ChildProcess.attestBinary] + arguments,
                environment: ["DATABASE_URL": databaseURL, "ATTEST_KEK": nil, "ATTEST_KEK_FILE": nil], directory: directory)
        }
        let created = try await attest("campus", "create", "north", "--name", "North", "--timezone", "UTC")
        #expect(created.status == 0, "\(created.stderr)")
        #expect(try await attest("campus", "rotate-badge-key", "north").status == 0)
        // The same database named outright: not the dev cluster, so no key but one named.
        Self.expectFailure(
            try await attest("campus", "rotate-badge-key", "north", databaseURL: url), "no key-encryption key: make one with")
        try Data("not a key".utf8).write(to: URL(fileURLWithPath: directory + "/.attest/kek"))
        Self.expectFailure(
            try await attest("campus", "rotate-badge-key", "north"),
            ".attest/kek, the key attest dev made for its cluster here, does not hold a key")
    }

    /// The key-encryption key: made with `keys new-kek`, required where badge keys are made or
    /// used, and rotated with `keys rotate-kek` (after which only the new key opens them).
    @Test func theKeyEncryptionKeyIsRequiredAndRotates() async throws {
        let database = try await TestDatabase.create()
        let url = TestDatabase.url(database: database)
        let directory = FileManager.default.temporaryDirectory.appending(path: "attest-kek-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        func attest(_ arguments: [String], kek: String?) async throws -> (status: Int32, stdout: String, stderr: String) {
            try await ChildProcess.run(
                [ChildProcess.attestBinary] + arguments,
                environment: ["DATABASE_URL": url, "ATTEST_KEK": nil, "ATTEST_KEK_FILE": kek.map { directory + "/" + $0 }])
        }
        for name in ["old", "new"] {
            let made = try await attest(["keys", "new-kek"], kek: nil)
            #expect(made.status == 0 && made.stderr.contains("chmod 600"))
            try Data(made.stdout.utf8).write(to: URL(fileURLWithPath: directory + "/" + name))
        }
        try Data("not a key".utf8).write(to: URL(fileURLWithPath: directory + "/bad"))

        Self.expectFailure(
            try await attest(["campus", "create", "north", "--name", "North", "--timezone", "UTC"], kek: nil),
            "no key-encryption key: make one with `attest keys new-kek > FILE`")
        Self.expectFailure(
            try await attest(["campus", "create", "north", "--name", "North", "--timezone", "UTC"], kek: "bad"),
            "does not hold a key: it must hold 32 bytes in base64")
        #expect(try await attest(["campus", "create", "north", "--name", "North", "--timezone", "UTC"], kek: "old").status == 0)
        #expect(try await attest(["campus", "rotate-badge-key", "north"], kek: "old").status == 0)
        // Another key seals nothing: not a campus (whose badge key no server could open, and
        // every `serve` would refuse to start), a VAPID key, a plugin's secret.
        let notThisDeployments = "is not this deployment's: no campus's badge keys are sealed under it"
        Self.expectFailure(
            try await attest(["campus", "create", "south", "--name", "South", "--timezone", "UTC"], kek: "new"), notThisDeployments)
        Self.expectFailure(try await attest(["push", "keys", "new", "north"], kek: "new"), notThisDeployments)
        let webhook = directory + "/webhook.json"
        try Data(#"{"url": "https://hooks.example.edu/attest", "secret": "0123456789abcdef0123"}"#.utf8).write(
            to: URL(fileURLWithPath: webhook))
        Self.expectFailure(
            try await attest(["plugin", "enable", "north", "sink", "webhook", "--settings", webhook], kek: "new"), notThisDeployments)
        #expect(try await attest(["campus", "list"], kek: nil).stdout.contains("south") == false)
        #expect(try await attest(["push", "keys", "new", "north"], kek: "old").status == 0)

        let serverURL = try await TestDatabase.serverURL(database: database)
        func serve(kek: String?) async throws -> (status: Int32, stdout: String, stderr: String) {
            try await ChildProcess.run(
                [ChildProcess.attestBinary, "serve", "--port", "0"],
                environment: ["DATABASE_URL": serverURL, "ATTEST_KEK": nil, "ATTEST_KEK_FILE": kek.map { directory + "/" + $0 }],
                timeout: .seconds(30))
        }
        Self.expectFailure(try await serve(kek: nil), "no key-encryption key: make one with `attest keys new-kek > FILE`")
        Self.expectFailure(try await serve(kek: "new"), "sealed under key-encryption key")

        Self.expectFailure(
            try await attest(["keys", "rotate-kek", "--new-kek-file", directory + "/old"], kek: "old"), "is the current one")
        let rotated = try await attest(["keys", "rotate-kek", "--new-kek-file", directory + "/new", "--json"], kek: "old")
        #expect(rotated.status == 0, "\(rotated.stderr)")
        let report = try JSONSerialization.jsonObject(with: Data(rotated.stdout.utf8)) as? [String: Any]
        #expect((report?["rewrapped"] as? [String: Int])?["north"] == 4)  // two signing keys, the subject key, the VAPID key
        let again = try await attest(["keys", "rotate-kek", "--new-kek-file", directory + "/new", "--json"], kek: "old")
        let secondReport = try JSONSerialization.jsonObject(with: Data(again.stdout.utf8)) as? [String: Any]
        #expect(again.status == 0 && (secondReport?["rewrapped"] as? [String: Int])?["north"] == 0)
        Self.expectFailure(try await serve(kek: "old"), "sealed under key-encryption key")
        Self.expectFailure(try await attest(["campus", "rotate-badge-key", "north"], kek: "old"), notThisDeployments)
        #expect(try await attest(["campus", "rotate-badge-key", "north"], kek: "new").status == 0)
        Self.expectFailure(
            try await attest(["campus", "create", "south", "--name", "South", "--timezone", "UTC"], kek: "old"), notThisDeployments)
        #expect(try await attest(["campus", "create", "south", "--name", "South", "--timezone", "UTC"], kek: "new").status == 0)
        let audit = try await attest(["audit", "north"], kek: nil)
        #expect(audit.stdout.contains("kek.rotate"), "\(audit.stdout)")
    }

    /// A campus sealed under another key (made with the wrong key file before sealing commands
    /// checked it) stops `serve`, which names the campus and the way out; `rotate-kek` with the
    /// deployment's key as both current and new, and the other as previous, brings it home.
    @Test func aCampusSealedUnderAnotherKeyIsBroughtUnderTheDeploymentsKey() async throws {
        let database = try await TestDatabase.create()
        let url = TestDatabase.url(database: database)
        let directory = FileManager.default.temporaryDirectory.appending(path: "attest-stray-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        func attest(_ arguments: [String], kek: String) async throws -> (status: Int32, stdout: String, stderr: String) {
            try await ChildProcess.run(
                [ChildProcess.attestBinary] + arguments,
                environment: ["DATABASE_URL": url, "ATTEST_KEK": nil, "ATTEST_KEK_FILE": directory + "/" + kek])
        }
        var fingerprints: [String: String] = [:]
        for name in ["deployment", "stray"] {
            let made = try await attest(["keys", "new-kek"], kek: name)
            try Data(made.stdout.utf8).write(to: URL(fileURLWithPath: directory + "/" + name))
            fingerprints[name] = try #require(KeyEncryptionKey(text: made.stdout)).id
        }
        let (deployment, stray) = (try #require(fingerprints["deployment"]), try #require(fingerprints["stray"]))
        #expect(try await attest(["campus", "create", "north", "--name", "North", "--timezone", "UTC"], kek: "deployment").status == 0)
        // `west` made under the stray key as before the check: north's keys are hidden from it
        // meanwhile by their fingerprint, which is all the check reads.
        let owner = TestDatabase.client(database: database, role: nil, maxConnections: 1)
        func label(_ campus: String, _ kek: String) async throws {
            for table in ["badge_keys", "badge_subject_keys"] {
                try await owner.query(
                    "UPDATE \(identifier: table) SET kek_id = \(kek) WHERE campus_id = (SELECT id FROM campuses WHERE slug = \(campus))")
            }
        }
        try await label("north", stray)
        #expect(try await attest(["campus", "create", "west", "--name", "West", "--timezone", "UTC"], kek: "stray").status == 0)
        try await label("north", deployment)

        let serverURL = try await TestDatabase.serverURL(database: database)
        let refused = try await ChildProcess.run(
            [ChildProcess.attestBinary, "serve", "--port", "0"],
            environment: ["DATABASE_URL": serverURL, "ATTEST_KEK": nil, "ATTEST_KEK_FILE": directory + "/deployment"],
            timeout: .seconds(30))
        Self.expectFailure(
            refused,
            "cannot serve: campus west's secrets are sealed under key-encryption key \(stray), not the one given (\(deployment))")
        #expect(refused.stderr.contains("--previous-kek-file OTHER --new-kek-file FILE"), "\(refused.stderr)")
        let ownKey = ["keys", "rotate-kek", "--new-kek-file", directory + "/deployment"]
        Self.expectFailure(try await attest(ownKey, kek: "deployment"), "name the key values are under with --previous-kek-file")
        let home = try await attest(ownKey + ["--previous-kek-file", directory + "/stray", "--json"], kek: "deployment")
        #expect(home.status == 0, "\(home.stderr)")
        let report = try JSONSerialization.jsonObject(with: Data(home.stdout.utf8)) as? [String: Any]
        #expect(report?["rewrapped"] as? [String: Int] == ["north": 0, "west": 2])  // west's signing key and subject key
        let sealedWith = try await owner.query("SELECT DISTINCT kek_id FROM badge_keys UNION SELECT kek_id FROM badge_subject_keys")
        #expect(try sealedWith.map { try $0.decode("kek_id", as: String.self) } == [deployment])
        await owner.shutdown()
        // The deployment's key alone opens every campus now: `serve` starts, and the stray key
        // seals nothing more.
        let port = try LoopbackHTTP.freePort()
        let server = try ChildProcess(
            [ChildProcess.attestBinary, "serve", "--port", "\(port)"],
            environment: ["DATABASE_URL": serverURL, "ATTEST_KEK": nil, "ATTEST_KEK_FILE": directory + "/deployment"])
        do {
            try await LoopbackHTTP.waitFor(port: port, path: "/healthz", timeout: .seconds(60), while: server)
        } catch {
            server.signal(SIGKILL)
            throw error
        }
        server.signal(SIGTERM)
        #expect(try await server.wait(timeout: .seconds(15)) == 0)
        Self.expectFailure(
            try await attest(["campus", "create", "south", "--name", "South", "--timezone", "UTC"], kek: "stray"),
            "is not this deployment's")
    }
}
