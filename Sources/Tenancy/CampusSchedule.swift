import AttestPlugins
import AttestPostgres
import Foundation

/// When each campus's daily work next comes due (`campuses.next_reminder_at`,
/// `next_upkeep_at`), so that a server finds the campuses with work due in one indexed read
/// (`attest_schedule_due`) however many there are, and sleeps until the next one.
///
/// A due time only wakes a server: the work itself is claimed per campus and local day
/// (`reminder_runs`, `purge_state`), so two servers that wake together do it once. A server
/// that did (or found done) a campus's work moves its due time on to the next local day.
public struct CampusSchedule: Sendable {
    public enum Work: String, Sendable {
        /// The day's reminders, at the campus's reminder time.
        case reminders = "reminder"
        /// The daily upkeep (retention, purges, rollup folding), at the campus's upkeep minute.
        case upkeep

        var column: SQL { self == .reminders ? "next_reminder_at" : "next_upkeep_at" }
    }

    /// What one read found: the campuses whose work is due, the longest due first, and when
    /// the next of the others comes due (nil when there is none).
    public struct Due: Sendable, Equatable {
        public var campuses: [CampusID]
        public var next: Date?
    }

    let client: PostgresClient

    public init(client: PostgresClient) { self.client = client }

    /// The statement that reads `work`'s schedule (columns `campus_id`, `due_at`): a caller may
    /// send it together with another read (`UNION ALL`) in one round trip.
    public static func select(_ work: Work, dueBy now: Date, atMost limit: Int) -> SQL {
        "SELECT campus_id, due_at FROM attest_schedule_due(\(work.rawValue)::text, \(now)::timestamptz, \(limit)::int)"
    }

    /// Splits rows of `select` into the due campuses and the next due time after `now`.
    public static func due(_ rows: [(CampusID, Date)], at now: Date) -> Due {
        var due = Due(campuses: [], next: nil)
        for (campus, at) in rows {
            if at <= now { due.campuses.append(campus) } else { due.next = min(due.next ?? at, at) }
        }
        return due
    }

    /// The campuses whose `work` is due at `now` (at most `limit`), and the next due time.
    public func due(_ work: Work, at now: Date, limit: Int = 500) async throws -> Due {
        let rows = try await client.query(Self.select(work, dueBy: now, atMost: limit))
        return Self.due(try rows.map { (CampusID(try $0.decode("campus_id")), try $0.decode("due_at")) }, at: now)
    }

    /// Sets when `campus`'s `work` next comes due.
    public func schedule(_ work: Work, campus: CampusID, at instant: Date) async throws {
        try await client.query("UPDATE campuses SET \(work.column) = \(instant) WHERE id = \(campus)", campus: campus.rawValue)
    }

    /// Moves `campus`'s `work` due time to `instant` when that is sooner: a member chose an
    /// earlier reminder time than the one the campus waits for (the next wake finds the next).
    public func bringForward(_ work: Work, campus: CampusID, to instant: Date) async throws {
        try await client.query(
            "UPDATE campuses SET \(work.column) = least(\(work.column), \(instant)) WHERE id = \(campus)", campus: campus.rawValue)
    }

    // MARK: Wall-clock times

    /// Whether the campus-local wall clock at `now` shows `minute` (since midnight) or later.
    /// DST-correct: minutes as the clock on the wall shows them, not as elapsed since midnight.
    public static func hasPassed(minute: Int, in zone: TimeZone, at now: Date) -> Bool {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let parts = calendar.dateComponents([.hour, .minute], from: now)
        return (parts.hour ?? 0) * 60 + (parts.minute ?? 0) >= minute
    }

    /// The next instant after `now` at which the campus-local wall clock shows `minute`: today's
    /// when it has not passed yet, else tomorrow's. On a day whose clock skips that minute (the
    /// spring change), the first instant after the skip; on a day it shows it twice, the first.
    /// Never earlier than the start of the minute after `now`'s (the minute `now` is in was
    /// looked at already), whatever the zone's rules say: on a day that shows an hour twice,
    /// its first instant may lie behind `now`. No later than the minute itself either: a time
    /// 30 seconds ahead is due in 30 seconds.
    public static func next(minute: Int, in zone: TimeZone, after now: Date) -> Date {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let floor = Date(timeIntervalSince1970: ((now.timeIntervalSince1970 / 60).rounded(.down) + 1) * 60)
        let day = hasPassed(minute: minute, in: zone, at: now) ? calendar.date(byAdding: .day, value: 1, to: now) : now
        guard let day,
            let instant = calendar.date(bySettingHour: minute / 60, minute: minute % 60, second: 0, of: day, matchingPolicy: .nextTime)
        else { return now.addingTimeInterval(3_600) }
        return max(instant, floor)
    }

    /// The campus's own minute of the small hours (01:00 to 04:59 local) for its daily upkeep,
    /// the same on every server: campuses' upkeeps are spread over four hours, not all at
    /// midnight.
    public static func upkeepMinute(_ campus: CampusID) -> Int {
        let bytes = campus.rawValue.uuid
        return 60 + (Int(bytes.14) << 8 | Int(bytes.15)) % 240
    }
}
