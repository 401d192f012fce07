import AttestPostgres
import AttestTestSupport
import Foundation
import Testing

@Suite("attest CLI errors and migrate")
struct CLIErrorTests {
    @Test func withoutAnyDatabaseItSaysHowToNameOne() async throws {
        let empty = FileManager.default.temporaryDirectory.appending(path: "attest-empty-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: empty) }
        let result = try await ChildProcess.run(
            [ChildProcess.attestBinary, "migrate"], environment: ["DATABASE_URL": nil], directory: empty)
        #expect(result.status == 1)
        #expect(result.stderr.split(separator: "\n").count == 1)
        #expect(result.stderr.contains("DATABASE_URL"))
        #expect(result.stderr.contains("--database-url"))
        #expect(result.stderr.contains("attest dev"))
    }

    /// What an operator gave is shown as given: a `\r` (the end of each line of a script saved
    /// on Windows) and a terminal's escape sequence are written as escapes, not sent to the
    /// terminal. Usage errors stay argument-parser's (64, with the usage).
    @Test func anErrorShowsTheControlCharactersItQuotes() async throws {
        let name = try await TestDatabase.create()
        let environment = ["DATABASE_URL": TestDatabase.url(database: name)]
        let created = try await ChildProcess.run(
            [ChildProcess.attestBinary, "campus", "create", "north", "--name", "North", "--timezone", "UTC"], environment: environment)
        #expect(created.status == 0, "\(created.stderr)")
        let windows = try await ChildProcess.run(
            [ChildProcess.attestBinary, "user", "add", "north", "lee@north.edu\r"], environment: environment)
        #expect(windows.status == 1)
        #expect(windows.stderr == "Error: invalid email address \"lee@north.edu\\r\": use name@domain, such as alice@example.edu\n")
        let escape = try await ChildProcess.run(
            [ChildProcess.attestBinary, "campus", "show", "a\u{1B}[2Jb"], environment: environment)
        #expect(escape.status == 1)
        #expect(escape.stderr.contains(#"no campus with slug "a\u{1B}[2Jb""#) && !escape.stderr.contains("\u{1B}"), "\(escape.stderr)")
        let usage = try await ChildProcess.run([ChildProcess.attestBinary, "user", "add", "north"], environment: environment)
        #expect(usage.status == 64 && usage.stderr.contains("Usage: attest user add"), "\(usage.stderr)")
        for help in [["user", "add", "--help"], ["help", "plugin", "enable"]] {
            let asked = try await ChildProcess.run([ChildProcess.attestBinary] + help, environment: environment)
            #expect(asked.status == 0 && asked.stdout.hasPrefix("OVERVIEW: ") && asked.stderr.isEmpty, "\(help): \(asked.stderr)")
        }
    }

    @Test func anUnreachableDatabaseIsOneLineWithoutThePassword() async throws {
        let result = try await ChildProcess.run([
            ChildProcess.attestBinary, "migrate", "--database-url", "postgresql://ops:Tr0ub4dor@127.0.0.1:1/attest",
        ])
        #expect(result.status == 1)
        #expect(result.stderr.split(separator: "\n").count == 1)
        #expect(result.stderr.contains("cannot connect to PostgreSQL (host 127.0.0.1, port 1"))
        #expect(result.stderr.contains("Check --database-url or DATABASE_URL"))
        #expect(!result.stderr.contains("Tr0ub4dor"))
    }

    /// A server error whose class quotes no values (here a missing privilege, 42501) is shown
    /// in the server's words, which name what to mend; one that may quote values is not.
    @Test func aServerErrorThatQuotesNoValuesIsShownInFull() async throws {
        let name = try await TestDatabase.create()
        let admin = TestDatabase.client(database: name, role: nil, maxConnections: 1)
        _ = try await admin.withConnection {
            try await $0.runScript(unsafeSQL: "REVOKE EXECUTE ON FUNCTION attest_campus_directory() FROM attest_app")
        }
        await admin.shutdown()
        let result = try await ChildProcess.run(
            [ChildProcess.attestBinary, "campus", "list"], environment: ["DATABASE_URL": TestDatabase.url(database: name)])
        #expect(result.status == 1)
        #expect(result.stderr.split(separator: "\n").count == 1)
        #expect(result.stderr.contains("42501 (insufficient_privilege)"), "\(result.stderr)")
        #expect(result.stderr.contains("permission denied for function attest_campus_directory"), "\(result.stderr)")

        let hidden = PostgresError(code: .server, message: "invalid input syntax for type uuid: \"secret\"", sqlState: "22P02")
        #expect(!hidden.messageHasNoValues)
        #expect(!PostgresError(code: .server, message: "Key (email)=(a@b) already exists", sqlState: "23505").messageHasNoValues)
        #expect(
            PostgresError(code: .server, message: "COPY FROM not supported with row-level security", sqlState: "0A000").messageHasNoValues)
    }

