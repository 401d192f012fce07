import AttestPlugins
import AttestPostgres
import AttestTestSupport
import BuiltinPlugins
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Identity
import Logging
import ServiceLifecycle
import Surveys
import Synchronization
import Tenancy
import Testing

@testable import AttestAPI
@testable import AttestServer
@testable import AttestWeb

/// A test's view of the live server: requests go over loopback HTTP, and every response is
/// checked against the OpenAPI document on the way back.
///
/// One `APIClient` is one HTTP/1.1 connection, and the server answers a connection's requests
/// one at a time, in order. Requests meant to reach the server together each need a client
/// of their own: `withConnections`.
struct APIClient {
    let client: LiveClient
    /// The connection of a client made by `withConnections`; nil: the test's own `client`.
    private var connection: TestClient? = nil

    init(client: LiveClient) { self.client = client }

    struct Reply {
        var status: Int
        var headers: HTTPFields
        var body: String
        var json: [String: Any] { (try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]) ?? [:] }
        var problem: (type: String, detail: String, fields: [String]) {
            let errors = (json["errors"] as? [[String: Any]]) ?? []
            return (json["type"] as? String ?? "", json["detail"] as? String ?? "", errors.compactMap { $0["field"] as? String })
        }
    }

    /// `template` is the OpenAPI path the request is checked against.
    func send(
        _ method: HTTPRequest.Method, _ uri: String, template: String, token: String? = nil, json: String? = nil,
        bytes: [UInt8]? = nil, contentType: String = "application/json", headers extra: HTTPFields = [:],
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> Reply {
        var headers = extra
        if let token { headers[.authorization] = "Bearer \(token)" }
        if json != nil || bytes != nil { headers[.contentType] = contentType }
        let body = json.map { ByteBuffer(string: $0) } ?? bytes.map { ByteBuffer(bytes: $0) }
        let reply: Reply
        if let connection {
            headers[.connection] = "keep-alive"
            let response = try await connection.execute(.init(uri, method: method, authority: "localhost", headers: headers, body: body))
            reply = Reply(
                status: Int(response.status.code), headers: response.headers, body: response.body.map { String(buffer: $0) } ?? "")
        } else {
            let response = try await client.execute(uri: uri, method: method, headers: headers, body: body)
            reply = Reply(status: Int(response.status.code), headers: response.headers, body: String(buffer: response.body))
        }
        let problems = OpenAPIValidator.problems(
            method: method.rawValue, path: template, status: reply.status, contentType: reply.headers[.contentType], body: reply.body)
        #expect(problems.isEmpty, "response does not match /openapi.yaml: \(problems)", sourceLocation: sourceLocation)
        return reply
    }

    /// Runs `body` with `count` clients on connections of their own to the same server, so
    /// that their requests are in the server at the same time.
    func withConnections<Value: Sendable>(
        _ count: Int, _ body: @Sendable ([APIClient]) async throws -> Value
    ) async throws -> Value {
        let connections = (0..<count).map { _ in
            TestClient(host: "127.0.0.1", port: client.port, configuration: .init(timeout: LiveClient.readTimeout))
        }
        for connection in connections { connection.connect() }
        let clients = connections.map { connection in
            var api = APIClient(client: client)
            api.connection = connection
            return api
        }
        let value: Value
        do {
            value = try await body(clients)
        } catch {
            for connection in connections { try? await connection.shutdown() }
            throw error
        }
        for connection in connections { try await connection.shutdown() }
        return value
    }
}

/// A migrated database with the application pool, and a live server on it.
struct TestServer {
    let database: String
    let pool: PostgresClient
    let services: AttestServices
    var configuration = ServerConfiguration()

    static func make(
        registry: PluginRegistry = .builtin, clock: @escaping @Sendable () -> Date = { Date() },
        configuration: ServerConfiguration = .loopback,
        settingsStyle: TransactionSettings.Style = .automatic, kek: KeyEncryptionKey = Self.kek, database existing: String? = nil
    ) async throws -> TestServer {
        let database = if let existing { existing } else { try await TestDatabase.create() }
        let pool = TestDatabase.client(database: database, maxConnections: 8, settingsStyle: settingsStyle)
        // A loaded CI machine may go seconds between two reads of the generations; what the
        // tests check is what moves them on, not how long a read is trusted.
        var configuration = configuration
        configuration.generationsTrustedFor = .seconds(60)
        let services = AttestServices(
            database: pool, configuration: configuration, registry: registry, kek: kek, logger: TestDatabase.testLogger, clock: clock)
        return TestServer(database: database, pool: pool, services: services, configuration: configuration)
    }

