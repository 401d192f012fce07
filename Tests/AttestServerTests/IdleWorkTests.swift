import AttestPlugins
import AttestPluginsTesting
import AttestPostgres
import AttestTestSupport
import Foundation
import Notifications
import Surveys
import Tenancy
import Testing

@testable import AttestAPI
@testable import AttestServer
@testable import AttestWeb

/// The servers' background work wakes on work, not by asking every campus every second
/// (docs/architecture.md, "How the workers find their work").
@Suite("Idle campuses cost nothing")
struct IdleWorkTests {
    /// The worker sleeps ten minutes between polls here; the writer's commit wakes it, so the
    /// event reaches the receiver at once, not at the next poll (a loaded machine may take
    /// seconds for what takes milliseconds alone: the bound is the poll's, not a speed).
    @Test func aCommittedEventIsDeliveredAtOnceNotAtTheNextPoll() async throws {
        let (server, campus) = try await AttestationTests.setUp(clock: try TestClock("2026-11-20T14:00:00Z"))
        let receiver = try await WebhookReceiver.start()
        try await NotificationTests.enableWebhook(server, campus, port: receiver.port, events: ["badge.red"])
        let (_, member) = try await server.user("m@example.edu", at: campus)
        var configuration = OutboxWorker.Configuration()
        configuration.pollInterval = .seconds(600)
        let worker = OutboxWorker(
            client: server.pool, registry: .builtin, http: NotificationTests.loopbackHTTP, configuration: configuration,
            logger: TestDatabase.testLogger, kek: TestServer.kek, signal: server.services.outbox.signal,
            reminderAudience: .unattested)
        let running = Task { try await worker.run() }
        try await server.run { api in
            try await Task.sleep(for: .milliseconds(300))  // its first round found nothing; it sleeps
            let submitted = ContinuousClock.now
            try await NotificationTests.submitRed(api, token: member)
            while receiver.acknowledged.isEmpty && ContinuousClock.now - submitted < .seconds(120) {
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(receiver.acknowledged.count == 1, "not delivered \(ContinuousClock.now - submitted) after the submission")
        }
        running.cancel()
        _ = await running.result
        await receiver.stop()
    }

    /// A thousand campuses nobody uses: once their day's work is done, the server's background
    /// work (outbox, reminders, daily upkeep, sign-in generations) sends a couple of
    /// statements a second in all, where it sent one per campus per second.
    @Test func aServerWithAThousandIdleCampusesSendsAHandfulOfStatementsASecond() async throws {
        let server = try await TestServer.make()
        let owner = TestDatabase.client(database: server.database, role: nil, maxConnections: 1)
        guard try await HotStatementTests.countsStatements(owner) else { return }
        _ = try await server.campus("north")  // one made as `attest campus create` makes them, with its keys
        try await owner.query(
            """
            INSERT INTO campuses (id, slug, name, time_zone, next_reminder_at, next_upkeep_at)
            SELECT gen_random_uuid(), 'idle-' || i, 'Idle ' || i, (ARRAY['America/New_York', 'Europe/Madrid', 'Asia/Tokyo'])[1 + i % 3],
                   now() + interval '1 day', now() + interval '1 day'
            FROM generate_series(1, 999) i
            """)
        let services = server.services
        let tasks = [
            Task { try await services.outbox.run() }, Task { try await services.retention.run() },
            Task { try await services.authGenerations.run() },
        ]
        // Their day is done (as it is after each one's first round: what that round does is
        // tested with the reminders and the upkeep), so what is measured is idle. First the
        // one campus made now has its day.
        let settled = ContinuousClock.now
        while ContinuousClock.now - settled < .seconds(120) {
            let due = try await owner.query(
                "SELECT count(*)::int AS n FROM campuses WHERE next_reminder_at <= now() OR next_upkeep_at <= now()")
            if try due[0].decode("n", as: Int.self) == 0 { break }
            try await Task.sleep(for: .milliseconds(200))
        }
        let database: Int = try await owner.query("SELECT oid::int AS oid FROM pg_database WHERE datname = current_database()")[0].decode(
            "oid")
        try await owner.query("SELECT pg_stat_statements_reset(0, \(database)::oid, 0)")
        let window = 5.0
        try await Task.sleep(for: .seconds(window))
        let statements = try await owner.query(
            """
            SELECT query, calls::int AS calls FROM pg_stat_statements
            WHERE dbid = \(database)::oid AND query NOT LIKE '%pg_stat_statements%' ORDER BY calls DESC
            """)
        for task in tasks { task.cancel() }
        for task in tasks { _ = await task.result }
        await owner.shutdown()
        await server.pool.shutdown()
        let calls = try statements.reduce(0) { $0 + (try $1.decode("calls", as: Int.self)) }
        let listing = try statements.map {
            "\(try $0.decode("calls", as: Int.self))× \(try $0.decode("query", as: String.self).prefix(90))"
        }
        #expect(Double(calls) / window <= 5, "\(calls) statements in \(window) s: \(listing.joined(separator: "\n"))")
        #expect(calls > 0, "the services ran no statement at all")
    }

    /// A campus's next reminder time as its wall clock shows it, across both changes of the
    /// clock in New York and over a whole year in three zones: at that instant the minute has
    /// come, a minute before it had not (or it is the skipped hour's end), and it is within a day.
    @Test func theNextDailyTimeIsTheWallClocksAcrossDaylightSavingChanges() throws {
        let newYork = try #require(TimeZone(identifier: "America/New_York"))
        func next(_ minute: Int, after instant: String) throws -> Date {
            CampusSchedule.next(minute: minute, in: newYork, after: try Date(instant, strategy: .iso8601))
        }
        #expect(try next(8 * 60, after: "2026-11-01T12:30:00Z") == Date("2026-11-01T13:00:00Z", strategy: .iso8601))  // 08:00 EST
        // Half a minute ahead is due then, not a minute after `now` (a server started 38 s before
        // its campus's reminder time reminded 22 s late).
        #expect(try next(8 * 60, after: "2026-11-01T12:59:30Z") == Date("2026-11-01T13:00:00Z", strategy: .iso8601))
        // In the hour shown twice, after the first 01:30 has passed: not behind `now`, the next minute.
        #expect(try next(90, after: "2026-11-01T06:10:20Z") == Date("2026-11-01T06:11:00Z", strategy: .iso8601))
        #expect(try next(8 * 60, after: "2026-03-08T11:30:00Z") == Date("2026-03-08T12:00:00Z", strategy: .iso8601))  // 08:00 EDT
        #expect(try next(8 * 60, after: "2026-03-07T13:30:00Z") == Date("2026-03-08T12:00:00Z", strategy: .iso8601))  // past: tomorrow's
        // 02:30 does not exist on 8 March: the first instant after the skip, 03:00 EDT.
        #expect(try next(150, after: "2026-03-08T05:00:00Z") == Date("2026-03-08T07:00:00Z", strategy: .iso8601))
        // 01:30 comes twice on 1 November: the first.
        #expect(try next(90, after: "2026-11-01T04:00:00Z") == Date("2026-11-01T05:30:00Z", strategy: .iso8601))
        for zone in ["America/New_York", "Europe/London", "Australia/Lord_Howe"].compactMap(TimeZone.init(identifier:)) {
            var instant = try Date("2026-01-01T00:00:00Z", strategy: .iso8601)
            for step in 0..<(365 * 5) {
                let minute = (step * 97) % 1440
                let following = CampusSchedule.next(minute: minute, in: zone, after: instant)
                #expect(CampusSchedule.hasPassed(minute: minute, in: zone, at: following), "\(zone.identifier) \(minute) after \(instant)")
                #expect(
                    following > instant && following.timeIntervalSince(instant) <= 25 * 3_600 + 60,
                    "\(zone.identifier) \(minute) after \(instant)")
                if !CampusSchedule.hasPassed(minute: minute, in: zone, at: instant) {
                    #expect(LocalDate(following, in: zone) == LocalDate(instant, in: zone), "\(zone.identifier) \(minute) after \(instant)")
                }
                instant = instant.addingTimeInterval(17_280 + 61)
            }
        }
    }

