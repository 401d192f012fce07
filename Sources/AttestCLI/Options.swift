import ArgumentParser
import AttestPostgres
import AttestSchema
import AttestServer
import Foundation
import Logging
import Surveys
import Tenancy

/// `--database-url`, with the fallbacks every command shares.
struct DatabaseOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "libpq URI or conninfo of the database, or @FILE to read it from a file (keeps a password off the command line). Default: $DATABASE_URL (which may be @FILE too), else the dev cluster in ./.attest/.",
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
        if let databaseURL, !databaseURL.isEmpty { return try Secret.read(databaseURL, option: "--database-url") }
        if let url = environment["DATABASE_URL"], !url.isEmpty { return try Secret.read(url, option: "DATABASE_URL") }
        if let url = Self.devClusterURL() { return url }
        throw CLIError(
            "no database named: set DATABASE_URL, pass --database-url postgresql://user@host/dbname, "
                + "or run `attest dev` here once to create a local one in ./.attest/")
    }

    /// The URL `attest dev` wrote into `./.attest/database-url`, when it did.
    static func devClusterURL() -> String? {
        let devFile = URL(fileURLWithPath: ".attest/database-url")
        guard let url = try? String(contentsOf: devFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines), !url.isEmpty
        else { return nil }
        return url
    }

    /// Whether the database is the cluster `attest dev` keeps in `./.attest/` (no
    /// `--database-url`, no `DATABASE_URL`): then its key, `./.attest/kek`, is the one to use.
    func usesDevCluster(environment: [String: String] = ProcessInfo.processInfo.environment) -> Bool {
        (databaseURL ?? "").isEmpty && (environment["DATABASE_URL"] ?? "").isEmpty && Self.devClusterURL() != nil
    }

    /// `--database-read-url`, else `DATABASE_READ_URL` (either may be @FILE): a streaming
    /// standby for statistics reads, or nil.
    func resolveReadURL(_ option: String?, environment: [String: String] = ProcessInfo.processInfo.environment) throws -> String? {
        if let option, !option.isEmpty { return try Secret.read(option, option: "--database-read-url") }
        if let url = environment["DATABASE_READ_URL"], !url.isEmpty { return try Secret.read(url, option: "DATABASE_READ_URL") }
        return nil
    }

    /// The client the server reads statistics with from a standby: row-level security applies.
    /// Its URL is checked now, though it connects only when statistics are read (a standby that
    /// is down at start is not an error: those reads go to the primary meanwhile).
    func readClient(url: String, logger: Logger) throws -> PostgresClient {
        let configuration = PostgresConfiguration(connectionString: url, role: SchemaMigrator.applicationRole)
        do {
            try configuration.checkSyntax()
        } catch let error as PostgresError {
            throw CLIError("cannot serve: --database-read-url (or DATABASE_READ_URL): \(error.message)")
        }
        return PostgresClient(configuration: configuration, options: .init(maxConnections: max(2, dbPoolSize / 2)), logger: logger)
    }

    /// A client that works as the login role itself (migrations, cluster set-up, checks).
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

/// `--trusted-proxy`, for `serve` and `dev`: the reverse proxies whose `X-Forwarded-For`
/// names the client that rate limits count and logs show.
struct TrustedProxyOptions: ParsableArguments {
    @Option(
        name: .customLong("trusted-proxy"),
        help: ArgumentHelp(
            "The address of a reverse proxy in front (repeatable): requests from it name their client in X-Forwarded-For.",
            valueName: "address"))
    var trustedProxies: [String] = []

    var addresses: Swift.Set<String> { Swift.Set(trustedProxies) }
}

/// `--own-data-requests-per-minute`, for `serve` and `dev`: how many requests one member may
/// make for their own private data, counted by each server.
struct OwnDataLimitOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "Requests one member may make a minute for their own private data (journal, episodes, exports, links, profile, health records), after a fifth of that at once (300 by default: 60 at once): raise it for a campus app that syncs often.",
            valueName: "count"))
    var ownDataRequestsPerMinute = 300

    func validate() throws {
        guard (5...1_000_000).contains(ownDataRequestsPerMinute) else {
            throw ValidationError("--own-data-requests-per-minute must be from 5 to 1000000")
        }
    }

    /// The server's limit: a fifth of the minute's allowance at once, then the allowance a minute.
    var limit: RateLimit { RateLimit(burst: Double(ownDataRequestsPerMinute / 5), perMinute: Double(ownDataRequestsPerMinute)) }
}

