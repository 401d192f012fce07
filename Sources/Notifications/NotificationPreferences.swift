import AttestFoundation
import AttestPlugins
import AttestPostgres
import Foundation
import Tenancy

/// How a member wants to be reached (`member_notifications`): channels, a reminder time, quiet
/// hours and a language, each falling back to the campus's when not chosen. Minutes are
/// campus-local minutes after midnight.
public struct NotificationPreferences: Sendable, Equatable {
    public var email: Bool
    public var push: Bool
    /// Nil: the campus's reminder time.
    public var reminderMinute: Int?
    /// From and to (may span midnight: 22:00 to 07:00); nil: none.
    public var quietHours: (from: Int, to: Int)?
    /// Nil: the campus's language.
    public var language: String?

    public init(
        email: Bool = true, push: Bool = false, reminderMinute: Int? = nil, quietHours: (from: Int, to: Int)? = nil, language: String? = nil
    ) {
        (self.email, self.push, self.reminderMinute, self.quietHours, self.language) = (email, push, reminderMinute, quietHours, language)
    }

    public static func == (a: NotificationPreferences, b: NotificationPreferences) -> Bool {
        a.email == b.email && a.push == b.push && a.reminderMinute == b.reminderMinute && a.quietHours?.from == b.quietHours?.from
            && a.quietHours?.to == b.quietHours?.to && a.language == b.language
    }

    /// The window a reminder time must lie in: from midnight to the campus's deadline (a
    /// reminder is to attest on time).
    public static func window(_ campus: Campus) -> ClosedRange<Int> { 0...max(0, min(campus.deadlineMinute, 1439)) }

    /// Whether `minute` lies in the quiet hours (from inclusive, to exclusive; across midnight
    /// when `from` is later than `to`).
    public func isQuiet(_ minute: Int) -> Bool {
        guard let (from, to) = quietHours else { return false }
        return from < to ? (from..<to).contains(minute) : minute >= from || minute < to
    }

    /// What is wrong with a member's choice at `campus`, by field: a reminder time outside the
    /// campus's window, quiet hours that start and end together, a language messages are not
    /// written in. Times must already be minutes (the front ends parse "HH:MM").
    public static func problems(
        reminderMinute: Int?, quietHours: (from: Int, to: Int)?, language: String?, campus: Campus
    ) -> [(field: String, message: String)] {
        var problems: [(String, String)] = []
        let window = window(campus)
        if let minute = reminderMinute, !window.contains(minute) {
            problems.append(
                (
                    "reminderTime",
                    "must be a time from \(CampusFormats.clock(fromMinute: window.lowerBound)) to \(CampusFormats.clock(fromMinute: window.upperBound)), the campus's deadline, or null for the campus's \(CampusFormats.clock(fromMinute: campus.reminderMinute))"
                ))
        }
        if let hours = quietHours, hours.from == hours.to {
            problems.append(("quietHours", "must start and end at different times, such as 22:00 to 07:00, or be null"))
        }
        if let language, !WrittenLanguages.all.contains(language) {
            problems.append(("language", "must be \(WrittenLanguages.all.joined(separator: " or ")), or null for the campus's"))
        }
        return problems
    }
}

/// Members' notification preferences. A member reads and writes their own; the reminders
/// read a campus's (so the table has campus isolation, not the member-only wall).
public struct NotificationPreferenceStore: Sendable {
    let client: PostgresClient

    public init(client: PostgresClient) { self.client = client }

    /// The member's preferences; the defaults when they never chose.
    public func preferences(campus: CampusID, user: UserID) async throws -> NotificationPreferences {
        let rows = try await client.query(
            """
            SELECT email, push, reminder_minute, quiet_from, quiet_to, language FROM member_notifications
            WHERE campus_id = \(campus) AND user_id = \(user.rawValue)
            """, campus: campus.rawValue)
        guard let row = rows.first else { return NotificationPreferences() }
        let from = try row.decode("quiet_from", as: Int16?.self), to = try row.decode("quiet_to", as: Int16?.self)
        return NotificationPreferences(
            email: try row.decode("email"), push: try row.decode("push"),
            reminderMinute: try row.decode("reminder_minute", as: Int16?.self).map(Int.init),
            quietHours: from.flatMap { from in to.map { (Int(from), Int($0)) } }, language: try row.decode("language", as: String?.self))
    }

    /// Keeps `preferences` (checked by the caller with `NotificationPreferences.problems`). A
    /// member already reminded today keeps that day in `reminded_on`, so a time moved later that
    /// day does not remind them a second time (one not reminded yet, a newcomer or one who had
    /// attested, is reminded at the new time). The day's run row is read `FOR SHARE` first: a run
    /// writing reminders finishes before this looks, and a run starting after it sees the mark.
    public func set(campus: Campus, user: UserID, _ preferences: NotificationPreferences, now: Date) async throws {
        let minute = preferences.reminderMinute.map { Int16(clamping: $0) }
        let from = preferences.quietHours.map { Int16(clamping: $0.from) }, to = preferences.quietHours.map { Int16(clamping: $0.to) }
        let today = campus.localDate(at: now)
        try await client.withTransaction(campus: campus.id.rawValue) { connection in
            let ran = try await connection.query(
                "SELECT 1 FROM reminder_runs WHERE campus_id = \(campus.id) AND local_date = \(today) FOR SHARE")
            // Today's reminders are written under the day's run row: none without it. Found by
            // `notification_outbox_reminders` (the member's few reminders, a week at most), not
            // by reading the campus's outbox.
            let reminded: SQL =
                ran.isEmpty
                ? "NULL::date"
                : """
                (SELECT \(today)::date WHERE EXISTS (
                    SELECT 1 FROM notification_outbox o
                    WHERE o.campus_id = \(campus.id) AND o.reminder_for = \(user.rawValue) AND o.payload->>'date' = \(today.description)))
                """
            try await connection.query(
                """
                INSERT INTO member_notifications AS n
                    (campus_id, user_id, email, push, reminder_minute, quiet_from, quiet_to, language, updated_at, reminded_on)
                VALUES (
                    \(campus.id), \(user.rawValue), \(preferences.email), \(preferences.push), \(minute), \(from), \(to),
                    \(preferences.language), \(now), \(reminded))
                ON CONFLICT (campus_id, user_id) DO UPDATE SET
                    email = EXCLUDED.email, push = EXCLUDED.push, reminder_minute = EXCLUDED.reminder_minute,
                    quiet_from = EXCLUDED.quiet_from, quiet_to = EXCLUDED.quiet_to, language = EXCLUDED.language,
                    updated_at = EXCLUDED.updated_at, reminded_on = coalesce(EXCLUDED.reminded_on, n.reminded_on)
                """)
        }
    }
}
