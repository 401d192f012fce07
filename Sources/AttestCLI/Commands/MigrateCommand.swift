import ArgumentParser
import AttestPostgres
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
    @Option(
        help: ArgumentHelp(
            "Also make the login `attest serve` uses: created if missing (LOGIN, owning nothing) and made a member of attest_app. Containers and units run this before the servers.",
            valueName: "role"))
    var serverLogin: String?
    @Option(
        help: ArgumentHelp(
            "A file holding --server-login's password, set on every run (so rotating it is: change the file, run migrate).",
            valueName: "file"))
    var serverPasswordFile: String?

    func validate() throws {
        if let serverLogin {
            guard !serverLogin.isEmpty, serverLogin.utf8.count <= 63,
                serverLogin.unicodeScalars.allSatisfy({
                    $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_")
                })
            else {
                throw ValidationError("--server-login must be a role name of letters, digits and _ (at most 63), such as attest_server")
            }
            guard serverLogin != SchemaMigrator.applicationRole else {
                throw ValidationError(
                    "--server-login must differ from \(SchemaMigrator.applicationRole), the group role it is made a member of")
            }
        } else if serverPasswordFile != nil {
            throw ValidationError("--server-password-file needs --server-login: name the role the password is for")
        }
    }

    func run() async throws {
        let logger = logging.makeLogger(label: "attest.migrate")
        let password = try serverPasswordFile.map { try Secret.read("@" + $0, option: "--server-password-file") }
        let client = try database.ownerClient(logger: logger, maxConnections: 1)
        let report = try await withShutdown(client) {
            let report = try await SchemaMigrator(logger: logger).migrate(client)
            if let serverLogin { try await ServerLogin.ensureRole(serverLogin, password: password, owner: client) }
            return report
        }
        if json {
            printJSON(report)
        } else if report.applied.isEmpty {
            say("Schema is up to date (version \(report.version)).")
        } else {
            say("Applied schema version(s) \(report.applied.map(String.init).joined(separator: ", ")); now at version \(report.version).")
        }
        if let serverLogin, !json { say("The server's login \(serverLogin) is a member of \(SchemaMigrator.applicationRole).") }
    }
}