/// A value that may be a secret: given as is, or as `@FILE` (the file's text, trimmed), or
/// `@-` for standard input, so that a password never has to stand on a command line.
enum Secret {
    static func read(_ value: String, option: String) throws -> String {
        guard value.hasPrefix("@") else { return value }
        let path = String(value.dropFirst())
        let data: Data?
        if path == "-" {
            data = try? FileHandle.standardInput.readToEnd()
        } else {
            data = FileManager.default.contents(atPath: path)
        }
        guard let data, let text = String(data: data, encoding: .utf8) else {
            throw CLIError("\(option) names the file \(path), which cannot be read: check the path and its permissions")
        }
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { throw CLIError("\(option) names the file \(path), which is empty") }
        return trimmed
    }
}

/// An error a person reads: one line saying what is wrong and how to mend it.
struct CLIError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// `--kek-file`: the operator's key-encryption key, which seals every campus's secrets.
struct KeyOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "A file holding the key-encryption key that seals secrets (what `attest keys new-kek` prints). Default: $ATTEST_KEK_FILE, else $ATTEST_KEK (the key itself, base64), else ./.attest/kek when the database is attest dev's cluster there.",
            valueName: "file"))
    var kekFile: String?

    /// The keys held by `files`, `option` naming them in errors.
    static func load(files: [String], option: String) throws -> [KeyEncryptionKey] {
        try files.map { path in
            guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8) else {
                throw CLIError("\(option) names \(path), which cannot be read: check the path and that this user may read it")
            }
            guard let key = KeyEncryptionKey(text: text) else {
                throw CLIError(
                    "\(option) names \(path), which does not hold a key: it must hold 32 bytes in base64, as `attest keys new-kek` prints")
            }
            return key
        }
    }

    /// The key `attest dev` made beside its cluster (mode 0600).
    static let devKeyFile = ".attest/kek"

    /// The key, or nil when none is named. With `database` the dev cluster in `./.attest/`
    /// and no key named, the key `attest dev` made for it there: a command run beside `attest
    /// dev` needs no `--kek-file`, and no other database is ever given that key.
    func load(for database: DatabaseOptions?, environment: [String: String] = ProcessInfo.processInfo.environment) throws
        -> KeyEncryptionKey?
    {
        if let key = try load(environment: environment) { return key }
        guard let database, database.usesDevCluster(environment: environment), FileManager.default.fileExists(atPath: Self.devKeyFile)
        else { return nil }
        guard let data = FileManager.default.contents(atPath: Self.devKeyFile), let text = String(data: data, encoding: .utf8) else {
            throw CLIError(
                "\(Self.devKeyFile), the key attest dev made for its cluster here, cannot be read: check that this user may read it")
        }
        guard let key = KeyEncryptionKey(text: text) else {
            throw CLIError(
                "\(Self.devKeyFile), the key attest dev made for its cluster here, does not hold a key: pass --kek-file with the right one")
        }
        return key
    }

    /// The key named by `--kek-file`, `ATTEST_KEK_FILE` or `ATTEST_KEK`, or nil when none is.
    func load(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> KeyEncryptionKey? {
        if let path = kekFile ?? environment["ATTEST_KEK_FILE"].flatMap({ $0.isEmpty ? nil : $0 }) {
            return try Self.load(files: [path], option: kekFile != nil ? "--kek-file" : "ATTEST_KEK_FILE").first
        }
        if let text = environment["ATTEST_KEK"], !text.isEmpty {
            guard let key = KeyEncryptionKey(text: text) else {
                throw CLIError("ATTEST_KEK does not hold a key: it must be 32 bytes in base64, as `attest keys new-kek` prints")
            }
            return key
        }
        return nil
    }

    /// The key (`load(for:)`); without one, the error says how to make and pass one.
    func require(for database: DatabaseOptions?) throws -> KeyEncryptionKey {
        guard let key = try load(for: database) else { throw CLIError(CampusError.noKeyEncryptionKey.description) }
        return key
    }
}
