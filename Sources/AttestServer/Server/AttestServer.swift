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

/// What serves people over the core: the JSON API (`AttestAPI`) and the pages (`AttestWeb`),
/// each registering its routes on the one router the server builds. Neither knows the other;
/// what both need (sessions, errors, body reading, exports' responses) is this module's.
package protocol FrontEnd: Sendable {
    func register(on router: Router<AttestRequestContext>, services: AttestServices, configuration: ServerConfiguration)
}

/// Builds the Hummingbird application: middleware, the front ends' routes, and the services
/// it runs. The composition root: the CLI passes the front ends.
package enum AttestServer {
    package static func buildApplication(
        configuration: ServerConfiguration, database: PostgresClient, readDatabase: PostgresClient? = nil,
        kek: KeyEncryptionKey? = nil, logger: Logger, frontEnds: [any FrontEnd], traceExport: (any Service)? = nil,
        registry: PluginRegistry = PluginSystem.registry, onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) -> some ApplicationProtocol {
        var configuration = configuration
        configuration.tracing = traceExport != nil
        let services = AttestServices(
            database: database, readDatabase: readDatabase, configuration: configuration, registry: registry, kek: kek, logger: logger)
        return buildApplication(
            configuration: configuration, services: services, logger: logger, frontEnds: frontEnds, traceExport: traceExport,
            onServerRunning: onServerRunning)
    }

    package static func buildApplication(
        configuration: ServerConfiguration, services: AttestServices, logger: Logger, frontEnds: [any FrontEnd],
        traceExport: (any Service)? = nil, onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) -> some ApplicationProtocol {
        let router = buildRouter(configuration: configuration, services: services, frontEnds: frontEnds)
        // Services stop in the reverse order: the trace exporter last, after the spans of the
        // last requests, batches and deliveries.
        var background: [any Service] = traceExport.map { [$0] } ?? []
        background += [
            services.database, services.authGenerations, services.writer, services.outbox, services.retention, services.doorCounts,
        ]
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

    package static func buildRouter(
        configuration: ServerConfiguration, services: AttestServices, frontEnds: [any FrontEnd]
    ) -> Router<AttestRequestContext> {
        let router = Router(context: AttestRequestContext.self)
        if configuration.tracing { router.add(middleware: TraceMiddleware()) }
        router.add(middleware: ClientAddressMiddleware(trustedProxies: configuration.trustedProxies))
        router.add(middleware: RequestLogMiddleware())
        router.add(middleware: RequestMetricsMiddleware(factory: services.metrics.factory))
        let routeMethods = RouteMethods()
        router.add(middleware: ProblemMiddleware(routeMethods: routeMethods))
        HealthRoutes(database: services.database, readinessTimeout: configuration.readinessTimeout).register(on: router)
        if configuration.metricsPort == nil { services.metrics.register(on: router, pool: services.database) }
        for frontEnd in frontEnds { frontEnd.register(on: router, services: services, configuration: configuration) }
        routeMethods.load(from: router)
        return router
    }
}
