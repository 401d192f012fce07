import ArgumentParser
import AttestAPI
import AttestPlugins
import AttestPostgres
import AttestSchema
import AttestServer
import AttestWeb
import Foundation
import Hummingbird
import Logging
import Surveys
import Tenancy

struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the HTTP server (stops gracefully on SIGTERM or SIGINT).",
        discussion: """
            The server logs in with --database-url (or $DATABASE_URL) as a role that is only a member of \
            attest_app and owns nothing; it refuses a superuser or the schema's owner. Migrations run as \
            the owner: `attest migrate` beforehand, or --migrate-url here, which applies them before serving.
            """
    )

    @Option(help: "Address to listen on.") var host = "127.0.0.1"
    @Option(help: "Port to listen on.") var port = 8080
    @Option(help: "Attestation batches written at once, each on its own database connection.") var writeWorkers = 1
    @Option(help: "Serve GET /metrics (Prometheus text) only on this port of --host, not with the API.") var metricsPort: Int?
    @Option(
        help: ArgumentHelp(
            "The schema owner's libpq URI (or @FILE): apply pending migrations with it before serving.", valueName: "url"))
    var migrateURL: String?
    @OptionGroup var proxies: TrustedProxyOptions
    @Option(
        name: .customLong("allow-outbound-host"),
        help: ArgumentHelp(
            "A host the server may reach over plain http and at private, loopback or link-local addresses (repeatable): an internal webhook receiver or feed. Everything else is https to public addresses only.",
            valueName: "host"))
    var outboundHosts: [String] = []
    @Option(
        help: ArgumentHelp(
            "Seconds a connection has to send a request's whole head (after opening, or after its last response); an idle keep-alive connection closes after it.",
            valueName: "seconds"))
    var idleTimeout = 10
    @Option(
        help: ArgumentHelp(
            "Where browsers reach the web pages, e.g. https://attest.example.edu (behind the proxy that ends TLS): the address identity providers send people back to after sign-in. Over https the session cookie is __Host- and Secure.",
            valueName: "url"))
    var publicURL: String?
    @Option(
        help: ArgumentHelp(
            "A streaming standby's libpq URI or conninfo (or @FILE), logged in as the same role: the statistics, dashboard and report reads go there (a standby is usually under a second behind). Default: $DATABASE_READ_URL; none: everything reads the primary.",
            valueName: "url"))
    var databaseReadURL: String?
    @Option(
        help: ArgumentHelp(
            "A key-encryption key that still opens what it sealed but seals nothing (repeatable): the old key while `attest keys rotate-kek` runs.",
            valueName: "file"))
    var previousKekFile: [String] = []
    @Option(
        help: ArgumentHelp(
            "How many leading bits of an IPv6 address count as one client for the rate limits (a subscriber's /64 by default; 48 for a stricter view).",
            valueName: "bits"))
    var rateLimitIPv6Prefix = 64
    @Option(
        help: ArgumentHelp(
            "Visits one client address may register at once (then a tenth of that a minute; 10 by default): raise it when visitors arrive through one NAT address, such as the campus's guest Wi-Fi.",
            valueName: "count"))
    var guestVisitsPerAddress = 10
    @OptionGroup var ownData: OwnDataLimitOptions
    @OptionGroup var database: DatabaseOptions
    @OptionGroup var keys: KeyOptions
    @OptionGroup var logging: LoggingOptions

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be between 0 and 65535") }
        if let metricsPort {
            guard (1...65535).contains(metricsPort) else { throw ValidationError("--metrics-port must be between 1 and 65535") }
            guard metricsPort != port else {
                throw ValidationError(
                    "--metrics-port must differ from --port: pass another port, or leave it out to serve /metrics with the API")
            }
        }
        if let publicURL, WebConfiguration.parsePublicURL(publicURL) == nil {
            throw ValidationError(
                "--public-url must be an absolute http or https URL without query or fragment, such as https://attest.example.edu")
        }
        guard (16...128).contains(rateLimitIPv6Prefix) else {
            throw ValidationError("--rate-limit-ipv6-prefix must be from 16 to 128 bits")
        }
        guard (1...100_000).contains(guestVisitsPerAddress) else {
            throw ValidationError("--guest-visits-per-address must be from 1 to 100000")
        }
        guard (1...3_600).contains(idleTimeout) else { throw ValidationError("--idle-timeout must be from 1 to 3600 seconds") }
        guard (1...64).contains(writeWorkers) else { throw ValidationError("--write-workers must be from 1 to 64") }
        guard writeWorkers < database.dbPoolSize else {
            throw ValidationError(
                "--write-workers (\(writeWorkers)) must be less than --db-pool-size (\(database.dbPoolSize)): other requests need connections too"
            )
        }
    }

    func run() async throws {
        let logger = logging.makeLogger(label: "attest")
        let kek = try keys.require(for: database).accepting(try KeyOptions.load(files: previousKekFile, option: "--previous-kek-file"))
        try await migrateThenServe(
            database: database, readURL: try database.resolveReadURL(databaseReadURL),
            migrateURL: try migrateURL.map { try Secret.read($0, option: "--migrate-url") }, kek: kek,
            server: ServerConfiguration(
                host: host, port: port, writeWorkers: writeWorkers, metricsPort: metricsPort,
                rateLimits: RateLimits(
                    ipv6Prefix: rateLimitIPv6Prefix, ownDataRequestsPerMember: ownData.limit, guestVisitsPerAddress: guestVisitsPerAddress),
                trustedProxies: proxies.addresses,
                outbound: .init(allowedHosts: Swift.Set(outboundHosts)), idleTimeout: .seconds(idleTimeout),
                web: WebConfiguration(publicURL: publicURL.flatMap(WebConfiguration.parsePublicURL))), logger: logger
        ) { port in
            logger.info("listening", metadata: ["url": "http://\(host):\(port)/"])
        }
    }
}

