import AttestPostgres
import Foundation
import Hummingbird
import Logging

/// The request context of every route.
public struct AttestRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    public init(source: ApplicationRequestContextSource) { coreContext = .init(source: source) }
}

/// Settings of the HTTP server. Every field has a default.
public struct ServerConfiguration: Sendable {
    /// Address to bind. Default `127.0.0.1`.
    public var host: String
    /// TCP port. Default 8080; 0 picks a free one.
    public var port: Int
    /// How long `/readyz` waits for the database before answering 503. Default 2 s.
    public var readinessTimeout: Duration

    public init(host: String = "127.0.0.1", port: Int = 8080, readinessTimeout: Duration = .seconds(2)) {
        self.host = host
        self.port = port
        self.readinessTimeout = readinessTimeout
    }
}

/// Builds the Hummingbird application: routes, middleware, and the services it runs.
public enum AttestServer {
    public static func buildApplication(
        configuration: ServerConfiguration, database: PostgresClient, logger: Logger,
        onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) -> some ApplicationProtocol {
        let router = buildRouter(configuration: configuration, database: database)
        return Application(
            router: router,
            configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: nil),
            services: [database],
            onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? configuration.port) },
            logger: logger)
    }

    public static func buildRouter(configuration: ServerConfiguration, database: PostgresClient) -> Router<AttestRequestContext> {
        let router = Router(context: AttestRequestContext.self)
        router.add(middleware: RequestLogMiddleware())
        router.add(middleware: ProblemMiddleware())
        HealthRoutes(database: database, readinessTimeout: configuration.readinessTimeout).register(on: router)
        return router
    }
}
