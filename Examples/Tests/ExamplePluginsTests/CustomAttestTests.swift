import Foundation
import Testing

/// The custom `campus-attest` executable end to end, against the PostgreSQL cluster that
/// `scripts/test` starts (libpq's PGHOST and PGUSER, and ATTEST_PG_BIN for `createdb`): the
/// example plugins are registered in it, so a campus can enable each one.
@Suite struct CustomAttestTests {
    /// Built next to the test executable: on Linux found there, wherever the build directory
    /// is (`--scratch-path`); elsewhere in this package's `.build/debug`.
    static let binary: String = {
        let beside = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
            .appending(path: "campus-attest").path
        if FileManager.default.isExecutableFile(atPath: beside) { return beside }
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appending(path: ".build/debug/campus-attest").path
    }()

    static let kek = Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()

    /// Runs `arguments` to completion; returns the exit status and what it printed.
    static func run(_ arguments: [String], database: String? = nil) throws -> (status: Int32, output: String) {
        let outputPath = FileManager.default.temporaryDirectory.appending(path: "campus-attest-\(UUID().uuidString.prefix(8)).out").path
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        var environment = ProcessInfo.processInfo.environment
        if let database { environment["DATABASE_URL"] = "dbname=\(database)" }
        // The key-encryption key a campus's first badge key is sealed with.
        if environment["ATTEST_KEK"] == nil { environment["ATTEST_KEK"] = Self.kek }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, arguments[0], &actions, nil, argv, envp)
        guard spawned == 0 else { throw SetupError("cannot start \(arguments[0]): \(String(cString: strerror(spawned)))") }
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        return ((status >> 8) & 0xff, output)
    }

    struct SetupError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    @Test func aCampusEnablesEachExamplePluginThroughTheCustomAttest() throws {
        let environment = ProcessInfo.processInfo.environment
        guard environment["PGHOST"] != nil, let bin = environment["ATTEST_PG_BIN"] else {
            throw SetupError("run the tests through scripts/test, which starts PostgreSQL and sets PGHOST and ATTEST_PG_BIN")
        }
        let database = "examples_\(UUID().uuidString.prefix(8).lowercased())"
        let created = try Self.run(["\(bin)/createdb", database])
        try #require(created.status == 0, "\(created.output)")
        defer { _ = try? Self.run(["\(bin)/dropdb", database]) }
        func attest(_ arguments: String...) throws -> String {
            let result = try Self.run([Self.binary] + arguments, database: database)
            #expect(result.status == 0, "campus-attest \(arguments.joined(separator: " ")): \(result.output)")
            return result.output
        }
        let locations = FileManager.default.temporaryDirectory.appending(path: "\(database).csv")
        try Data("name,lat,lon\nNorth Clinic,40.81,-73.96\n".utf8).write(to: locations)
        defer { try? FileManager.default.removeItem(at: locations) }

        _ = try attest("migrate")
        _ = try attest("campus", "create", "north", "--name", "North", "--timezone", "America/New_York")
        _ = try attest("survey", "publish", "north", "--demo")
        _ = try attest("plugin", "enable", "north", "badge-rule", "temperature-only", "--settings", #"{"redAt": 38.5}"#)
        _ = try attest("plugin", "enable", "north", "testing-locations", "csv-file", "--settings", #"{"path": "\#(locations.path)"}"#)
        _ = try attest(
            "plugin", "enable", "north", "community-data", "weekly-report", "--settings", #"{"path": "/var/lib/attest/weekly.csv"}"#)
        // A secret never on the command line: the gateway's settings come from a file.
        let smsSettings = FileManager.default.temporaryDirectory.appending(path: "\(database)-sms.json")
        try Data(
            #"{"url": "https://sms.example.edu/v1/messages", "apiKey": "key-123", "to": "+15551234567", "events": ["badge.red"]}"#.utf8
        )
        .write(to: smsSettings)
        defer { try? FileManager.default.removeItem(at: smsSettings) }
        _ = try attest("plugin", "enable", "north", "sink", "sms-gateway", "--settings", smsSettings.path)
        let inline = try Self.run(
            [
                Self.binary, "plugin", "enable", "north", "sink", "sms-gateway", "--settings",
                #"{"url": "https://sms.example.edu", "apiKey": "k"}"#,
            ],
            database: database)
        #expect(inline.status == 1 && inline.output.contains("on the command line"), "\(inline.output)")
        let misspelt = try Self.run(
            [
                Self.binary, "plugin", "enable", "north", "sink", "sms-gateway", "--settings",
                #"{"url": "https://sms.example.edu", "too": "+15551234567"}"#,
            ],
            database: database)
        #expect(misspelt.status == 1 && misspelt.output.contains("too is not a setting here (url, apiKey, to"), "\(misspelt.output)")
        let list = try attest("plugin", "list", "north")
        #expect(list.contains("temperature-only"))
        #expect(list.contains("csv-file"))
        #expect(list.contains("sms-gateway"))
        #expect(list.contains("community-data weekly-report"))
        #expect(!list.contains("key-123"), "the apiKey is shown: \(list)")

        // The settings are still checked by the plugin: a yes-or-no question cannot be a temperature.
        let refused = try Self.run(
            [Self.binary, "plugin", "enable", "north", "badge-rule", "temperature-only", "--settings", #"{"question": "fever_chills"}"#],
            database: database)
        #expect(refused.status == 1)
        #expect(refused.output.contains("is a boolean question"), "\(refused.output)")
    }
}
