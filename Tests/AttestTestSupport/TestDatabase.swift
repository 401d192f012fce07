import AttestPostgres
import AttestSchema
import Foundation
import Logging
import Synchronization

/// Databases for tests, in the throwaway cluster `scripts/test` starts (reached through
/// libpq's PGHOST/PGUSER environment variables). Each test gets a database of its own,
/// copied from a template that was migrated once per test process.
public enum TestDatabase {
    /// The cluster's maintenance database, for creating and dropping test databases.
    public static func adminClient() throws -> PostgresClient {
        try requireCluster()
        return PostgresClient(
            configuration: PostgresConfiguration(connectionString: "", overrides: ["dbname": "postgres"]),
            options: .init(maxConnections: 2), logger: testLogger)
    }

    /// Creates an empty (`migrated: false`) or fully migrated database and returns its name.
    public static func create(migrated: Bool = true) async throws -> String {
        try requireCluster()
        let name = "attest_test_\(UUID().uuidString.prefix(8).lowercased())_\(counter.add(1, ordering: .relaxed).newValue)"
        let admin = try adminClient()
        defer { Task { await admin.shutdown() } }
        if migrated {
            let template = try await migratedTemplate()
            try await admin.query("CREATE DATABASE \(identifier: name) TEMPLATE \(identifier: template)")
        } else {
            try await admin.query("CREATE DATABASE \(identifier: name)")
        }
        return name
    }

    /// A client for `database`. By default it works as the application role, as the server
    /// does, so row-level security applies; `role: nil` stays the superuser.
    public static func client(
        database: String, role: String? = SchemaMigrator.applicationRole, maxConnections: Int = 4,
        leaseTimeout: Duration = .seconds(10), logger: Logger = testLogger, settingsStyle: TransactionSettings.Style = .automatic
    ) -> PostgresClient {
        var configuration = configuration(database: database, role: role)
        configuration.settingsStyle = settingsStyle
        return PostgresClient(
            configuration: configuration,
            options: .init(maxConnections: maxConnections, leaseTimeout: leaseTimeout), logger: logger)
    }

    public static func configuration(database: String, role: String? = nil) -> PostgresConfiguration {
        PostgresConfiguration(connectionString: "", overrides: ["dbname": database], role: role)
    }

    /// A connection string for `database` that a child process (the `attest` binary) can use:
    /// host and user come from the PG* variables it inherits (the cluster's superuser, which
    /// owns the schema: what `attest migrate` and the operator's commands log in as).
    public static func url(database: String) -> String { "dbname=\(database)" }

    /// The login `attest serve` uses in tests: only a member of attest_app, as in production.
    public static let serverRole = "attest_test_server"

    /// A connection string for `database` as `serverRole`, made once per cluster.
    public static func serverURL(database: String) async throws -> String {
        _ = try await migratedTemplate()  // attest_app exists once a schema was applied
        let task = serverLogin.withLock { task -> Task<Void, any Error> in
            if let task { return task }
            let created = Task<Void, any Error> {
                let admin = try adminClient()
                do {
                    try await ServerLogin.ensureRole(serverRole, owner: admin)
                } catch {
                    await admin.shutdown()
                    throw error
                }
                await admin.shutdown()
            }
            task = created
            return created
        }
        try await task.value
        return "dbname=\(database) user=\(serverRole)"
    }

    private static let serverLogin = Mutex<Task<Void, any Error>?>(nil)

    public static let testLogger: Logger = {
        var logger = Logger(label: "attest.test")
        logger.logLevel = .warning
        return logger
    }()

    private static let counter = Atomic<Int>(0)
    private static let template = Mutex<Task<String, any Error>?>(nil)

    private static func migratedTemplate() async throws -> String {
        let task = template.withLock { task -> Task<String, any Error> in
            if let task { return task }
            let created = Task<String, any Error> {
                let name = "attest_template_\(getpid())_\(UUID().uuidString.prefix(6).lowercased())"
                let admin = try adminClient()
                try await admin.query("CREATE DATABASE \(identifier: name)")
                await admin.shutdown()
                let owner = client(database: name, role: nil, maxConnections: 1)
                _ = try await SchemaMigrator(logger: testLogger).migrate(owner)
                // CREATE DATABASE … TEMPLATE needs the template to have no connections.
                await owner.shutdown()
                return name
            }
            task = created
            return created
        }
        return try await task.value
    }

    private static func requireCluster() throws {
        guard ProcessInfo.processInfo.environment["PGHOST"] != nil else {
            throw TestEnvironmentError(
                "no test PostgreSQL: run the suite with scripts/test, which starts a throwaway cluster and sets PGHOST")
        }
    }
}

public struct TestEnvironmentError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