    @Test func theFlagWinsOverTheEnvironment() async throws {
        let name = try await TestDatabase.create(migrated: false)
        let result = try await ChildProcess.run(
            [ChildProcess.attestBinary, "migrate", "--database-url", TestDatabase.url(database: name)],
            environment: ["DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none"])
        #expect(result.status == 0, "\(result.stderr)")
    }

    @Test func migrateTwiceThenConcurrentlyAsSeparateProcesses() async throws {
        let name = try await TestDatabase.create(migrated: false)
        let environment: [String: String?] = ["DATABASE_URL": TestDatabase.url(database: name)]
        let first = try await ChildProcess.run([ChildProcess.attestBinary, "migrate"], environment: environment)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stdout.contains("Applied schema version(s) 1"))
        let second = try await ChildProcess.run([ChildProcess.attestBinary, "migrate", "--json"], environment: environment)
        #expect(second.status == 0)
        #expect(second.stdout.contains(#""applied":[]"#))

        let fresh = try await TestDatabase.create(migrated: false)
        let racers = try (0..<3).map { _ in
            try ChildProcess(
                [ChildProcess.attestBinary, "migrate", "--json"], environment: ["DATABASE_URL": TestDatabase.url(database: fresh)])
        }
        var applied = 0
        for racer in racers {
            #expect(try await racer.wait(timeout: .seconds(60)) == 0, "\(racer.stderr)")
            if !racer.stdout.contains(#""applied":[]"#) { applied += 1 }
        }
        #expect(applied == 1)
    }