/// What `serve` and `dev` share: migrate as the owner (when given its URL), check the
/// server's own login (`ServerLogin`), then serve as the application role.
func migrateThenServe(
    database: DatabaseOptions, readURL: String? = nil, migrateURL: String?, kek: KeyEncryptionKey, server: ServerConfiguration,
    logger: Logger, registry: PluginRegistry = PluginSystem.registry,
    afterMigration: (() async throws -> Void)? = nil,
    onServerRunning: @escaping @Sendable (Int) async -> Void
) async throws {
    // The standby's URL and the trace settings are checked first, so a typo stops `serve`
    // before it migrates or connects.
    let traceExport = try TraceExport.start(environment: ProcessInfo.processInfo.environment, logger: logger)
    let reader = try readURL.map { try database.readClient(url: $0, logger: logger) }
    if let migrateURL {
        let owner = PostgresClient(
            configuration: PostgresConfiguration(connectionString: migrateURL), options: .init(maxConnections: 1), logger: logger)
        try await withShutdown(owner) {
            _ = try await SchemaMigrator(logger: logger).migrate(owner)
        }
    }
    let login = try database.ownerClient(logger: logger, maxConnections: 1)
    do {
        try await withShutdown(login) { try await ServerLogin.check(login) }
    } catch let refusal as ServerLogin.Refusal {
        throw CLIError("cannot serve: \(refusal)")
    }
    if let afterMigration { try await afterMigration() }
    let pool = try database.applicationClient(logger: logger)
    do {
        // Every campus's badge keys open with this key-encryption key (older plain ones are
        // sealed now), and plugin secrets stored before they were sealed are sealed now.
        let keys = BadgeKeyStore(client: pool, kek: kek)
        let plugins = CampusPluginStore(client: pool, kek: kek)
        // One read finds the campuses with anything to seal or a key under another KEK
        // (usually none): a start reads no campus one by one, however many there are.
        let census = try await pool.query(
            "SELECT campus_id FROM attest_sealing_census(\(kek.ids), \(registry.secretHints))")
        let store = CampusStore(client: pool)
        for row in census {
            guard let campus = try await store.find(id: CampusID(try row.decode("campus_id"))) else { continue }
            let sealed: Int
            do {
                sealed = try await keys.prepare(campus: campus.id)
            } catch CampusError.otherKeyEncryptionKey(let other, let given) {
                await pool.shutdown()
                throw CLIError(foreignKeyRefusal(campus: campus.slug, sealedWith: other, given: given))
            }
            if sealed > 0 {
                logger.notice(
                    "sealed badge keys stored before keys were encrypted", metadata: ["campus": "\(campus.slug)", "keys": "\(sealed)"])
            }
            let secrets = try await plugins.sealPlainSecrets(campus: campus.id) { registry.secretMembers(of: $2, kind: $0, id: $1) }
            if secrets > 0 {
                logger.notice("sealed plugin secrets stored in the clear", metadata: ["campus": "\(campus.slug)", "plugins": "\(secrets)"])
            }
        }
    } catch let error as CampusError {
        await pool.shutdown()
        throw CLIError("cannot serve: \(error)")
    }
    let app = AttestServer.buildApplication(
        configuration: server, database: pool, readDatabase: reader, kek: kek, logger: logger,
        frontEnds: [APIFrontEnd(), WebFrontEnd()], traceExport: traceExport, registry: registry, onServerRunning: onServerRunning)
    do {
        try await app.runService()
    } catch  where "\(error)".contains("Address already in use") {
        if let metricsPort = server.metricsPort {
            throw CLIError(
                "cannot listen on \(server.host):\(server.port) or \(server.host):\(metricsPort) (--metrics-port): one of them is already in use; pass other ports or stop the process using it"
            )
        }
        throw CLIError(
            "cannot listen on \(server.host):\(server.port): the address is already in use; pass another --port or stop the process using it"
        )
    }
}

/// Why `serve` stops when a campus's secrets are under another key-encryption key (a campus
/// made with the wrong key file before sealing commands checked it), and the two ways out.
func foreignKeyRefusal(campus: String, sealedWith other: String, given: String) -> String {
    "cannot serve: campus \(campus)'s secrets are sealed under key-encryption key \(other), not the one given (\(given)). "
        + "If \(given) is this deployment's key, re-wrap them under it: `attest keys rotate-kek --kek-file FILE "
        + "--previous-kek-file OTHER --new-kek-file FILE` (FILE holds \(given), OTHER holds \(other)); if \(other) is, pass its file. "
        + "A key file's fingerprint: base64 -d FILE | sha256sum | cut -c1-16"
}