    /// The API and the pages, as `attest serve` runs them.
    static let frontEnds: [any FrontEnd] = [APIFrontEnd(), WebFrontEnd()]

    /// The key-encryption key of the servers these tests make, as an operator passes one: the
    /// one every `attest` command the tests start is given (`ChildProcess.testKEK`), as a
    /// deployment's servers and its CLI share theirs (a command given another key refuses).
    static let kek: KeyEncryptionKey = {
        guard let key = KeyEncryptionKey(text: ChildProcess.testKEK) else { fatalError("ChildProcess.testKEK is not 32 bytes in base64") }
        return key
    }()

    /// Creates a campus (and its users) through the stores, as the CLI would.
    func campus(
        _ slug: String, domains: [String] = ["example.edu"], timeZone: String = "America/New_York", deadlineMinute: Int = 600
    ) async throws -> Campus {
        try await CampusStore(client: pool).create(
            NewCampus(slug: slug, name: slug.capitalized, timeZone: timeZone, deadlineMinute: deadlineMinute, emailDomains: domains),
            setUp: services.badges.keys.provision)
    }

    func user(_ email: String, at campus: Campus, roles: [Role] = []) async throws -> (user: User, token: String) {
        let users = UserStore(client: pool)
        let user = try await users.add(campus: campus, email: email, displayName: email, actor: "test")
        for role in roles { try await users.grant(campus: campus, email: email, role: role, actor: "test") }
        let issued = try await SessionStore(client: pool).issue(campus: campus, user: user.id)
        return (user, issued.token)
    }

    /// Runs `body` against the server over loopback, with extra routes when a test needs them.
    func run(
        extraRoutes: (Router<AttestRequestContext>) -> Void = { _ in }, logger: Logger = TestDatabase.testLogger,
        _ body: @escaping @Sendable (APIClient) async throws -> Void
    ) async throws {
        let router = AttestServer.buildRouter(configuration: configuration, services: services, frontEnds: TestServer.frontEnds)
        extraRoutes(router)
        let (ports, reportPort) = AsyncStream<Int>.makeStream()
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            services: [services.writer, services.doorCounts],
            onServerRunning: { channel in
                reportPort.yield(channel.localAddress?.port ?? 0)
                reportPort.finish()
            },
            logger: logger)
        let serviceGroup = ServiceGroup(
            configuration: .init(services: [app], gracefulShutdownSignals: [], logger: logger))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                // A server that cannot bind ends here without reporting a port: the wait below
                // then ends too, and the test fails with the server's error instead of hanging.
                defer { reportPort.finish() }
                try await serviceGroup.run()
            }
            var bound = ports.makeAsyncIterator()
            guard let port = await bound.next() else {
                try await group.next()
                throw TestEnvironmentError("the test server did not start")
            }
            let client = LiveClient(port: port)
            do {
                try await body(APIClient(client: client))
            } catch {
                try? await client.connection.shutdown()
                await serviceGroup.triggerGracefulShutdown()
                throw error
            }
            try await client.connection.shutdown()
            await serviceGroup.triggerGracefulShutdown()
            try await group.waitForAll()
        }
        await pool.shutdown()
    }
}

extension ServerConfiguration {
    /// The server's defaults, with outbound requests allowed to 127.0.0.1, where a test's
    /// feeds, webhook receivers and push services listen.
    static var loopback: ServerConfiguration { ServerConfiguration(outbound: .init(allowedHosts: ["127.0.0.1"])) }
}

/// A test's HTTP/1.1 connection to the live server, as HummingbirdTesting's `.live` makes,
/// but waiting `readTimeout` for an answer rather than `.live`'s fixed 20 s: in CI's busiest
/// minute, with some 450 tests under way on two cores, an answer has taken longer. No test
/// measures the server's speed with this wait; tests of time use their own clocks and limits.
struct LiveClient: Sendable {
    static let readTimeout: Duration = .seconds(120)

