import AttestFoundation
import AttestPlugins
import AttestPostgres
import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import Tenancy

/// A door's name as a screener gave it: at most 80 Unicode scalars as sent (as JSON Schema's
/// `maxLength` and PostgreSQL count a text's length), then control and format characters
/// dropped, trimmed, runs of spaces made one.
public struct DoorName: Hashable, Sendable, CustomStringConvertible {
    public let text: String
    public var description: String { text }

    public static let maxLength = 80

    /// `text` as a door's name; nil when nothing is left of it (no door named), an error when
    /// it is too long.
    public static func parse(_ text: String) throws(DoorNameProblem) -> DoorName? {
        // Measured before anything is dropped: the API's schema says 80, and a name the
        // schema refuses must not pass because a control character in it was stripped.
        let length = text.unicodeScalars.count
        if length > maxLength { throw .tooLong(length) }
        var kept = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            switch scalar.properties.generalCategory {
            case .control, .format: continue
            default: kept.append(scalar)
            }
        }
        let name = String(kept).split(whereSeparator: { $0.isWhitespace }).joined(separator: " ")
        if name.isEmpty { return nil }
        return DoorName(text: name)
    }

    private init(text: String) { self.text = text }
}

public enum DoorNameProblem: Error, Sendable, Equatable {
    case tooLong(Int)

    /// The message after the field's name.
    public var message: String {
        switch self {
        case .tooLong(let length):
            "must be at most \(DoorName.maxLength) characters, got \(length): shorten the door's name (\"Library east entrance\")"
        }
    }
}

/// What a door check answered, as it is counted: a valid badge's colour (a guest's or a
/// member's), or why the badge was refused. Never whose badge it was.
public struct DoorVerdict: Hashable, Sendable {
    /// A colour (`green`, `yellow`, `red`, `gray`) or a refusal (`expired`, `other-campus`, …).
    public var verdict: String
    public var guest: Bool

    public init(_ verification: BadgeVerification) {
        switch verification {
        case .valid(let claims):
            verdict = BadgeColor(rawValue: claims.color)?.rawValue ?? BadgeRejection.malformed.rawValue
            guest = claims.guest != nil
        case .invalid(let rejection):
            verdict = rejection.rawValue
            guest = false
        }
    }

    public init(verdict: String, guest: Bool) { (self.verdict, self.guest) = (verdict, guest) }

    /// Whether the badge was valid (the verdict is a colour).
    public var admitted: Bool { BadgeColor(rawValue: verdict) != nil }
}

/// The door checks this server made, counted per campus, door, campus-local hour and verdict,
/// and added to `door_counts` every `interval` (and once more when the server stops): a check
/// costs a dictionary update, not a transaction. A count of up to `interval` is lost if the
/// process dies. The same badge shown again to the same screener within `repeatWindow` (a
/// camera that looks again while the badge is still held up) is counted once; what tells a
/// repeat is a hash of the token kept in memory for that window only, never stored.
public final class DoorCounts: Service, Sendable {
    struct Key: Hashable, Sendable {
        var campus: CampusID
        var door: String
        var hour: Date
        var verdict: DoorVerdict
    }

    struct Last: Sendable {
        var token: Int
        var at: Date
    }

    private let client: PostgresClient
    private let logger: Logger
    private let interval: Duration
    /// The clock the counted checks were stamped with (the server's): forgetting who showed
    /// what measures on it, not on another.
    private let clock: @Sendable () -> Date
    public static let repeatWindow: TimeInterval = 20
    private let state = Mutex<(pending: [Key: Int], last: [UserID: Last])>(([:], [:]))

    public init(
        client: PostgresClient, logger: Logger, interval: Duration = .seconds(5), clock: @escaping @Sendable () -> Date = { Date() }
    ) {
        (self.client, self.logger, self.interval, self.clock) = (client, logger, interval, clock)
    }

    /// Counts `verification` at `door` of `campus`, unless `screener` was shown this token
    /// within `repeatWindow`.
    public func count(_ verification: BadgeVerification, token: String, door: DoorName, campus: Campus, screener: UserID, at now: Date) {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = campus.zone
        let hour = calendar.dateInterval(of: .hour, for: now)?.start ?? now
        let key = Key(campus: campus.id, door: door.text, hour: hour, verdict: DoorVerdict(verification))
        let digest = token.hashValue
        state.withLock { state in
            if let last = state.last[screener], last.token == digest, now.timeIntervalSince(last.at) < Self.repeatWindow { return }
            state.last[screener] = Last(token: digest, at: now)
            state.pending[key, default: 0] += 1
        }
    }

    /// Adds what was counted since the last flush to the table, a transaction per campus. A
    /// campus whose write fails keeps its counts for the next flush.
    public func flush() async {
        let now = clock()
        let pending = state.withLock { state -> [Key: Int] in
            let pending = state.pending
            state.pending = [:]
            state.last = state.last.filter { now.timeIntervalSince($0.value.at) < Self.repeatWindow }
            return pending
        }
        for (campus, counts) in Dictionary(grouping: pending, by: \.key.campus) {
            do {
                try await client.query(
                    """
                    INSERT INTO door_counts AS d (campus_id, door, hour, verdict, guest, count)
                    SELECT \(campus), door, hour, verdict, guest, n
                    FROM unnest(\(counts.map(\.key.door))::text[], \(counts.map(\.key.hour))::timestamptz[],
                                \(counts.map(\.key.verdict.verdict))::text[], \(counts.map(\.key.verdict.guest))::bool[],
                                \(counts.map { Int32(clamping: $0.value) })::int4[]) AS c(door, hour, verdict, guest, n)
                    ON CONFLICT (campus_id, hour, door, verdict, guest) DO UPDATE SET count = d.count + excluded.count
                    """, campus: campus.rawValue)
            } catch let error as PostgresError where error.sqlState?.hasPrefix("23") == true {
                // An integrity violation (the campus was deleted) does not pass with time.
                logger.warning("door counts dropped: the database refused them", metadata: ["error": "\(error)"])
            } catch {
                logger.warning("door counts not yet written; kept for the next try", metadata: ["error": "\(error)"])
                state.withLock { state in
                    for (key, n) in counts { state.pending[key, default: 0] += n }
                }
            }
        }
    }

