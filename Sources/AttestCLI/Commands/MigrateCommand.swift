import ArgumentParser
import AttestSchema
import Foundation

struct MigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Create or update the schema (idempotent; concurrent runs wait for each other).",
        discussion: "Connect as the role that owns the tables. It also creates the attest_app role the server works as."
    )

    @OptionGroup var database: DatabaseOptions
    @OptionGroup var logging: LoggingOptions
    @Flag(help: "Print the result as JSON.") var json = false

    func run() async throws {
        let logger = logging.makeLogger(label: "attest.migrate")
        let client = try database.ownerClient(logger: logger, maxConnections: 1)
        let report = try await withShutdown(client) { try await SchemaMigrator(logger: logger).migrate(client) }
        if json {
            printJSON(report)
        } else if report.applied.isEmpty {
            say("Schema is up to date (version \(report.version)).")
        } else {
            say("Applied schema version(s) \(report.applied.map(String.init).joined(separator: ", ")); now at version \(report.version).")
        }
    }
}
