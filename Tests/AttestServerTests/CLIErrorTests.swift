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
}