    public func run() async throws {
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: self.interval) }
            await flush()
        }
    }

    /// One door's counts in one campus-local hour.
    public struct Hour: Sendable, Equatable {
        public var door: String
        public var hour: Date
        /// Count per verdict, guests' valid badges apart from members'.
        public var members: [String: Int]
        public var guests: [String: Int]
        public var refused: [String: Int]

        public var total: Int { members.values.reduce(0, +) + guests.values.reduce(0, +) + refused.values.reduce(0, +) }
    }

    /// The most days a request for hours may span: a busy campus's year of hours at every door
    /// would be a million rows; totals per door cover any range.
    public static let maxHourlyDays = 92

    /// A range short enough for counts by hour, or the problem naming `to`.
    public static func checkHourly(_ range: DateRange) throws(SurveysError) {
        let days = range.from.days(until: range.to) + 1
        guard days <= maxHourlyDays else {
            throw .invalidRange([
                FieldProblem(
                    "to",
                    "must be at most \(maxHourlyDays - 1) days after from (\(range.from)) for counts by hour, this range spans \(days) days: ask for a quarter at a time"
                )
            ])
        }
    }

    /// The counts of `campus` for the local days of `range`, by door then hour.
    public func hours(campus: Campus, range: DateRange) async throws -> [Hour] {
        let start = campus.startOfDay(range.from), end = campus.startOfDay(range.to.adding(days: 1))
        return try Self.folded(
            await client.query(
                """
                SELECT door, hour, verdict, guest, count FROM door_counts
                WHERE campus_id = \(campus.id) AND hour >= \(start) AND hour < \(end)
                ORDER BY door, hour
                """, campus: campus.id.rawValue))
    }

    /// Each door's counts over the local days of `range`, summed in the database (`hour`: the
    /// range's start), and the last local day of the range with any count.
    public func totals(campus: Campus, range: DateRange) async throws -> (doors: [Hour], lastDay: LocalDate?) {
        let start = campus.startOfDay(range.from), end = campus.startOfDay(range.to.adding(days: 1))
        return try await client.withTransaction(campus: campus.id.rawValue) { connection in
            let doors = try Self.folded(
                await connection.query(
                    """
                    SELECT door, \(start)::timestamptz AS hour, verdict, guest, sum(count)::int8 AS count FROM door_counts
                    WHERE campus_id = \(campus.id) AND hour >= \(start) AND hour < \(end)
                    GROUP BY door, verdict, guest ORDER BY door
                    """))
            let last = try await connection.query(
                "SELECT max(hour) AS last FROM door_counts WHERE campus_id = \(campus.id) AND hour >= \(start) AND hour < \(end)"
            ).first?.decode("last", as: Date?.self)
            return (doors, last.map { campus.localDate(at: $0) })
        }
    }

    /// Rows of door, hour, verdict, guest and count, ordered by door then hour, as `Hour`s.
    private static func folded(_ rows: PostgresRows) throws -> [Hour] {
        var hours: [Hour] = []
        for row in rows {
            let door = try row.decode("door", as: String.self), hour = try row.decode("hour", as: Date.self)
            let verdict = DoorVerdict(verdict: try row.decode("verdict", as: String.self), guest: try row.decode("guest", as: Bool.self))
            let count = try row.decode("count", as: Int.self)
            if hours.last?.door != door || hours.last?.hour != hour {
                hours.append(Hour(door: door, hour: hour, members: [:], guests: [:], refused: [:]))
            }
            let last = hours.count - 1
            if !verdict.admitted {
                hours[last].refused[verdict.verdict, default: 0] += count
            } else if verdict.guest {
                hours[last].guests[verdict.verdict, default: 0] += count
            } else {
                hours[last].members[verdict.verdict, default: 0] += count
            }
        }
        return hours
    }

    /// The start of an hour as ISO 8601 with the campus's offset, `2026-11-28T09:00:00-05:00`.
    public static func hourText(_ hour: Date, campus: Campus) -> String {
        hour.ISO8601Format(Date.ISO8601FormatStyle(timeZoneSeparator: .colon, timeZone: campus.zone))
    }

    /// `hours` as CSV, one line per door, hour, kind and verdict:
    /// `door,hour,badge,verdict,count` (`badge`: member, guest or refused).
    public static func csv(_ hours: [Hour], campus: Campus) -> String {
        var lines = ["door,hour,badge,verdict,count"]
        for hour in hours {
            let start = hourText(hour.hour, campus: campus)
            for (badge, counts) in [("member", hour.members), ("guest", hour.guests), ("refused", hour.refused)] {
                for (verdict, count) in counts.sorted(by: { $0.key < $1.key }) {
                    lines.append([hour.door, start, badge, verdict, "\(count)"].map(CSV.escape).joined(separator: ","))
                }
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
