import AttestPlugins
import AttestPostgres
import Foundation
import Tenancy

/// Daily reminders, due per member minute: each active member who has not attested that
/// local day gets one `reminder.due` event per sink subscribed to it at their own time (their
/// `reminderTime`, else the campus's), in the campus's zone by the wall clock (DST-correct),
/// never in their quiet hours: a time inside them moves to their end when that is still no
/// later than the campus's deadline (or its reminder time, if later), else that day has no
/// reminder for them. A run writes the members due after the minute the last run reached and
/// up to now, under the lock of the campus's `reminder_runs` row of the day, so however many
/// servers run (and whenever they wake), each member is reminded once; no member is read when
/// no sink takes reminders. A member reminded who then moves their time later is not reminded
/// again that day (`NotificationPreferenceStore.set` marks them); one who moves it to a minute
/// already passed is reminded from the next day. So with the campus's own time: once a run
/// passed it, the day keeps it (`reminder_runs.campus_minute`).
/// A run that comes late writes nobody whose quiet hours have begun since their minute.
public struct Reminders: Sendable {
    let client: PostgresClient
    let audience: ReminderAudience

    public init(client: PostgresClient, audience: ReminderAudience) {
        self.client = client
        self.audience = audience
    }

    /// Whether `campus`'s reminder time has come on the local day of `now` (DST-correct:
    /// minutes since local midnight as the wall clock shows them).
    public static func isDue(_ campus: Campus, at now: Date) -> Bool {
        CampusSchedule.hasPassed(minute: campus.reminderMinute, in: campus.zone, at: now)
    }

    /// The campus-local wall-clock minute of `now` (0 to 1439).
    static func minute(_ campus: Campus, at now: Date) -> Int {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = campus.zone
        let parts = calendar.dateComponents([.hour, .minute], from: now)
        return min(max((parts.hour ?? 0) * 60 + (parts.minute ?? 0), 0), 1439)
    }

    /// The SQL of a member's reminder minute that day, from `member_notifications` row `n`
    /// (absent: the campus's `campusMinute`, by default its reminder time now): NULL when quiet
    /// hours skip it.
    static func effectiveMinute(_ campus: Campus, campusMinute: Int? = nil) -> SQL {
        let campusMinute = campusMinute ?? campus.reminderMinute, latest = max(campus.deadlineMinute, campusMinute)
        let chosen: SQL = "coalesce(n.reminder_minute, \(campusMinute)::int)"
        return """
            (CASE
                WHEN \(isQuiet(chosen))
                THEN CASE WHEN n.quiet_to > \(chosen) AND n.quiet_to <= \(latest)::int THEN n.quiet_to::int END
                ELSE \(chosen)
            END)
            """
    }

    /// The SQL of whether `minute` lies in the quiet hours of `member_notifications` row `n`
    /// (false without a row or quiet hours: from inclusive, to exclusive, across midnight when
    /// from is later, as `NotificationPreferences.isQuiet`). A run that comes late (a server was
    /// down at the member's minute) writes nobody whose quiet hours have begun since: they are
    /// skipped that day, as a reminder is that quiet hours would push past the deadline.
    static func isQuiet(_ minute: SQL) -> SQL {
        """
        (n.quiet_from IS NOT NULL AND CASE WHEN n.quiet_from < n.quiet_to
            THEN \(minute) >= n.quiet_from AND \(minute) < n.quiet_to
            ELSE \(minute) >= n.quiet_from OR \(minute) < n.quiet_to END)
        """
    }

    /// Writes the reminders due at every campus of `campuses` up to `now`. Returns the number
    /// of members reminded per campus slug written now.
    @discardableResult
    public func run(campuses: [Campus], at now: Date) async throws -> [String: Int] {
        var written: [String: Int] = [:]
        for campus in campuses {
            if let count = try await remind(campus, at: now) { written[campus.slug] = count }
        }
        return written
    }

    /// Writes the reminders of the members due after the last run's minute and up to `now`'s;
    /// nil when another server (or an earlier round) already reached this minute.
    func remind(_ campus: Campus, at now: Date) async throws -> Int? {
        let date = campus.localDate(at: now), minute = Self.minute(campus, at: now)
        // Before the day's first chosen minute nothing is claimed, so a time changed to one
        // that has passed (the campus's, or the first member's) still reminds that day.
        guard try await earliestMinute(campus) <= minute else { return nil }
        return try await client.withTransaction(campus: campus.id.rawValue) { connection in
            guard let (through, campusMinute) = try await Self.claim(connection, campus, through: minute, at: now) else { return nil }
            // No sink takes reminders: nobody is read. Finding who has not attested reads every
            // member (2.5 s of PostgreSQL's CPU for 300,000 of them).
            let taken = try await connection.query(
                "SELECT \(OutboxEvents.anySink(campus: campus.id, taking: .reminderDue)) AS taken")
            guard try taken.first?.decode("taken", as: Bool.self) == true else { return 0 }  // `reminded` stays 0
            let event = NotificationEvent.reminderDue.rawValue
            let rows = try await connection.query(
                """
                WITH unattested AS (
                    \(audience.select(campus.id, date))
                ), due AS (
                    SELECT u.user_id FROM unattested u
                    LEFT JOIN member_notifications n ON n.campus_id = \(campus.id) AND n.user_id = u.user_id
                    WHERE \(Self.effectiveMinute(campus, campusMinute: campusMinute)) > \(through)::int
                      AND \(Self.effectiveMinute(campus, campusMinute: campusMinute)) <= \(minute)::int
                      AND n.reminded_on IS DISTINCT FROM \(date)::date
                      AND NOT \(Self.isQuiet("\(minute)::int"))
                ), events AS (
                    SELECT gen_random_uuid() AS id, \(event)::text AS event, \(OutboxEvents.payload(
                               event: "\(event)::text", campus: "\(campus.slug)::text", occurredAt: "\(now)::timestamptz", userId: "d.user_id",
                               date: "\(date)::date", links: "jsonb_build_object('survey', \("/v1/campuses/\(campus.slug)/survey")::text)")) AS payload,
                           d.user_id AS reminder_for
                    FROM due d
                ), written AS (
                    \(OutboxEvents.insert(campus: campus.id, reminders: true))
                )
                SELECT count(*)::int AS reminded FROM due
                """)
            let reminded: Int = try rows.first?.decode("reminded") ?? 0
            try await connection.query(
                "UPDATE reminder_runs SET reminded = reminded + \(reminded) WHERE campus_id = \(campus.id) AND local_date = \(date)")
            return reminded
        }
    }

