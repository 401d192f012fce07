import AttestPluginHTTP
import AttestPlugins
import AttestPostgres
import Foundation
import Hummingbird
import HummingbirdCore
import Identity
import Logging
import NIOCore
import Notifications
import ServiceLifecycle
import Surveys
import Tenancy

/// Builds the Hummingbird application: routes, middleware, and the services it runs.
public enum AttestServer {
    public static func buildApplication(
        configuration: ServerConfiguration, database: PostgresClient, readDatabase: PostgresClient? = nil,
        kek: KeyEncryptionKey? = nil, logger: Logger,
        onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) -> some ApplicationProtocol {
        let services = AttestServices(
            database: database, readDatabase: readDatabase, configuration: configuration, kek: kek, logger: logger)
        return buildApplication(configuration: configuration, services: services, logger: logger, onServerRunning: onServerRunning)
    }

    public static func buildApplication(
        configuration: ServerConfiguration, services: AttestServices, logger: Logger,
        onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) -> some ApplicationProtocol {
        let router = buildRouter(configuration: configuration, services: services)
        var background: [any Service] = [services.database, services.authGenerations, services.writer, services.outbox, services.retention]
        if let reader = services.readDatabase { background.append(reader) }
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
        let routeMethods = RouteMethods()
        router.add(middleware: ProblemMiddleware(routeMethods: routeMethods))
        HealthRoutes(database: services.database, readinessTimeout: configuration.readinessTimeout).register(on: router)
        OpenAPIRoute().register(on: router)
        if configuration.metricsPort == nil { services.metrics.register(on: router, pool: services.database) }

        let campus = router.group("v1/campuses/:campus").add(middleware: CampusMiddleware(directory: services.campuses))
        SessionRoutes(services: services).register(on: campus)
        let signedIn = campus.group().add(middleware: AuthenticationMiddleware(services: services))
        SurveyRoutes(services: services).register(on: signedIn)
        AttestationRoutes(services: services).register(campus: campus, signedIn: signedIn)
        BadgeRoutes(services: services).register(campus: campus, signedIn: signedIn)
        TestingLocationRoutes(services: services).register(on: signedIn)
        CommunityRoutes(services: services).register(on: signedIn)
        // A member's own private data: never with an operator's session, counted per member.
        let ownData = signedIn.group().add(middleware: OwnDataMiddleware(limiters: services.limiters))
        JournalRoutes(services: services).register(on: ownData)
        EpisodeRoutes(services: services).register(on: ownData)
        ExportRoutes(services: services).register(on: ownData)
        ShareRoutes(services: services).register(campus: campus, signedIn: ownData)
        StatisticsRoutes(services: services).register(campus: campus, signedIn: signedIn)
        WebRoutes(services: services, settings: configuration.web).register(on: router)
        routeMethods.load(from: router)
        return router
    }
}