    /// `attest dev seed-campuses` makes campuses as `attest campus create` does (a sealed badge
    /// key each, the zones in turn); a second run adds only what is missing.
    @Test func seedCampusesMakesEachAsCampusCreateDoesAndAddsOnlyWhatIsMissing() async throws {
        let (kek, kekText) = KeyEncryptionKey.generate()
        let server = try await TestServer.make(kek: kek)
        let environment: [String: String?] = ["DATABASE_URL": TestDatabase.url(database: server.database), "ATTEST_KEK": kekText]
        let seed = { (count: Int) in
            try await ChildProcess.run(
                [
                    ChildProcess.attestBinary, "dev", "seed-campuses", "--count", "\(count)", "--prefix", "t", "--timezone", "Asia/Tokyo",
                    "--timezone", "Europe/Madrid",
                ], environment: environment)
        }
        let first = try await seed(5)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stdout.contains("Created 5 campuses (0 existed)"), "\(first.stdout)")
        let second = try await seed(7)
        #expect(second.stdout.contains("Created 2 campuses (5 existed)"), "\(second.stdout)")
        let campuses = try await CampusStore(client: server.pool).list()
        #expect(campuses.map(\.slug).sorted() == (1...7).map { "t-\($0)" }.sorted())
        #expect(
            campuses.first { $0.slug == "t-1" }?.timeZone == "Asia/Tokyo"
                && campuses.first { $0.slug == "t-2" }?.timeZone == "Europe/Madrid")
        let keys = BadgeKeyStore(client: server.pool, kek: kek)
        for campus in campuses { #expect(try await keys.keys(campus: campus.id).count == 1, "\(campus.slug)") }
        let refused = try await seed(0)
        #expect(refused.status != 0 && refused.stderr.contains("--count must be from 1 to 100000"), "\(refused.stderr)")
        await server.pool.shutdown()
    }

    /// Campuses' upkeeps are spread over the small hours, each campus's the same minute on
    /// every server.
    @Test func upkeepMinutesAreSpreadOverFourHours() {
        let minutes = (0..<2_000).map { _ in CampusSchedule.upkeepMinute(CampusID(UUID())) }
        #expect(minutes.allSatisfy { (60..<300).contains($0) })
        #expect(Set(minutes).count > 200)
        let campus = CampusID(UUID())
        #expect(CampusSchedule.upkeepMinute(campus) == CampusSchedule.upkeepMinute(CampusID(campus.rawValue)))
    }
}
