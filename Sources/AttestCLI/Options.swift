import ArgumentParser
import AttestPostgres
import AttestSchema
import Foundation
import Logging

/// `--database-url`, with the fallbacks every command shares.
struct DatabaseOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "libpq URI or conninfo of the database. Default: $DATABASE_URL, else the dev cluster in ./.attest/.",
            valueName: "url"))
    var databaseURL: String?

    @Option(name: .long, help: "Most database connections this process opens.")
    var dbPoolSize: Int = 10

    func validate() throws {
        guard (1...500).contains(dbPoolSize) else { throw ValidationError("--db-pool-size must be between 1 and 500") }
    }

    /// The connection string: `--database-url`, else `DATABASE_URL`, else the URL `attest dev`
    /// wrote into `./.attest/database-url`. An explicit flag wins over the environment.
    func resolveURL(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> String {
        if let databaseURL, !databaseURL.isEmpty { return databaseURL }
        if let url = environment["DATABASE_URL"], !url.isEmpty { return url }
        let devFile = URL(fileURLWithPath: ".attest/database-url")
        if let url = try? String(contentsOf: devFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines),
            !url.isEmpty
        {
            return url
        }
        throw CLIError(
            "no database named: set DATABASE_URL, pass --database-url postgresql://user@host/dbname, "
                + "or run `attest dev` here once to create a local one in ./.attest/")
    }

    /// A client that works as the login role (for migrations and cluster set-up).
    func ownerClient(logger: Logger, maxConnections: Int = 2) throws -> PostgresClient {
        PostgresClient(
            configuration: PostgresConfiguration(connectionString: try resolveURL()),
            options: .init(maxConnections: maxConnections), logger: logger)
    }

    /// The client the server and tenant commands use: row-level security applies to it.
    func applicationClient(logger: Logger) throws -> PostgresClient {
        PostgresClient(
            configuration: PostgresConfiguration(connectionString: try resolveURL(), role: SchemaMigrator.applicationRole),
            options: .init(maxConnections: dbPoolSize), logger: logger)
    }
}

/// `--log-level` and `--log-format`.
struct LoggingOptions: ParsableArguments {
    @Option(help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel: String = "info"

    @Option(help: "json or text. Default: text on a terminal, json otherwise.")
    var logFormat: String?

    func validate() throws {
        guard Logger.Level(rawValue: logLevel) != nil else {
            throw ValidationError("unknown --log-level \"\(logLevel)\": use trace, debug, info, notice, warning, error or critical")
        }
        if let logFormat, LineLogHandler.Format(rawValue: logFormat) == nil {
            throw ValidationError("unknown --log-format \"\(logFormat)\": use json or text")
        }
    }

    func makeLogger(label: String) -> Logger {
        let level = Logger.Level(rawValue: logLevel) ?? .info
        let format = logFormat.flatMap(LineLogHandler.Format.init(rawValue:)) ?? (isatty(2) == 1 ? .text : .json)
        return Logger(label: label) { label in LineLogHandler(label: label, level: level, format: format) }
    }
}

/// An error a person reads: one line saying what is wrong and how to mend it.
struct CLIError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