    let port: Int
    let connection: TestClient

    init(port: Int) {
        self.port = port
        connection = TestClient(host: "127.0.0.1", port: port, configuration: .init(timeout: Self.readTimeout))
        connection.connect()
    }

    struct Response {
        var status: HTTPResponse.Status
        var headers: HTTPFields
        var body: ByteBuffer
    }

    func execute(uri: String, method: HTTPRequest.Method, headers: HTTPFields = [:], body: ByteBuffer? = nil) async throws -> Response {
        var headers = headers
        headers[.connection] = "keep-alive"
        let response = try await connection.execute(.init(uri, method: method, authority: "localhost", headers: headers, body: body))
        return Response(status: response.status, headers: response.headers, body: response.body ?? ByteBuffer())
    }
}

/// Serves `router` on a free loopback port for a test's helper servers (feeds, webhook
/// receivers); returns the port and the task to cancel to stop it.
func startLoopbackServer(_ router: Router<BasicRequestContext>, port: Int = 0) async throws -> (port: Int, task: Task<Void, any Error>) {
    let (ports, continuation) = AsyncStream<Int>.makeStream()
    var logger = TestDatabase.testLogger
    logger.logLevel = .critical
    let app = Application(
        router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)),
        onServerRunning: { channel in continuation.yield(channel.localAddress?.port ?? 0) }, logger: logger)
    let task = Task {
        defer { continuation.finish() }
        try await app.runService(gracefulShutdownSignals: [])
    }
    var iterator = ports.makeAsyncIterator()
    guard let bound = await iterator.next() else {
        // The server ended before it served (a port already taken): its error, not a hang.
        try await task.value
        throw TestEnvironmentError("a loopback test server did not start")
    }
    return (bound, task)
}

/// A transaction-level advisory lock held by another connection of the server's pool, as
/// another server's change under way holds it, until `release`.
struct AnotherServersLock {
    private let released: AsyncStream<Void>.Continuation
    private let holder: Task<Void, any Error>

    /// Takes the lock `lock` takes (`SELECT pg_advisory_xact_lock(…)`), in a transaction at `campus`.
    static func take(_ lock: SQL, on server: TestServer, campus: CampusID) async throws -> AnotherServersLock {
        let (released, release) = AsyncStream<Void>.makeStream()
        let (locked, isLocked) = AsyncStream<Void>.makeStream()
        let holder = Task {
            defer { isLocked.finish() }
            try await server.pool.withTransaction(campus: campus.rawValue) { connection in
                try await connection.query(lock)
                isLocked.yield()
                for await _ in released { break }
            }
        }
        for await _ in locked { break }
        return AnotherServersLock(released: release, holder: holder)
    }

    /// Ends the other server's transaction. Call it before waiting for work the lock holds up.
    func release() { released.finish() }

    /// Releases the lock and waits for its transaction to end.
    func end() async throws {
        release()
        try await holder.value
    }

    /// How many of the database's sessions wait for an advisory lock, once some do and the
    /// rest of the work started with them has had time to queue too.
    static func waiters(on server: TestServer) async throws -> Int {
        let waiting: SQL = """
            SELECT count(*) AS n FROM pg_locks
            WHERE locktype = 'advisory' AND NOT granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
            """
        // Up to 15 s for the first: on a loaded CI machine the work may be slow to start.
        var polls = 0
        while polls < 300, try await server.pool.query(waiting)[0].decode("n", as: Int.self) == 0 {
            try await Task.sleep(for: .milliseconds(50))
            polls += 1
        }
        try await Task.sleep(for: .milliseconds(300))
        return try await server.pool.query(waiting)[0].decode("n")
    }
}

@Suite("The tests' own loopback servers")
struct LoopbackServerTests {
    /// A helper server that cannot bind fails the test that starts it with the server's own
    /// error; it once waited for a port that never came, and the test hung until CI's limit.
    @Test(.timeLimit(.minutes(1))) func aServerWhosePortIsTakenFailsWithItsErrorInsteadOfWaitingForever() async throws {
        let first = try await startLoopbackServer(Router())
        defer { first.task.cancel() }
        await #expect(throws: (any Error).self) {
            let second = try await startLoopbackServer(Router(), port: first.port)
            second.task.cancel()
        }
    }
}