    /// Takes `campus`'s run of the local day of `now` through `minute`, under the lock of its
    /// `reminder_runs` row: the minute the day's runs had reached and the campus's minute for
    /// the day, or nil when a run already reached `minute`.
    private static func claim(_ connection: PostgresConnection, _ campus: Campus, through minute: Int, at now: Date) async throws -> (
        through: Int, campusMinute: Int
    )? {
        let date = campus.localDate(at: now)
        try await connection.query(
            "INSERT INTO reminder_runs (campus_id, local_date) VALUES (\(campus.id), \(date)) ON CONFLICT DO NOTHING")
        let locked = try await connection.query(
            """
            SELECT through_minute, campus_minute FROM reminder_runs
            WHERE campus_id = \(campus.id) AND local_date = \(date) FOR UPDATE
            """)
        guard let row = locked.first else { return nil }
        let through = Int(try row.decode("through_minute", as: Int16.self))
        guard through < minute else { return nil }
        // The campus's minute once a run passed it stays the day's: a time the campus moved
        // later since reminds nobody twice (a new one takes effect the next day).
        let passed = try row.decode("campus_minute", as: Int16?.self).map(Int.init)
        let campusMinute = passed ?? campus.reminderMinute
        let passesNow = passed == nil && through < campusMinute && campusMinute <= minute
        try await connection.query(
            """
            UPDATE reminder_runs SET through_minute = \(Int16(clamping: minute)), ran_at = \(now),
                campus_minute = \(passesNow ? Int16(clamping: campusMinute) : passed.map { Int16(clamping: $0) })
            WHERE campus_id = \(campus.id) AND local_date = \(date)
            """)
        return (through, campusMinute)
    }

    /// Marks `campus`'s reminders due before `now`'s minute today as passed without writing
    /// any: no run reminds anyone of a minute before it. `attest dev` does this as it starts, so that
    /// its demo members are not all reminded at once on a start after their time, and a
    /// newcomer who chooses a minute ahead sees that reminder arrive (a member is reminded
    /// once a day).
    public func skipMissed(_ campus: Campus, at now: Date) async throws {
        // The minute before now's: a member due this very minute is still reminded. Nothing is
        // claimed before the day's first chosen minute, as `remind` claims nothing then.
        let before = Self.minute(campus, at: now) - 1
        guard try await earliestMinute(campus) <= before else { return }
        try await client.withTransaction(campus: campus.id.rawValue) { connection in
            _ = try await Self.claim(connection, campus, through: before, at: now)
        }
    }

    /// The first minute of the day any member (or the campus) is due.
    func earliestMinute(_ campus: Campus) async throws -> Int {
        try await chosenMinutes(campus).min() ?? campus.reminderMinute
    }

    /// When `campus`'s reminders next come due after `now`: the next of the minutes its members
    /// chose (and the campus's own), today's when still ahead, else tomorrow's first.
    public func nextDue(_ campus: Campus, after now: Date) async throws -> Date {
        try await chosenMinutes(campus).map { CampusSchedule.next(minute: $0, in: campus.zone, after: now) }.min()
            ?? now.addingTimeInterval(3_600)
    }

    /// The campus's reminder minute and every other one its members' choices make.
    private func chosenMinutes(_ campus: Campus) async throws -> Set<Int> {
        let rows = try await client.query(
            """
            SELECT DISTINCT \(Self.effectiveMinute(campus)) AS minute FROM member_notifications n
            WHERE n.campus_id = \(campus.id) AND (n.reminder_minute IS NOT NULL OR n.quiet_from IS NOT NULL)
            """, campus: campus.id.rawValue)
        var minutes: Set<Int> = [campus.reminderMinute]
        for row in rows { if let minute = try row.decode("minute", as: Int32?.self) { minutes.insert(Int(minute)) } }
        return minutes
    }
}

/// Who a campus's reminders of a day go to: a `SELECT` of `user_id`s that the reminder
/// statement splices in. Notifications owns the schedule and the outbox, not the members nor
/// their attestations: the composition root passes Surveys' `ReminderAudience.unattested`
/// (active members who have not attested that day).
public struct ReminderAudience: Sendable {
    public let select: @Sendable (CampusID, LocalDate) -> SQL

    public init(select: @escaping @Sendable (CampusID, LocalDate) -> SQL) { self.select = select }
}
