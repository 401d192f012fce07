import AttestPluginHTTP
import AttestPlugins
import AttestPostgres
import Foundation
import Hummingbird
import HummingbirdCore
import NIOCore
import Identity
import Logging
import Notifications
import ServiceLifecycle
import Surveys
import Tenancy

/// The request context of every route: the campus and session once middleware found them.
public struct AttestRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// Set by `CampusMiddleware` on every `/v1/campuses/{campus}` route.
    public var campus: Campus?
    /// Set by `AuthenticationMiddleware` on routes that need a signed-in user.
    public var session: SessionStore.Session?
    /// The address the connection came from (the proxy's, behind one).
    public let peerAddress: String?
    /// The client's address: the peer's, or behind a trusted proxy the one it names in
    /// `X-Forwarded-For` (set by `ClientAddressMiddleware`). What rate limits count by.
    public var clientAddress: String?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        peerAddress = source.channel.remoteAddress?.ipAddress
        clientAddress = peerAddress
    }

    /// The largest request body any route accepts (64 KiB); more is a 413.
    public var maxUploadSize: Int { 64 * 1024 }

    /// JSON responses without escaped slashes ("America/New_York").
    public var responseEncoder: JSONEncoder { Self.encoder }
    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        return encoder
    }()

    /// The resolved campus (middleware guarantees it on campus routes).
    public func requireCampus() throws -> Campus {
        guard let campus else { throw Problem.internalError }
        return campus
    }

    /// The signed-in user's session (middleware guarantees it on authenticated routes).
    public func requireSession() throws -> SessionStore.Session {
        guard let session else { throw Problem.unauthorized("Sign in first.") }
        return session
    }
}

/// Settings of the HTTP server. Every field has a default.
public struct ServerConfiguration: Sendable {
    /// Address to bind. Default `127.0.0.1`.
    public var host: String
    /// TCP port. Default 8080; 0 picks a free one.
    public var port: Int
    /// How long `/readyz` waits for the database before answering 503. Default 2 s.
    public var readinessTimeout: Duration
    /// How long a campus looked up by slug is reused before it is read again. Default 5 s:
    /// `attest campus set` takes effect on every server within this.
    public var campusCacheTTL: Duration
    /// How many attestation batches may be written at once, each on its own connection.
    /// Default 1: while a batch is written the next one gathers, so batches grow with the
    /// load and the database does less work per submission (Benchmarks/submit: 1 beat 2 and
    /// 4). More overlap batches' commits, which may pay where a commit waits long on storage.
    public var writeWorkers: Int
    /// Where `GET /metrics` is served: nil (the default), on `port` with the API; else only on
    /// this port of `host`, which a firewall or a Kubernetes port keeps internal.
    public var metricsPort: Int?
    /// Sign-in and unknown-token limits, per client address and per campus (`RateLimits`).
    public var rateLimits: RateLimits
    /// Addresses of the reverse proxies in front (nginx): only a request from one of these
    /// may name its client in `X-Forwarded-For`. Default none: the peer is the client.
    public var trustedProxies: Set<String>
    /// What outbound requests (identity providers' keys, webhooks, feeds) may reach beyond
    /// https on public addresses: hosts allowed by name. Default none.
    public var outbound: AsyncPluginHTTPClient.Policy
    /// A connection must deliver a request's whole head within this of opening or of its
    /// last response (a slow client's trickle does not count), and an idle keep-alive
    /// connection is closed after it. Default 10 s.
    public var idleTimeout: Duration

    public init(
        host: String = "127.0.0.1", port: Int = 8080, readinessTimeout: Duration = .seconds(2),
        campusCacheTTL: Duration = .seconds(5), writeWorkers: Int = 1, metricsPort: Int? = nil,
        rateLimits: RateLimits = RateLimits(), trustedProxies: Set<String> = [],
        outbound: AsyncPluginHTTPClient.Policy = .init(), idleTimeout: Duration = .seconds(10)
    ) {
        self.outbound = outbound
        self.idleTimeout = idleTimeout
        self.rateLimits = rateLimits
        self.trustedProxies = trustedProxies
        self.host = host
        self.port = port
        self.metricsPort = metricsPort
        self.readinessTimeout = readinessTimeout
        self.campusCacheTTL = campusCacheTTL
        self.writeWorkers = max(1, writeWorkers)
    }
}

extension ServerConfiguration {
    /// HTTP/1.1 with the idle and slow-client timeout.
    var httpServer: HTTPServerBuilder {
        let nanoseconds = idleTimeout.components.seconds.multipliedReportingOverflow(by: 1_000_000_000)
        let timeout: TimeAmount = nanoseconds.overflow ? .hours(1) : .nanoseconds(nanoseconds.partialValue)
        return .http1(configuration: .init(idleTimeout: timeout))
    }
}

