import AttestPlugins
import AttestPostgres
import Foundation
import Tenancy

/// Daily reminders: once a campus's local time reaches its reminder time, one
/// `reminder.due` event per active member who has not attested that local day, for each
/// sink subscribed to it (none, and no member is read, when no sink takes reminders). The
/// day is claimed in `reminder_runs` in the same transaction that writes the events, so
/// however many servers run, each member is reminded once.
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

    /// Writes today's reminders for every campus whose reminder time has come and whose day
    /// is not claimed yet. Returns the number of members reminded per campus slug written now.
    @discardableResult
    public func run(campuses: [Campus], at now: Date) async throws -> [String: Int] {
        var written: [String: Int] = [:]
        for campus in campuses where Self.isDue(campus, at: now) {
            if let count = try await remind(campus, at: now) { written[campus.slug] = count }
        }
        return written
    }

    /// nil when another server (or an earlier round) already did this day.
    func remind(_ campus: Campus, at now: Date) async throws -> Int? {
        let date = campus.localDate(at: now)
        return try await client.withTransaction(campus: campus.id.rawValue) { connection in
            let claimed = try await connection.query(
                """
                INSERT INTO reminder_runs (campus_id, local_date) VALUES (\(campus.id), \(date))
                ON CONFLICT DO NOTHING RETURNING local_date
                """)
            guard !claimed.isEmpty else { return nil }
            // No sink takes reminders: the day is claimed and nobody is read. Finding who has
            // not attested reads every member (2.5 s of PostgreSQL's CPU for 300,000 of them).
            let taken = try await connection.query(
                "SELECT \(OutboxEvents.anySink(campus: campus.id, taking: .reminderDue)) AS taken")
            guard try taken.first?.decode("taken", as: Bool.self) == true else { return 0 }  // `reminded` stays 0
            let event = NotificationEvent.reminderDue.rawValue
            let rows = try await connection.query(
                """
                WITH due AS (
                    \(audience.select(campus.id, date))
                ), events AS (
                    SELECT gen_random_uuid() AS id, \(event)::text AS event, \(OutboxEvents.payload(
                               event: "\(event)::text", campus: "\(campus.slug)::text", occurredAt: "\(now)::timestamptz", userId: "d.user_id",
                               date: "\(date)::date", links: "jsonb_build_object('survey', \("/v1/campuses/\(campus.slug)/survey")::text)")) AS payload
                    FROM due d
                ), written AS (
                    \(OutboxEvents.insert(campus: campus.id))
                )
                SELECT count(*)::int AS reminded FROM due
                """)
            let reminded: Int = try rows.first?.decode("reminded") ?? 0
            try await connection.query(
                "UPDATE reminder_runs SET reminded = \(reminded) WHERE campus_id = \(campus.id) AND local_date = \(date)")
            return reminded
        }
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
