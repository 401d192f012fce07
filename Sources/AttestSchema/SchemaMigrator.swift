import AttestPostgres
import Logging

/// Brings a database to the schema this build expects.
///
/// A new database gets `schema.sql` whole, recorded as every known version. A database
/// already at some version gets the later migrations, each in its own transaction. A
/// session-level advisory lock makes concurrent runs (two servers starting at once) queue
/// up; the second finds nothing to do.
public struct SchemaMigrator: Sendable {
    /// A change after the first release: SQL that takes a database from `version - 1` to
    /// `version`. `schema.sql` is updated alongside, so new databases start at the end.
    public struct Migration: Sendable {
        public var version: Int
        public var name: String
        public var sql: String
    }

    /// Version 1 is `schema.sql` (a new database gets it whole); each later version is a file
    /// `Migrations/NNNN-name.sql` whose first line, `-- what it does`, is its recorded name.
    /// Files are history: once released, a migration is never edited, and `schema.sql`
    /// changes alongside each new one (MigrationTests checks that the two reach one schema).
    public static let migrations: [Migration] =
        [Migration(version: 1, name: "initial schema", sql: embeddedSchemaSQL)]
        + embeddedMigrations.compactMap { file, text in migration(file: file, text: text) }.sorted { $0.version < $1.version }

    /// The migration a file `NNNN-name.sql` holds, named by its first line (`-- name`); nil
    /// for a file named otherwise (MigrationTests fails on it).
    static func migration(file: String, text: String) -> Migration? {
        guard let version = Int(file.prefix { $0.isASCII && $0.isNumber }), file.hasSuffix(".sql"),
            let firstLine = text.split(separator: "\n", maxSplits: 1).first, firstLine.hasPrefix("-- ")
        else { return nil }
        return Migration(version: version, name: String(firstLine.dropFirst(3)), sql: text)
    }

    /// The version this build brings a database to.
    public static var latestVersion: Int { migrations.map(\.version).max() ?? 0 }

    /// The text of `schema.sql` this binary was built with.
    public static var schemaSQL: String { embeddedSchemaSQL }

    /// What a run did.
    public struct Report: Sendable, Equatable, Codable {
        /// Versions applied by this run, oldest first; empty when the database was current.
        public var applied: [Int]
        /// The database's version afterwards.
        public var version: Int
    }

    /// The role the server's connections switch to: row-level security applies to it.
    public static let applicationRole = "attest_app"

    /// Arbitrary, fixed key of the advisory lock that serialises migrations.
    static let lockKey: Int64 = 0x6174_7465_7374  // "attest"

    let logger: Logger

    public init(logger: Logger) { self.logger = logger }

    /// Applies what is missing. Connect as the role that owns (or will own) the tables.
    public func migrate(_ client: PostgresClient) async throws -> Report {
        try await client.withConnection { connection in
            try await connection.query("SELECT pg_advisory_lock(\(Self.lockKey))")
            do {
                let report = try await migrateLocked(connection)
                try await connection.query("SELECT pg_advisory_unlock(\(Self.lockKey))")
                return report
            } catch {
                _ = try? await connection.query("SELECT pg_advisory_unlock(\(Self.lockKey))")
                throw error
            }
        }
    }

    private func migrateLocked(_ connection: PostgresConnection) async throws -> Report {
        let current = try await currentVersion(connection)
        let latest = Self.latestVersion
        if current == 0 {
            try await connection.transaction { connection in
                try await connection.runScript(unsafeSQL: Self.schemaSQL)
                for migration in Self.migrations {
                    try await connection.query(
                        "INSERT INTO schema_migrations (version, name) VALUES (\(migration.version), \(migration.name))")
                }
            }
            logger.info("schema created", metadata: ["version": "\(latest)"])
            return Report(applied: Self.migrations.map(\.version), version: latest)
        }
        if current > latest {
            throw PostgresError(
                code: .server,
                message: "the database is at schema version \(current), newer than this build's \(latest); upgrade attest")
        }
        var applied: [Int] = []
        for migration in Self.migrations where migration.version > current {
            try await connection.transaction { connection in
                try await connection.runScript(unsafeSQL: migration.sql)
                try await connection.query(
                    "INSERT INTO schema_migrations (version, name) VALUES (\(migration.version), \(migration.name))")
            }
            logger.info("migration applied", metadata: ["version": "\(migration.version)", "name": "\(migration.name)"])
            applied.append(migration.version)
        }
        return Report(applied: applied, version: latest)
    }

    private func currentVersion(_ connection: PostgresConnection) async throws -> Int {
        let exists = try await connection.query("SELECT to_regclass('schema_migrations') IS NOT NULL AS present")
        guard try exists.first?.decode("present", as: Bool.self) == true else { return 0 }
        let rows = try await connection.query("SELECT coalesce(max(version), 0) AS version FROM schema_migrations")
        return try rows.first?.decode("version", as: Int.self) ?? 0
    }
}