/// Everything the routes use, built once per server.
public struct AttestServices: Sendable {
    public var database: PostgresClient
    public var campuses: CampusDirectory
    public var users: UserStore
    public var sessions: SessionStore
    public var issuers: OIDCIssuerStore
    public var idTokens: IDTokenVerifier
    /// One sign-in per ID token; the nonces of sign-ins the server starts.
    public var signIns: SignInGuard
    public var questionnaires: QuestionnaireStore
    public var activeQuestionnaires: ActiveQuestionnaires
    /// The batched attestation writer: a `Service` the application runs.
    public var writer: AttestationWriter
    public var attestations: AttestationService
    public var badges: BadgeService
    public var testingLocations: TestingLocationDirectory
    /// Delivers the notification outbox: a `Service` the application runs.
    public var outbox: OutboxWorker
    public var statistics: StatisticsStore
    /// The daily retention purge: a `Service` the application runs.
    public var retention: RetentionService
    /// The time "now" (tests set it to probe deadlines and date changes).
    public var clock: @Sendable () -> Date
    /// What `GET /metrics` shows: this server's own registry.
    public var metrics: ServerMetrics
    /// Sign-in and unknown-token rate limits (this server's own counts).
    public var limiters: RequestLimiters

    public init(
        database: PostgresClient, configuration: ServerConfiguration, registry: PluginRegistry = PluginSystem.registry,
        kek: KeyEncryptionKey? = nil, logger: Logger, clock: @escaping @Sendable () -> Date = { Date() },
        metrics: ServerMetrics = ServerMetrics()
    ) {
        self.database = database
        self.metrics = metrics
        self.limiters = RequestLimiters(configuration.rateLimits)
        self.campuses = CampusDirectory(store: CampusStore(client: database), ttl: configuration.campusCacheTTL)
        self.users = UserStore(client: database)
        self.sessions = SessionStore(client: database)
        self.issuers = OIDCIssuerStore(client: database)
        let http = AsyncPluginHTTPClient(policy: configuration.outbound)
        self.idTokens = IDTokenVerifier(keys: JWKSCache(http: http, logger: logger))
        self.questionnaires = QuestionnaireStore(client: database)
        self.activeQuestionnaires = ActiveQuestionnaires(store: questionnaires)
        self.writer = AttestationWriter(
            client: database, workers: configuration.writeWorkers, logger: logger, metrics: SubmissionMetrics(factory: metrics.factory))
        self.attestations = AttestationService(client: database, writer: writer, registry: registry, logger: logger)
        self.badges = BadgeService(client: database, keys: BadgeKeyStore(client: database, kek: kek))
        self.testingLocations = TestingLocationDirectory(
            client: database, registry: registry, http: http, logger: logger)
        self.outbox = OutboxWorker(
            client: database, registry: registry, http: http, logger: logger, clock: clock,
            metrics: metrics.factory)
        self.statistics = StatisticsStore(client: database)
        self.retention = RetentionService(client: database, logger: logger, clock: clock, upkeeps: [SignInUpkeep(client: database)])
        self.signIns = SignInGuard(client: database)
        self.clock = clock
    }
}

/// Builds the Hummingbird application: routes, middleware, and the services it runs.
public enum AttestServer {
    public static func buildApplication(
        configuration: ServerConfiguration, database: PostgresClient, kek: KeyEncryptionKey? = nil, logger: Logger,
        onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) -> some ApplicationProtocol {
        let services = AttestServices(database: database, configuration: configuration, kek: kek, logger: logger)
        return buildApplication(configuration: configuration, services: services, logger: logger, onServerRunning: onServerRunning)
    }

    public static func buildApplication(
        configuration: ServerConfiguration, services: AttestServices, logger: Logger,
        onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) -> some ApplicationProtocol {
        let router = buildRouter(configuration: configuration, services: services)
        var background: [any Service] = [services.database, services.writer, services.outbox, services.retention]
        if let metricsPort = configuration.metricsPort {
            let metricsRouter = Router()
            services.metrics.register(on: metricsRouter, pool: services.database)
            background.append(
                Application(
                    router: metricsRouter, server: configuration.httpServer,
                    configuration: .init(address: .hostname(configuration.host, port: metricsPort), serverName: nil), logger: logger))
        }
        return Application(
            router: router, server: configuration.httpServer,
            configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: nil),
            services: background,
            onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? configuration.port) },
            logger: logger)
    }

    public static func buildRouter(configuration: ServerConfiguration, services: AttestServices) -> Router<AttestRequestContext> {
        let router = Router(context: AttestRequestContext.self)
        router.add(middleware: ClientAddressMiddleware(trustedProxies: configuration.trustedProxies))
        router.add(middleware: RequestLogMiddleware())
        router.add(middleware: RequestMetricsMiddleware(factory: services.metrics.factory))
        router.add(middleware: ProblemMiddleware())
        HealthRoutes(database: services.database, readinessTimeout: configuration.readinessTimeout).register(on: router)
        OpenAPIRoute().register(on: router)
        if configuration.metricsPort == nil { services.metrics.register(on: router, pool: services.database) }

        let campus = router.group("v1/campuses/:campus").add(middleware: CampusMiddleware(directory: services.campuses))
        SessionRoutes(services: services).register(on: campus)
        let signedIn = campus.group().add(middleware: AuthenticationMiddleware(services: services))
        SurveyRoutes(services: services).register(on: signedIn)
        AttestationRoutes(services: services).register(on: signedIn)
        BadgeRoutes(services: services).register(campus: campus, signedIn: signedIn)
        TestingLocationRoutes(services: services).register(on: signedIn)
        StatisticsRoutes(services: services).register(campus: campus, signedIn: signedIn)
        return router
    }
}
