import AttestPlugins
import AttestPluginsTesting
import AttestPostgres
import AttestTestSupport
import Foundation
import Identity
import Notifications
import Tenancy
import Testing

/// Reminders at each member's own minute (issue 62): the campus's zone by the wall clock across
/// the autumn change, quiet hours that move a reminder to their end or skip it, none after
/// attesting, and each member once whatever the number of servers.
@Suite("Reminders per member minute")
struct ReminderTimeTests {
    @Test func eachMemberIsRemindedOnceAtTheirMinuteAcrossTheClockChangeAndQuietHours() async throws {
        // 2026-11-01 in New York: 02:00 EDT becomes 01:00 EST, so 01:30 happens twice.
        let clock = try TestClock("2026-11-01T05:00:00Z")  // 01:00 EDT
        let (server, north) = try await AttestationTests.setUp(clock: clock)
        _ = try await CampusStore(client: server.pool).set(slug: "north", key: "reminder", value: "08:15", actor: "test")
        try await CampusPluginStore(client: server.pool).enable(
            campus: north, kind: .sink, id: "log", settings: .object([:]), actor: "test")
        let store = NotificationPreferenceStore(client: server.pool)
        var memberIDs: [String: UserID] = [:]
        var memberTokens: [String: String] = [:]
        for (name, minute, quiet) in [
            ("campus-time", nil, nil), ("seven", 420, nil), ("moved", 390, (1_320, 420)), ("skipped", 570, (540, 720)),
            ("attests", 450, nil), ("repeated-hour", 90, nil),
        ] as [(String, Int?, (Int, Int)?)] {
            let (user, token) = try await server.user("\(name)@example.edu", at: north)
            memberIDs[name] = user.id
            memberTokens[name] = token
            if minute != nil || quiet != nil {
                try await store.set(
                    campus: north, user: user.id, NotificationPreferences(reminderMinute: minute, quietHours: quiet), now: clock.read())
            }
        }
        let (members, tokens) = (memberIDs, memberTokens)
        let second = OutboxWorker(
            client: server.pool, registry: .builtin, http: NotificationTests.loopbackHTTP, logger: TestDatabase.testLogger,
            clock: clock.read, kek: TestServer.kek, reminderAudience: .unattested)
        @Sendable func bothWorkers() async throws {
            async let one = server.services.outbox.runOnce()
            async let two = second.runOnce()
            _ = try await (one, two)
        }
        @Sendable func reminded() async throws -> [String] {
            let ids = try await server.pool.query(
                "SELECT payload->>'userId' AS user_id FROM notification_outbox WHERE event = 'reminder.due'", campus: north.id.rawValue
            ).map { try $0.decode("user_id", as: String.self) }
            return ids.compactMap { id in members.first { $0.value.description == id }?.key }.sorted()
        }
        @Sendable func remindersOnTheSecond(_ user: String) async throws -> Int? {
            try await server.pool.query(
                """
                SELECT count(*)::int AS n FROM notification_outbox
                WHERE event = 'reminder.due' AND payload->>'date' = '2026-11-02' AND payload->>'userId' = \(user)
                """, campus: north.id.rawValue
            ).first?.decode("n", as: Int.self)
        }
        let reminders = Reminders(client: server.pool, audience: .unattested)
        try await server.run { api in
            try await bothWorkers()
            #expect(try await reminded() == [])

            try clock.set("2026-11-01T05:31:00Z")  // 01:31 EDT
            try await bothWorkers()
            try await bothWorkers()
            #expect(try await reminded() == ["repeated-hour"])
            try clock.set("2026-11-01T06:31:00Z")  // 01:31 EST: the same wall minute again, nobody twice
            try await bothWorkers()
            #expect(try await reminders.run(campuses: [north], at: clock.read()).isEmpty)
            #expect(try await reminded() == ["repeated-hour"])

            try clock.set("2026-11-01T11:10:00Z")  // 06:10 EST
            let submitted = try await api.send(
                .post, "/v1/campuses/north/attestations", template: AttestationTests.path, token: tokens["attests"],
                json: AttestationTests.body(AttestationTests.healthy))
            #expect(submitted.status == 201)
            try clock.set("2026-11-01T11:45:00Z")  // 06:45: "moved" chose 06:30, inside its quiet hours (22:00 to 07:00)
            try await reminders.run(campuses: [north], at: clock.read())
            #expect(try await reminded() == ["repeated-hour"])
            try clock.set("2026-11-01T12:00:30Z")  // 07:00 EST: "seven", and "moved" from 06:30 to its quiet hours' end
            try await bothWorkers()
            try await bothWorkers()
            #expect(try await reminded() == ["moved", "repeated-hour", "seven"])
            try clock.set("2026-11-01T12:31:00Z")  // 07:31: "attests" has attested
            try await bothWorkers()
            try clock.set("2026-11-01T13:16:00Z")  // 08:16: the campus's time
            try await bothWorkers()
            try await bothWorkers()
            try clock.set("2026-11-01T17:01:00Z")  // 12:01: "skipped" would have moved past the 10:00 deadline
            try await bothWorkers()
            try await reminders.run(campuses: [north], at: clock.read())
            #expect(try await reminded() == ["campus-time", "moved", "repeated-hour", "seven"])
            let run = try await server.pool.query(
                "SELECT reminded, through_minute FROM reminder_runs WHERE campus_id = \(north.id) AND local_date = '2026-11-01'",
                campus: north.id.rawValue)
            #expect(try run.first?.decode("reminded", as: Int.self) == 4)
            #expect(try run.first?.decode("through_minute", as: Int16.self) == 721)

            // A member choosing an earlier time than the campus waits for is found at once.
            try clock.set("2026-11-02T11:00:00Z")  // 06:00 EST on the 2nd
            try await bothWorkers()
            let changed = try await api.send(
                .put, "/v1/campuses/north/me/notifications", template: NotificationPreferenceTests.path, token: tokens["campus-time"],
                json: #"{"reminderTime": "06:05"}"#)
            #expect(changed.status == 200)
            try clock.set("2026-11-02T11:05:30Z")  // 06:05
            try await bothWorkers()
            #expect(try await remindersOnTheSecond(members["campus-time"]?.description ?? "") == 1)

            // Moving the time later after that day's reminder came does not remind a second
            // time; moving it before the old minute came reminds once, at the new one.
            try clock.set("2026-11-02T11:30:00Z")  // 06:30
            for (name, time) in [("campus-time", "09:00"), ("seven", "08:30")] {
                let moved = try await api.send(
                    .put, "/v1/campuses/north/me/notifications", template: NotificationPreferenceTests.path, token: tokens[name],
                    json: #"{"reminderTime": "\#(time)"}"#)
                #expect(moved.status == 200)
            }
            try clock.set("2026-11-02T12:01:00Z")  // 07:01: "seven"'s old minute, no longer theirs
            try await bothWorkers()
            try clock.set("2026-11-02T14:01:00Z")  // 09:01
            try await bothWorkers()
            try await bothWorkers()
            let secondDay = try await server.pool.query(
                """
                SELECT payload->>'userId' AS user_id, count(*)::int AS n FROM notification_outbox
                WHERE event = 'reminder.due' AND payload->>'date' = '2026-11-02' GROUP BY 1
                """, campus: north.id.rawValue)
            var perMember: [String: Int] = [:]
            for row in secondDay {
                let id = try row.decode("user_id", as: String.self)
                if let name = members.first(where: { $0.value.description == id })?.key { perMember[name] = try row.decode("n") }
            }
            #expect(perMember["campus-time"] == 1)
            #expect(perMember["seven"] == 1)
            let sevenAt = try await server.pool.query(
                """
                SELECT payload->>'occurredAt' AS at FROM notification_outbox
                WHERE event = 'reminder.due' AND payload->>'date' = '2026-11-02' AND payload->>'userId' = \(members["seven"]?.description ?? "")
                """, campus: north.id.rawValue)
            #expect(try sevenAt.first?.decode("at", as: String.self).hasPrefix("2026-11-02T14:01") == true)

            // A member new since the campus's time went by, choosing a later one, is reminded at it.
            let (newcomer, newcomerToken) = try await server.user("newcomer@example.edu", at: north)
            let chosen = try await api.send(
                .put, "/v1/campuses/north/me/notifications", template: NotificationPreferenceTests.path, token: newcomerToken,
                json: #"{"reminderTime": "09:30"}"#)
            #expect(chosen.status == 200)
            try clock.set("2026-11-02T14:31:00Z")  // 09:31
            try await bothWorkers()
            #expect(try await remindersOnTheSecond(newcomer.id.description) == 1)
        }
    }

    @Test func aRunThatComesLateRemindsNobodyWhoseQuietHoursHaveBegun() async throws {
        let clock = try TestClock("2026-11-20T12:00:00Z")  // 07:00 in New York; the campus reminds at 08:00
        let (server, north) = try await AttestationTests.setUp(clock: clock)
        try await CampusPluginStore(client: server.pool).enable(
            campus: north, kind: .sink, id: "log", settings: .object([:]), actor: "test")
        let (plain, _) = try await server.user("plain@example.edu", at: north)
        let (quiet, _) = try await server.user("quiet@example.edu", at: north)
        try await NotificationPreferenceStore(client: server.pool).set(
            campus: north, user: quiet.id, NotificationPreferences(quietHours: (510, 720)), now: clock.read())  // 08:30 to 12:00
        let reminders = Reminders(client: server.pool, audience: .unattested)
        func reminded(on date: String) async throws -> Set<String> {
            Set(
                try await server.pool.query(
                    "SELECT payload->>'userId' AS id FROM notification_outbox WHERE event = 'reminder.due' AND payload->>'date' = \(date)",
                    campus: north.id.rawValue
                ).map { try $0.decode("id", as: String.self) })
        }
        // No server ran at 08:00; the first run comes at 09:00, inside one member's quiet hours.
        try clock.set("2026-11-20T14:00:00Z")
        #expect(try await reminders.run(campuses: [north], at: clock.read()) == ["north": 1])
        try clock.set("2026-11-20T17:30:00Z")  // 12:30, after their quiet hours: still nobody twice, nobody late
        #expect(try await reminders.run(campuses: [north], at: clock.read()) == ["north": 0])
        #expect(try await reminded(on: "2026-11-20") == [plain.id.description])
        // On time the next day, both.
        try clock.set("2026-11-21T13:00:30Z")
        #expect(try await reminders.run(campuses: [north], at: clock.read()) == ["north": 2])
        #expect(try await reminded(on: "2026-11-21") == [plain.id.description, quiet.id.description])
    }

    /// `attest dev` starts by skipping what was due before it: the demo's members are not all
    /// reminded at once on a start after their time, and a minute chosen ahead still comes.
    @Test func remindersSkippedBeforeAStartLeaveTheMinutesFromItsOwnOn() async throws {
        let clock = try TestClock("2026-11-20T12:00:00Z")  // 07:00 in New York; the campus reminds at 08:00
        let (server, north) = try await AttestationTests.setUp(clock: clock)
        try await CampusPluginStore(client: server.pool).enable(
            campus: north, kind: .sink, id: "log", settings: .object([:]), actor: "test")
        _ = try await server.user("plain@example.edu", at: north)
        let (now, _) = try await server.user("now@example.edu", at: north)
        let (ahead, _) = try await server.user("ahead@example.edu", at: north)
        let preferences = NotificationPreferenceStore(client: server.pool)
        let reminders = Reminders(client: server.pool, audience: .unattested)
        // Before the day's first minute there is nothing to skip: the campus's 08:00 still comes.
        try await reminders.skipMissed(north, at: clock.read())
        try clock.set("2026-11-20T13:00:10Z")
        #expect(try await reminders.run(campuses: [north], at: clock.read()) == ["north": 3])
        // The next day a start at 09:30: 08:00 is not sent, a member due at 09:30 itself is, and one at 09:45.
        try await preferences.set(campus: north, user: now.id, NotificationPreferences(reminderMinute: 570), now: clock.read())
        try await preferences.set(campus: north, user: ahead.id, NotificationPreferences(reminderMinute: 585), now: clock.read())
        try clock.set("2026-11-21T14:30:20Z")
        try await reminders.skipMissed(north, at: clock.read())
        #expect(try await reminders.run(campuses: [north], at: clock.read()) == ["north": 1])
        try clock.set("2026-11-21T14:45:00Z")
        #expect(try await reminders.run(campuses: [north], at: clock.read()) == ["north": 1])
        let day = try await server.pool.query(
            "SELECT reminder_for FROM notification_outbox WHERE event = 'reminder.due' AND payload->>'date' = '2026-11-21' ORDER BY 1",
            campus: north.id.rawValue)
        #expect(Set(try day.map { try $0.decode("reminder_for", as: UUID.self) }) == [now.id.rawValue, ahead.id.rawValue])
    }

    @Test func aCampusTimeMovedLaterAfterItsRemindersWentRemindsNobodyTwice() async throws {
        let clock = try TestClock("2026-11-20T13:00:30Z")  // 08:00 in New York, the campus's time
        let (server, north) = try await AttestationTests.setUp(clock: clock)
        try await CampusPluginStore(client: server.pool).enable(
            campus: north, kind: .sink, id: "log", settings: .object([:]), actor: "test")
        _ = try await server.user("plain@example.edu", at: north)
        let reminders = Reminders(client: server.pool, audience: .unattested)
        let campuses = CampusStore(client: server.pool)
        #expect(try await reminders.run(campuses: [north], at: clock.read()) == ["north": 1])
        let moved = try await campuses.set(slug: "north", key: "reminder", value: "09:00", actor: "test")
        try clock.set("2026-11-20T14:00:30Z")  // 09:00
        #expect(try await reminders.run(campuses: [moved], at: clock.read()) == ["north": 0])
        // The next day, at the new time only.
        try clock.set("2026-11-21T13:00:30Z")
        #expect(try await reminders.run(campuses: [moved], at: clock.read()).isEmpty)
        try clock.set("2026-11-21T14:00:30Z")
        #expect(try await reminders.run(campuses: [moved], at: clock.read()) == ["north": 1])
    }

    /// Saving one's choices asks whether today's reminder for the member is in the outbox: by
    /// the outbox's index of whom reminders are for, not by reading every row the campus keeps
    /// (a week of a large campus's reminders took 130-190 ms a save, with the day's run
    /// waiting). Through the server's role, under row-level security, as the API saves them.
    @Test func savingOnesChoicesFindsTodaysReminderWithoutReadingTheCampusOutbox() async throws {
        let clock = try TestClock("2026-11-20T13:00:30Z")  // 08:00 in New York, the campus's time
        let (server, north) = try await AttestationTests.setUp(clock: clock)
        try await CampusPluginStore(client: server.pool).enable(
            campus: north, kind: .sink, id: "log", settings: .object([:]), actor: "test")
        let (ana, _) = try await server.user("ana@example.edu", at: north)
        let owner = TestDatabase.client(database: server.database, role: nil)
        guard try await HotStatementTests.countsStatements(owner) else { return }
        // A week of 1,000 other members' reminders, delivered, as a campus's outbox keeps them.
        try await owner.query(
            """
            INSERT INTO notification_outbox (campus_id, id, event, sink_id, payload, delivered_at, reminder_for)
            SELECT \(north.id), gen_random_uuid(), 'reminder.due', 'log',
                   jsonb_build_object('event', 'reminder.due', 'campus', 'north', 'userId', m::text,
                       'date', (date '2026-11-14' + g / 1000)::text, 'occurredAt', '2026-11-14T13:00:00Z'), now(), m
            FROM generate_series(0, 6999) g, gen_random_uuid() m
            """)
        try await owner.query("ANALYZE notification_outbox")  // as autovacuum keeps a large campus's outbox
        let reminders = Reminders(client: server.pool, audience: .unattested)
        #expect(try await reminders.run(campuses: [north], at: clock.read()) == ["north": 1])
        // One connection, warmed by a first save: the blocks counted are the statement's, not the
        // catalog a backend new to these tables reads (some 240 blocks, whichever the plan: a
        // pool that handed the save a connection it had not used yet failed this test).
        let saver = TestDatabase.client(database: server.database, maxConnections: 1)
        let preferences = NotificationPreferenceStore(client: saver)
        try await preferences.set(campus: north, user: ana.id, NotificationPreferences(reminderMinute: 9 * 60), now: clock.read())
        let database: Int = try await owner.query("SELECT oid::int AS oid FROM pg_database WHERE datname = current_database()")[0].decode(
            "oid")
        try await owner.query("SELECT pg_stat_statements_reset(0, \(database)::oid, 0)")

        try await preferences.set(campus: north, user: ana.id, NotificationPreferences(reminderMinute: 10 * 60), now: clock.read())
        await saver.shutdown()
        let marked = try await owner.query(
            "SELECT reminded_on::text AS day FROM member_notifications WHERE campus_id = \(north.id) AND user_id = \(ana.id.rawValue)")
        #expect(try marked.first?.decode("day", as: String?.self) == "2026-11-20")
        let read = try await owner.query(
            """
            SELECT sum(shared_blks_hit + shared_blks_read)::bigint AS blocks FROM pg_stat_statements
            WHERE dbid = \(database)::oid AND query LIKE '%INSERT INTO member_notifications%'
            """)
        await owner.shutdown()
        let blocks = try read.first?.decode("blocks", as: Int64?.self) ?? nil
        // The outbox's 7,001 rows fill some 300 pages; the index's probe reads a few.
        #expect(blocks.map { $0 > 0 && $0 < 60 } == true, "the save read \(blocks.map(String.init) ?? "no") blocks")
    }

    @Test func theNextDueTimeIsTheNextMinuteAMemberOrTheCampusChose() async throws {
        let clock = try TestClock("2026-11-20T12:00:00Z")  // 07:00 in New York
        let (server, north) = try await AttestationTests.setUp(clock: clock)
        let reminders = Reminders(client: server.pool, audience: .unattested)
        let campus = try #require(try await CampusStore(client: server.pool).find(id: north.id))
        // The campus alone: its time today.
        #expect(try await reminders.nextDue(campus, after: clock.read()) == (try Date("2026-11-20T13:00:00Z", strategy: .iso8601)))  // 08:00
        let (user, _) = try await server.user("x@example.edu", at: north)
        try await NotificationPreferenceStore(client: server.pool).set(
            campus: north, user: user.id, NotificationPreferences(reminderMinute: 7 * 60 + 30), now: clock.read())
        #expect(try await reminders.nextDue(campus, after: clock.read()) == (try Date("2026-11-20T12:30:00Z", strategy: .iso8601)))
        // Past every minute of the day: tomorrow's first.
        #expect(
            try await reminders.nextDue(campus, after: try Date("2026-11-20T23:00:00Z", strategy: .iso8601))
                == (try Date("2026-11-21T12:30:00Z", strategy: .iso8601)))
    }
}
