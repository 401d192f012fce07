import AttestPostgres
import AttestTestSupport
import Foundation
import Testing

@Suite("Connection pool")
struct PoolTests {
    @Test func anExhaustedPoolWaitsThenTimesOutClearly() async throws {
        try await withFreshDatabase(maxConnections: 1, leaseTimeout: .milliseconds(300)) { client in
            let started = ContinuousClock.now
            let error = await #expect(throws: PostgresError.self) {
                try await client.withConnection { _ in
                    // The only connection is held: a second caller has to wait, then gives up.
                    try await client.query("SELECT 1")
                }
            }
            let waited = ContinuousClock.now - started
            #expect(error?.code == .poolTimeout)
            #expect(error?.description.contains("busy") == true)
            #expect(waited >= .milliseconds(300) && waited < .seconds(5))
        }
    }

    /// The CLI's way: the client's service starts in one task while the first query runs in
    /// another. Whichever starts the pool's threads, the other waits for them: no call may be
    /// told the pool is shut down while it is starting (seen once in CI when the winner of an
    /// atomic flag was preempted before it started them). Once shut down, a call is refused as
    /// closed, however it arrives.
    @Test func aFirstQueryRacingTheServicesStartIsNeverToldThePoolIsShutDown() async throws {
        let name = try await TestDatabase.create(migrated: false)
        for round in 0..<100 {
            let client = TestDatabase.client(database: name, role: nil, maxConnections: 8)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await client.run() }
                let rows = try await client.query("SELECT \(round) AS round")
                #expect(try rows[0].decode("round", as: Int.self) == round)
                group.cancelAll()
                try await group.waitForAll()
            }
            let error = await #expect(throws: PostgresError.self) { try await client.query("SELECT 1") }
            #expect(error?.code == .poolClosed)
        }
    }

    @Test func aWaiterGetsTheConnectionWhenItIsReturned() async throws {
        try await withFreshDatabase(maxConnections: 1, leaseTimeout: .seconds(5)) { client in
            async let holder: Void = client.withConnection { connection in
                try await connection.query("SELECT pg_sleep(0.3)")
            }
            try await Task.sleep(for: .milliseconds(50))
            let rows = try await client.query("SELECT 41 + 1 AS answer")
            #expect(try rows[0].decode("answer", as: Int.self) == 42)
            try await holder
            #expect(client.statistics.open == 1)
        }
    }

    /// PostgreSQL full: here a role at its `CONNECTION LIMIT` of 2, as a server at
    /// `max_connections` during a deploy. A pool of 4 serves 8 callers at once with the two
    /// connections it got, rather than failing the callers whose connection was refused; a
    /// pool that gets none fails at once, saying why.
    @Test func callersWhoseConnectionPostgreSQLRefusesWaitForThePoolsOwn() async throws {
        let name = try await TestDatabase.create(migrated: false)
        let role = "attest_test_limited_\(UUID().uuidString.prefix(8).lowercased())"
        let admin = try TestDatabase.adminClient()
        try await admin.query(SQL(unsafeSQL: "CREATE ROLE \(role) LOGIN CONNECTION LIMIT 2"))
        let configuration = PostgresConfiguration(connectionString: "", overrides: ["dbname": name, "user": role])
        let capture = LogCapture()
        let client = PostgresClient(
            configuration: configuration, options: .init(maxConnections: 4, leaseTimeout: .seconds(60)), logger: capture.logger())
        let sum = try await withThrowingTaskGroup(of: Int.self) { group in
            for value in 0..<8 {
                group.addTask {
                    try await client.query("SELECT \(value) AS v, pg_sleep(0.2)")[0].decode("v", as: Int.self)
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(sum == (0..<8).reduce(0, +))
        #expect(client.statistics.open == 2)
        #expect(capture.messages.contains("PostgreSQL refused a new connection; waiting for one of the pool's own"))
        await client.shutdown()

        try await admin.query(SQL(unsafeSQL: "ALTER ROLE \(role) CONNECTION LIMIT 0"))
        let none = PostgresClient(configuration: configuration, options: .init(maxConnections: 4), logger: TestDatabase.testLogger)
        let started = ContinuousClock.now
        let error = await #expect(throws: PostgresError.self) {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<4 { group.addTask { try await none.query("SELECT 1") } }
                try await group.waitForAll()
            }
        }
        #expect(ContinuousClock.now - started < .seconds(9))
        #expect(error?.code == .connectionFailed)
        #expect(error?.description.contains("too many connections for role") == true)
        #expect(none.statistics.open == 0)
        await none.shutdown()
        try await admin.query(SQL(unsafeSQL: "DROP ROLE \(role)"))
        await admin.shutdown()
    }

    @Test func manyConcurrentCallersShareABoundedPool() async throws {
        try await withFreshDatabase(maxConnections: 3) { client async throws in
            try await withThrowingTaskGroup(of: Int.self) { group in
                for value in 0..<60 {
                    group.addTask { try await client.query("SELECT \(value) AS v")[0].decode("v", as: Int.self) }
                }
                var sum = 0
                for try await value in group { sum += value }
                #expect(sum == (0..<60).reduce(0, +))
            }
            let rows = try await client.query("SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database()")
            #expect(try rows[0].decode("n", as: Int.self) <= 3)
            #expect(client.statistics.open <= 3)
        }
    }

    @Test func aTerminatedConnectionIsReplacedAndTheNextQuerySucceeds() async throws {
        try await withFreshDatabase(maxConnections: 1) { client async throws in
            let pid = try await client.query("SELECT pg_backend_pid() AS pid")[0].decode("pid", as: Int.self)
            let admin = try TestDatabase.adminClient()
            let killed = try await admin.query("SELECT pg_terminate_backend(\(Int32(pid)), 5000) AS done")
            await admin.shutdown()
            #expect(try killed[0].decode("done", as: Bool.self))
            let next = try await client.query("SELECT pg_backend_pid() AS pid")[0].decode("pid", as: Int.self)
            #expect(next != pid)
            #expect(client.statistics.open == 1)
        }
    }

    @Test func anUnreachableServerFailsWithWhereItTriedAndNeverThePassword() async throws {
        let client = PostgresClient(
            configuration: PostgresConfiguration(connectionString: "postgresql://attest:hunter2secret@127.0.0.1:1/campus"),
            logger: TestDatabase.testLogger)
        let error = await #expect(throws: PostgresError.self) { try await client.query("SELECT 1") }
        await client.shutdown()
        let failure = try #require(error)
        #expect(failure.isConnectionError)
        #expect(failure.description.contains("host 127.0.0.1"))
        #expect(failure.description.contains("port 1"))
        #expect(failure.description.contains("refused"))
        #expect(!failure.description.contains("hunter2secret"))
        #expect(!failure.debugDescription.contains("hunter2secret"))
    }

    @Test func aMalformedURLIsReportedWithoutEchoingIt() async throws {
        let client = PostgresClient(
            configuration: PostgresConfiguration(connectionString: "postgresql://u:s3cr3tpw@host/db?sslmode=require&nosuchoption=s3cr3tpw"),
            logger: TestDatabase.testLogger)
        let error = await #expect(throws: PostgresError.self) { try await client.query("SELECT 1") }
        await client.shutdown()
        #expect(error?.description.contains("not a valid libpq URI or conninfo") == true)
        #expect(error?.description.contains("s3cr3tpw") == false)
        #expect(error?.description.contains("nosuchoption") == true)
    }

    @Test func aShutDownPoolRefusesWork() async throws {
        let name = try await TestDatabase.create(migrated: false)
        let client = TestDatabase.client(database: name, role: nil)
        try await client.query("SELECT 1")
        await client.shutdown()
        #expect(client.statistics.open == 0)
        let error = await #expect(throws: PostgresError.self) { try await client.query("SELECT 1") }
        #expect(error?.code == .poolClosed)
    }

    @Test func noticesGoToTheLogger() async throws {
        let name = try await TestDatabase.create(migrated: false)
        let capture = LogCapture()
        let client = TestDatabase.client(database: name, role: nil, logger: capture.logger())
        try await client.query("DO $$ BEGIN RAISE NOTICE 'checked % rows', 42; RAISE WARNING 'careful'; END $$")
        await client.shutdown()
        #expect(capture.messages.contains { $0.contains("checked 42 rows") })
        #expect(capture.messages.contains { $0.contains("careful") })
    }
}

extension PoolTests {
    /// A service starts its work in `run()`, not in `init`: making clients starts no thread
    /// (each would otherwise start one per connection it may open).
    @Test func makingAClientStartsNoThread() async throws {
        func threads() throws -> Int { try FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").count }
        let before = try threads()
        let clients = (0..<20).map { _ in
            PostgresClient(
                configuration: PostgresConfiguration(connectionString: ""), options: .init(maxConnections: 10),
                logger: TestDatabase.testLogger)
        }
        #expect(try threads() - before < 50, "20 clients of 10 connections started threads in init")
        for client in clients { await client.shutdown() }
    }
}
