import AttestPostgres
import Hummingbird

/// `GET /healthz` (the process answers) and `GET /readyz` (and can reach its database).
package struct HealthRoutes: Sendable {
    package let database: PostgresClient
    package let readinessTimeout: Duration

    package struct Status: ResponseEncodable {
        package var status: String
    }

    package func register(on router: Router<AttestRequestContext>) {
        router.get("healthz") { _, _ in Status(status: "ok") }
        router.get("readyz") { _, context -> Status in
            if let error = await database.ping(timeout: readinessTimeout) {
                context.logger.warning("not ready: database unreachable", metadata: ["error": "\(error)"])
                throw Problem.databaseUnavailable
            }
            return Status(status: "ready")
        }
    }
}
