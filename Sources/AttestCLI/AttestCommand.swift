import ArgumentParser
import AttestPostgres
import Foundation

/// `attest`: the server and the operators' tool in one binary.
public struct AttestCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "attest",
        abstract: "Campus Attest: daily health attestation for university campuses.",
        discussion: """
            The database is named by --database-url, else $DATABASE_URL, else the dev cluster \
            that `attest dev` keeps in ./.attest/.
            """,
        version: attestVersion,
        subcommands: [
            ServeCommand.self, DevCommand.self, MigrateCommand.self, CampusCommand.self, UserCommand.self,
            RoleCommand.self, TokenCommand.self, ResultsCommand.self, SHCCommand.self, AuditCommand.self, KeysCommand.self,
            SurveyCommand.self,
            PluginCommand.self,
            OutboxCommand.self, LocationsCommand.self,
            ReportCommand.self, PurgeCommand.self, CitusCommand.self, CommunityCommand.self, NotifyCommand.self, PushCommand.self,
        ]
    )

    public init() {}
}

/// The release this binary is.
public let attestVersion = "0.1.0"

extension AttestCommand {
    /// Parses the process's arguments and runs the chosen command; on error prints one line
    /// and exits with status 1 (usage errors: 64, as argument-parser does).
    public static func runAsRoot(_ arguments: [String]? = nil) async {
        do {
            var command = try parseAsRoot(arguments)
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch let error where String(reflecting: type(of: error)).hasPrefix("ArgumentParser.") {
            exit(withError: error)  // help, usage and validation, as argument-parser prints them
        } catch let error as PostgresError where error.isConnectionError {
            exit(
                withError: CLIError(
                    "\(error.message). Check --database-url or DATABASE_URL, and that PostgreSQL is running."))
        } catch let error as PostgresError where error.messageHasNoValues {
            // The server's own words, when they cannot hold health data: they name what to mend.
            exit(withError: CLIError("database error: \(error): \(error.message)" + (error.hint.map { " (\($0))" } ?? "")))
        } catch let error as PostgresError {
            exit(withError: CLIError("database error: \(error)"))
        } catch {
            // What a person gave may hold what a terminal does not show (the `\r` a script saved
            // on Windows ends each line with, an escape sequence in a file): written visibly.
            exit(withError: CLIError(LineLogHandler.escaped(message(for: error), lineEnds: false)))
        }
    }
}