    /// A file the CLI is given and cannot read says why as the system says it (not Foundation's
    /// "NSCocoaErrorDomain error 256" for a directory), and what the command wants there.
    @Test func aFileThatCannotBeReadSaysWhyAndWhatIsWanted() async throws {
        let directory = FileManager.default.temporaryDirectory.appending(path: "attest-files-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let latin1 = directory.appending(path: "people.csv")
        try Data(Array("email,name\nj@example.edu,Jos".utf8) + [0xE9, 0x0A]).write(to: latin1)  // Latin-1 é
        let cases: [([String], String)] = [
            (
                ["results", "import", "north", directory.path],
                "cannot read \(directory.path): Is a directory; give the path of a CSV file of results (specimen_id,"
            ),
            (
                ["results", "import", "north", directory.appending(path: "none.csv").path],
                "cannot read \(directory.appending(path: "none.csv").path): No such file or directory; give the path of a CSV file of results"
            ),
            (
                ["user", "import", "north", latin1.path],
                "\(latin1.path) is not UTF-8 text; give the path of a UTF-8 CSV file with columns email,name"
            ),
            (["shc", "directory", "import", directory.path, "--signature", "x", "--certificate", "y"], "Is a directory; give the path of"),
        ]
        for (arguments, expected) in cases {
            let result = try await ChildProcess.run([ChildProcess.attestBinary] + arguments, environment: ["DATABASE_URL": nil])
            #expect(result.status == 1 && result.stderr.contains(expected), "\(arguments): \(result.stderr)")
            #expect(!result.stderr.contains("NSCocoaErrorDomain") && !result.stderr.contains("could not be completed"))
        }
    }

    @Test func badOptionsAreUsageErrors() async throws {
        let result = try await ChildProcess.run([ChildProcess.attestBinary, "serve", "--port", "70000"])
        #expect(result.status == 64)
        #expect(result.stderr.contains("--port must be between 0 and 65535"))
        let workers = try await ChildProcess.run([ChildProcess.attestBinary, "serve", "--write-workers", "10", "--db-pool-size", "10"])
        #expect(workers.status == 64)
        #expect(workers.stderr.contains("--write-workers (10) must be less than --db-pool-size (10)"), "\(workers.stderr)")
        let level = try await ChildProcess.run([ChildProcess.attestBinary, "migrate", "--log-level", "loud"])
        #expect(level.status == 64)
        #expect(level.stderr.contains("unknown --log-level"))
    }

    /// `migrate --server-login` makes the server's login a member of attest_app and sets its
    /// password from a file on every run (so rotating it is a new file and a run). The SCRAM
    /// verifier PostgreSQL keeps is checked against the password by Python's hashlib (RFC 5802,
    /// RFC 7677), not by this project's code; names that are not a plain role name are refused.
    @Test func migrateMakesTheServersLoginAndSetsItsPasswordFromAFile() async throws {
        let name = try await TestDatabase.create()
        let environment: [String: String?] = ["DATABASE_URL": TestDatabase.url(database: name)]
        for (arguments, message) in [
            (["--server-login", "attest_x; DROP ROLE postgres"], "--server-login must be a role name of letters, digits and _"),
            (["--server-login", "attest_app"], "--server-login must differ from attest_app"),
            (["--server-password-file", "/dev/null"], "--server-password-file needs --server-login"),
        ] {
            let refused = try await ChildProcess.run([ChildProcess.attestBinary, "migrate"] + arguments, environment: environment)
            #expect(refused.status == 64 && refused.stderr.contains(message), "\(arguments): \(refused.stderr)")
        }
        let role = "attest_login_\(UUID().uuidString.prefix(8).lowercased())"
        let files = FileManager.default.temporaryDirectory.appending(path: "attest-login-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: files, withIntermediateDirectories: true)
        let owner = TestDatabase.client(database: name, role: nil, maxConnections: 1)
        defer { try? FileManager.default.removeItem(at: files) }
        func verifier() async throws -> (password: String, member: Bool) {
            let rows = try await owner.query(
                """
                SELECT rolpassword AS password, pg_has_role(rolname, 'attest_app', 'MEMBER') AS member, rolcanlogin AS login
                FROM pg_authid WHERE rolname = \(role)
                """)
            let row = try #require(rows.first)
            #expect(try row.decode("login", as: Bool.self))
            return (try row.decode("password"), try row.decode("member"))
        }
        func verifies(_ password: String) async throws -> Bool {
            let (stored, _) = try await verifier()
            let check = try await ChildProcess.run(["/usr/bin/env", "python3", "-c", Self.scramOracle, stored, password])
            #expect(check.stderr.isEmpty, "\(check.stderr)")
            return check.status == 0
        }
        do {
            for (index, password) in ["first pässword", "second, rotated"].enumerated() {
                let file = files.appending(path: "password-\(index)")
                try Data((password + "\n").utf8).write(to: file)
                let made = try await ChildProcess.run(
                    [ChildProcess.attestBinary, "migrate", "--server-login", role, "--server-password-file", file.path],
                    environment: environment)
                #expect(made.status == 0, "\(made.stderr)")
                #expect(made.stdout.contains("Schema is up to date (version "), "\(made.stdout)")
                #expect(made.stdout.contains("The server's login \(role) is a member of attest_app."), "\(made.stdout)")
                #expect(try await verifier().member)
                #expect(try await verifies(password), "the verifier holds \(password), the file's line")
                let withNewline = try await verifies(password + "\n"), wrong = try await verifies("wrong")
                #expect(!withNewline && !wrong)
            }
        } catch {
            _ = try? await owner.query("DROP ROLE IF EXISTS \(identifier: role)")
            await owner.shutdown()
            throw error
        }
        _ = try await owner.query("DROP ROLE IF EXISTS \(identifier: role)")
        await owner.shutdown()
    }

    /// Exits 0 when argv[1], a SCRAM-SHA-256 verifier as PostgreSQL keeps it
    /// (`SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>`), holds the password argv[2].
    static let scramOracle = #"""
        import base64, hashlib, hmac, sys
        verifier, password = sys.argv[1], sys.argv[2]
        scheme, rest = verifier.split('$', 1)
        assert scheme == 'SCRAM-SHA-256', scheme
        head, keys = rest.split('$')
        iterations, salt = head.split(':')
        stored, server = (base64.b64decode(k) for k in keys.split(':'))
        salted = hashlib.pbkdf2_hmac('sha256', password.encode(), base64.b64decode(salt), int(iterations))
        client = hmac.new(salted, b'Client Key', hashlib.sha256).digest()
        ok = hashlib.sha256(client).digest() == stored and hmac.new(salted, b'Server Key', hashlib.sha256).digest() == server
        sys.exit(0 if ok else 1)
        """#
}
