import ArgumentParser
import AttestHTTP
import AttestPostgres
import Foundation
import Logging
import Tenancy

struct DevCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dev",
        abstract: "Run everything locally: a private PostgreSQL cluster, the schema, a demo campus and the server.",
        discussion: """
            The cluster lives in --data-dir (created on first run, reused after), listens only on a \
            Unix socket there, and stops with the server on Ctrl-C or SIGTERM. Its URL is written to \
            DIR/database-url, which other attest commands run from the same directory pick up.
            """
    )

    @Option(help: "Address to listen on.") var host = "127.0.0.1"
    @Option(help: "Port to listen on.") var port = 8080
    @Option(help: "Where the cluster and its data live.") var dataDir = ".attest"
    @Option(help: "Most database connections the server opens.") var dbPoolSize = 10
    @OptionGroup var logging: LoggingOptions

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be between 0 and 65535") }
    }

    func run() async throws {
        let logger = logging.makeLogger(label: "attest.dev")
        let directory = URL(fileURLWithPath: dataDir, relativeTo: URL(fileURLWithPath: FileManager.default.currentDirectoryPath))
        let cluster = try EmbeddedPostgres(directory: directory)
        if let user = cluster.serverUser {
            say("Running as root: PostgreSQL runs as the unprivileged '\(user)' system user.")
        }
        try cluster.initializeIfNeeded(logger: logger)
        try cluster.start(logger: logger)
        do {
            try await serve(cluster: cluster, logger: logger)
        } catch {
            try? cluster.stop()
            throw error
        }
        try cluster.stop()
        say("Stopped the server and PostgreSQL. Data stays in \(cluster.directory.path); run `attest dev` again to resume.")
    }

    private func serve(cluster: EmbeddedPostgres, logger: Logger) async throws {
        let url = cluster.connectionURL(database: "attest")
        try await createDatabaseIfMissing(cluster: cluster, name: "attest", logger: logger)
        try Data((url + "\n").utf8).write(to: cluster.directory.appending(path: "database-url"))
        var database = try DatabaseOptions.parse([])
        database.databaseURL = url
        database.dbPoolSize = dbPoolSize
        let host = self.host
        try await migrateThenServe(
            database: database, server: ServerConfiguration(host: host, port: port), logger: logger,
            afterMigration: {
                let client = try database.applicationClient(logger: logger)
                try await withShutdown(client) { try await DemoCampus.ensure(client: client) }
            },
            onServerRunning: { port in
                let base = "http://\(host):\(port)"
                say(
                    """

                    Campus Attest is running (Ctrl-C stops the server and PostgreSQL).
                      Health:       \(base)/healthz
                      Readiness:    \(base)/readyz
                      Demo campus:  \(DemoCampus.slug) (\(DemoCampus.timeZone), daily deadline 10:00)
                      Database:     \(url)
                                    (saved in \(cluster.directory.path)/database-url; other attest commands here use it)
                      Server log:   \(cluster.logFile.path)

                    """)
            })
    }

    private func createDatabaseIfMissing(cluster: EmbeddedPostgres, name: String, logger: Logger) async throws {
        let admin = PostgresClient(
            configuration: PostgresConfiguration(connectionString: cluster.connectionURL(database: "postgres")),
            options: .init(maxConnections: 1), logger: logger)
        try await withShutdown(admin) {
            let rows = try await admin.query("SELECT 1 FROM pg_database WHERE datname = \(name)")
            if rows.isEmpty { try await admin.query("CREATE DATABASE \(identifier: name)") }
        }
    }
}

/// The campus `attest dev` creates: what exists of it grows with the platform.
enum DemoCampus {
    static let slug = "demo"
    static let timeZone = "America/New_York"

    static func ensure(client: PostgresClient) async throws {
        let campuses = CampusStore(client: client)
        if try await campuses.find(slug: slug) != nil { return }
        _ = try await campuses.create(
            NewCampus(slug: slug, name: "Demo University", timeZone: timeZone, deadlineMinute: 600, emailDomains: ["demo.example.edu"]))
    }
}
