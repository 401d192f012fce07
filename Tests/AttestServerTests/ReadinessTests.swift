import AttestAPI
import AttestCLI
import AttestPostgres
import AttestServer
import AttestTestSupport
import AttestWeb
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

@Suite("Health and readiness")
struct ReadinessTests {
    @Test func readyzFollowsTheDatabaseThroughARestart() async throws {
        let directory = URL(fileURLWithPath: "/tmp/attest-ready-\(UUID().uuidString.prefix(8))")
        let cluster = try EmbeddedPostgres(directory: directory)
        defer {
            try? cluster.stop()
            try? FileManager.default.removeItem(at: directory)
        }
        try await offThePool {
            try cluster.initializeIfNeeded(logger: TestDatabase.testLogger, durable: false)
            try cluster.start(logger: TestDatabase.testLogger)
        }
        let pool = PostgresClient(
            configuration: PostgresConfiguration(connectionString: cluster.connectionURL(database: "postgres")),
            options: .init(maxConnections: 2, leaseTimeout: .seconds(2)), logger: TestDatabase.testLogger)
        let app = AttestServer.buildApplication(
            configuration: ServerConfiguration(port: 0, readinessTimeout: .seconds(2)), database: pool,
            logger: TestDatabase.testLogger, frontEnds: TestServer.frontEnds)
        try await app.test(.live) { client in
            let healthy = try await client.execute(uri: "/healthz", method: .get)
            #expect(healthy.status == .ok)
            let ready = try await client.execute(uri: "/readyz", method: .get)
            #expect(ready.status == .ok)
            #expect(String(buffer: ready.body) == #"{"status":"ready"}"#)

            try await offThePool { try cluster.stop() }
            let down = try await client.execute(uri: "/readyz", method: .get)
            #expect(down.status == .serviceUnavailable)
            #expect(down.headers[.contentType] == "application/problem+json")
            #expect(down.headers[.retryAfter] != nil)
            let problem = try JSONDecoder().decode(ProblemBody.self, from: Data(buffer: down.body))
            #expect(problem.status == 503)
            #expect(problem.type == "/problems/database-unavailable")
            // Liveness does not depend on the database.
            #expect(try await client.execute(uri: "/healthz", method: .get).status == .ok)

            try await offThePool { try cluster.start(logger: TestDatabase.testLogger) }
            let back = try await client.execute(uri: "/readyz", method: .get)
            #expect(back.status == .ok)
        }
    }

    @Test func unknownRoutesAnswerProblemJSON() async throws {
        let name = try await TestDatabase.create(migrated: false)
        let pool = TestDatabase.client(database: name, role: nil)
        let app = AttestServer.buildApplication(
            configuration: ServerConfiguration(port: 0), database: pool, logger: TestDatabase.testLogger, frontEnds: TestServer.frontEnds)
        try await app.test(.live) { client in
            let response = try await client.execute(uri: "/v1/nothing-here", method: .get)
            #expect(response.status == .notFound)
            #expect(response.headers[.contentType] == "application/problem+json")
            let problem = try JSONDecoder().decode(ProblemBody.self, from: Data(buffer: response.body))
            #expect(problem.detail.contains("/v1/nothing-here"))
            let wrongMethod = try await client.execute(uri: "/healthz", method: .delete)
            #expect(wrongMethod.status.code >= 400 && wrongMethod.status.code < 500)
            #expect(wrongMethod.headers[.contentType] == "application/problem+json")
        }
    }
}

struct ProblemBody: Decodable {
    var type: String
    var title: String
    var status: Int
    var detail: String
}
