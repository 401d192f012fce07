import AttestFoundation
import AttestPlugins
import AttestPostgres
import Foundation
import Identity
import Tenancy

/// One campus-local day's figures, summed from the rollups (`daily_stats`,
/// `daily_answer_counts`, `member_changes`): never from the attestations themselves.
public struct DayFigures: Sendable, Equatable {
    public var date: LocalDate
    /// Members active at the end of the day.
    public var active: Int
    public var submitted: Int
    public var onTime: Int
    public var late: Int
    public var green: Int
    public var yellow: Int
    public var red: Int
    /// How many attestations gave each answer: `[question id: [answer: count]]`, where a
    /// boolean yes is `"true"` and a choice is its option id. Zero counts are absent.
    public var answers: [String: [String: Int]]

    public init(date: LocalDate, active: Int = 0) {
        self.date = date
        self.active = active
        submitted = 0
        onTime = 0
        late = 0
        green = 0
        yellow = 0
        red = 0
        answers = [:]
    }

    /// Active members who did not submit (so far, for today).
    public var missing: Int { max(active - submitted, 0) }

    /// Share of active members who submitted before the deadline, 0…1 (nil without members).
    public var complianceRate: Double? { active > 0 ? min(Double(onTime) / Double(active), 1) : nil }
}

/// Which counts a member-visible table hides so that no small count (1 to `minCount` − 1) can
/// be read off it, not even by subtraction.
public enum SmallCounts {
    /// The indices of `counts` (which add up to the day's total, as the colours do) to hide:
    /// every small count; when that is one cell, the smallest other too (else the total minus
    /// the rest gives it back); and when the hidden cells together are still fewer than
    /// `minCount`, every cell (their sum would single out as many people).
    public static func hidden(_ counts: [Int], minCount: Int) -> Set<Int> {
        func small(_ count: Int) -> Bool { count > 0 && count < minCount }
        var hidden = Set(counts.indices.filter { small(counts[$0]) })
        guard !hidden.isEmpty else { return [] }
        if hidden.count == 1,
            let complement = counts.indices.filter({ !hidden.contains($0) }).min(by: { (counts[$0], $0) < (counts[$1], $1) })
        {
            hidden.insert(complement)
        }
        if hidden.reduce(0, { $0 + counts[$1] }) < minCount { return Set(counts.indices) }
        return hidden
    }

    /// Whether a yes/no count is hidden: its yeses or its noes (the total minus the yeses)
    /// are small.
    public static func hidesYes(_ yes: Int, of total: Int, minCount: Int) -> Bool {
        (yes > 0 && yes < minCount) || (total - yes > 0 && total - yes < minCount)
    }
}

/// A range's figures added up.
public struct RangeTotals: Sendable, Equatable {
    /// Members active at the end of the last day.
    public var activeMembers = 0
    /// Active members summed over the days: who could have submitted, day by day.
    public var memberDays = 0
    public var submitted = 0
    public var onTime = 0
    public var late = 0
    public var missing = 0
    public var green = 0
    public var yellow = 0
    public var red = 0
    public var answers: [String: [String: Int]] = [:]

    public init(_ days: [DayFigures]) {
        add(days[...])
    }

    /// Adds days that follow those already added.
    public mutating func add(_ days: ArraySlice<DayFigures>) {
        activeMembers = days.last?.active ?? activeMembers
        for day in days {
            memberDays += day.active
            submitted += day.submitted
            onTime += day.onTime
            late += day.late
            missing += day.missing
            green += day.green
            yellow += day.yellow
            red += day.red
            for (question, counts) in day.answers {
                for (answer, count) in counts { answers[question, default: [:]][answer, default: 0] += count }
            }
        }
    }

    /// On-time submissions over member-days, 0…1 (nil without members).
    public var complianceRate: Double? { memberDays > 0 ? min(Double(onTime) / Double(memberDays), 1) : nil }
}

/// A date range a caller asked for, checked: ISO dates, from ≤ to, at most 366 days.
public struct DateRange: Sendable, Equatable {
    public var from: LocalDate
    public var to: LocalDate
    public static let maxDays = 366

    /// What is wrong with one end of a range, for a caller that words it itself (the pages,
    /// in the page's language).
    public struct Fault: Sendable, Equatable {
        public enum Kind: Sendable, Equatable {
            /// Not sent.
            case missing
            /// Not an ISO date; the text as sent.
            case notADate(String)
            /// `to` before `from` (the date given as `from`).
            case beforeFrom(LocalDate)
            /// Longer than `maxDays`: from `from`, `days` days.
            case tooLong(from: LocalDate, days: Int)
        }
        /// `from` or `to`.
        public var field: String
        public var kind: Kind
    }

    /// The range `from` and `to` name, or what is wrong with each (never both).
    public static func check(from: String?, to: String?) -> Result<DateRange, FaultList> {
        var faults: [Fault] = []
        func date(_ text: String?, field: String) -> LocalDate? {
            guard let text else {
                faults.append(Fault(field: field, kind: .missing))
                return nil
            }
            guard let date = LocalDate(text) else {
                faults.append(Fault(field: field, kind: .notADate(text)))
                return nil
            }
            return date
        }
        let start = date(from, field: "from"), end = date(to, field: "to")
        if let start, let end {
            if end < start {
                faults.append(Fault(field: "to", kind: .beforeFrom(start)))
            } else if start.days(until: end) + 1 > maxDays {
                faults.append(Fault(field: "to", kind: .tooLong(from: start, days: start.days(until: end) + 1)))
            }
        }
        guard faults.isEmpty, let start, let end else { return .failure(FaultList(faults: faults)) }
        return .success(DateRange(from: start, to: end))
    }

    /// `check`'s faults, as an error.
    public struct FaultList: Error, Sendable, Equatable {
        public var faults: [Fault]
    }

    /// Parses `from` and `to` (query parameters or CLI options); throws
    /// `SurveysError.invalidRange` naming each field. A message that mentions the other field
    /// spells it with `name` (the CLI's `--from`).
    public static func parse(from: String?, to: String?, name: (String) -> String = { $0 }) throws(SurveysError) -> DateRange {
        switch check(from: from, to: to) {
        case .success(let range): return range
        case .failure(let list):
            throw .invalidRange(
                list.faults.map { fault in
                    switch fault.kind {
                    case .missing: FieldProblem(fault.field, "is required: a date as YYYY-MM-DD")
                    case .notADate(let text): FieldProblem(fault.field, "must be a date as YYYY-MM-DD, got \"\(text.prefix(40))\"")
                    case .beforeFrom(let start): FieldProblem(fault.field, "must not be before \(name("from")) (\(start))")
                    case .tooLong(let start, let days):
                        FieldProblem(
                            fault.field,
                            "must be at most \(maxDays - 1) days after \(name("from")) (\(start)): a range spans at most \(maxDays) days, this one \(days)"
                        )
                    }
                })
        }
    }

    public init(from: LocalDate, to: LocalDate) {
        self.from = from
        self.to = to
    }

    /// Every date of the range, in order; none when `to` is before `from`.
    public var dates: [LocalDate] { from <= to ? (0...from.days(until: to)).map { from.adding(days: $0) } : [] }
}

/// The upsert clauses every rollup writer ends with (the writer, the seed, compaction): a
/// row that exists gets the new counts added. The tables must be aliased `s` and `c`.
public enum Rollups {
    public static let addToStats: SQL = """
        ON CONFLICT (campus_id, local_date, shard) DO UPDATE SET
            submitted = s.submitted + EXCLUDED.submitted, on_time = s.on_time + EXCLUDED.on_time,
            late = s.late + EXCLUDED.late, green = s.green + EXCLUDED.green, yellow = s.yellow + EXCLUDED.yellow,
            red = s.red + EXCLUDED.red
        """
    public static let addToAnswerCounts: SQL =
        "ON CONFLICT (campus_id, local_date, question_id, answer, shard) DO UPDATE SET count = c.count + EXCLUDED.count"
}

/// Reads the rollups and the identifiable follow-up list; every identifiable read is audited.
public struct StatisticsStore: Sendable {
    let client: PostgresClient
    /// Where the rollups are read (`days`): a streaming standby's pool when the server has
    /// `DATABASE_READ_URL`, else `client`. Everything that writes or audits uses `client`.
    let reader: PostgresClient
    /// The time "now", which says which days are settled (the server's clock).
    let now: @Sendable () -> Date
    /// Settled days' figures by campus and date, kept five minutes; at most 5,000 days, past
    /// which older ones go sooner.
    private let settled = ExpiringCache<SettledDay, DayFigures>(ttl: keptFor, limit: 5_000)
    /// How long a settled day's figures are kept: what is made from them (a server's written
    /// dashboard) is kept no longer after they were read.
    public static let keptFor = Duration.seconds(300)

    struct SettledDay: Hashable, Sendable {
        var campus: CampusID
        var date: LocalDate
    }

    public init(client: PostgresClient, reader: PostgresClient? = nil, now: @escaping @Sendable () -> Date = { Date() }) {
        self.client = client
        self.reader = reader ?? client
        self.now = now
    }

    /// The first day whose figures may still change at `instant`: the UTC date two days
    /// before. A submission counts on its campus's local date when it arrives, which is at
    /// most a day from the UTC date in any time zone, and commits within seconds; member
    /// changes count on the day they happen; the retention purge, erasure and compaction
    /// change no figure. So every day before this one is settled in every campus.
    static func firstOpenDay(at instant: Date) -> LocalDate { LocalDate(instant, in: .gmt).adding(days: -2) }

    /// Every day of `range`, in order (days without attestations have zero counts). Three
    /// index range scans over the rollups: the cost grows with days, not attestations.
    /// Settled days (`firstOpenDay`) are read once and kept for five minutes, so a 30-day
    /// dashboard reads only its open days, two or three, from the database: the figures of
    /// a settled day no longer change, and the five minutes bound what an operator's
    /// hand-made change to old rollups, or a standby days behind, would leave showing.
    public func days(campus: CampusID, range: DateRange) async throws -> [DayFigures] {
        try await keptDays(campus: campus, range: range).days
    }

    /// A range's days as `days(campus:range:)` gives them, and which of them are settled.
    public struct KeptDays: Sendable {
        public var days: [DayFigures]
        /// How many of `days`, from the first, are settled.
        public var settled: Int
        /// When the oldest settled one was read from the database (nil when none is settled):
        /// what is made from them is no fresher, and is kept at most `keptFor` after it.
        public var since: ContinuousClock.Instant?
    }

    /// `days(campus:range:)`, saying which days are settled and since when they are as read.
    public func keptDays(campus: CampusID, range: DateRange) async throws -> KeptDays {
        guard range.from <= range.to else { return KeptDays(days: [], settled: 0, since: nil) }  // `parse` refuses it; a range built otherwise reads nothing
        let open = Self.firstOpenDay(at: now())
        let dates = range.from < open ? DateRange(from: range.from, to: min(range.to, open.adding(days: -1))).dates : []
        var kept: [DayFigures] = []
        kept.reserveCapacity(dates.count)
        var since: ContinuousClock.Instant?
        for date in dates {
            guard let entry = settled.entry(for: SettledDay(campus: campus, date: date)) else { break }
            kept.append(entry.value)
            since = min(since ?? entry.at, entry.at)
        }
        if kept.count == dates.count {
            guard range.to >= open else { return KeptDays(days: kept, settled: kept.count, since: since) }
            let openDays = try await read(campus: campus, range: DateRange(from: max(range.from, open), to: range.to))
            return KeptDays(days: kept + openDays, settled: kept.count, since: since)
        }
        // A settled day not kept: the whole range in one read, its settled days kept.
        let started = ContinuousClock.now
        let days = try await read(campus: campus, range: range)
        for day in days where day.date < open { settled.store(day, for: SettledDay(campus: campus, date: day.date), at: started) }
        return KeptDays(days: days, settled: dates.count, since: dates.isEmpty ? nil : started)
    }

    /// The days of `range` as the database has them now.
    func read(campus: CampusID, range: DateRange) async throws -> [DayFigures] {
        let (from, to) = (range.from, range.to)
        // One pipelined round trip, one transaction: the three reads see the same snapshot.
        // From the standby when there is one; if it cannot be reached, from the primary.
        do {
            return try await days(campus: campus, from: from, to: to, range: range, on: reader)
        } catch let error as PostgresError where error.isConnectionError && reader !== client {
            return try await days(campus: campus, from: from, to: to, range: range, on: client)
        }
    }

    private func days(campus: CampusID, from: LocalDate, to: LocalDate, range: DateRange, on pool: PostgresClient) async throws
        -> [DayFigures]
    {
        let results = try await pool.withConnection { connection in
            try await connection.pipeline([
                PipelineUnit(
                    campus: campus.rawValue,
                    statements: [
                        """
                        SELECT local_date, sum(submitted)::bigint AS submitted, sum(on_time)::bigint AS on_time,
                               sum(late)::bigint AS late, sum(green)::bigint AS green, sum(yellow)::bigint AS yellow,
                               sum(red)::bigint AS red
                        FROM daily_stats WHERE campus_id = \(campus) AND local_date BETWEEN \(from) AND \(to)
                        GROUP BY local_date
                        """,
                        """
                        SELECT local_date, question_id, answer, sum(count)::bigint AS count
                        FROM daily_answer_counts WHERE campus_id = \(campus) AND local_date BETWEEN \(from) AND \(to)
                        GROUP BY local_date, question_id, answer
                        """,
                        UserStore.memberChanges(campus: campus, from: from, to: to),
                    ])
            ])[0].get()
        }
        let (stats, answers, members) = (results[0], results[1], results[2])
        var byDate: [LocalDate: DayFigures] = [:]
        var changes: [LocalDate: Int] = [:]
        var active = 0
        for row in members {
            if let date = try row.decode("local_date", as: LocalDate?.self) {
                changes[date] = try row.decode("change", as: Int.self)
            } else {
                active = try row.decode("change", as: Int.self)
            }
        }
        for date in range.dates {
            active += changes[date] ?? 0
            byDate[date] = DayFigures(date: date, active: active)
        }
        for row in stats {
            let date = try row.decode("local_date", as: LocalDate.self)
            byDate[date]?.submitted = try row.decode("submitted", as: Int.self)
            byDate[date]?.onTime = try row.decode("on_time", as: Int.self)
            byDate[date]?.late = try row.decode("late", as: Int.self)
            byDate[date]?.green = try row.decode("green", as: Int.self)
            byDate[date]?.yellow = try row.decode("yellow", as: Int.self)
            byDate[date]?.red = try row.decode("red", as: Int.self)
        }
        for row in answers {
            let date = try row.decode("local_date", as: LocalDate.self)
            let count = try row.decode("count", as: Int.self)
            guard count != 0 else { continue }
            byDate[date]?.answers[try row.decode("question_id", as: String.self), default: [:]][try row.decode("answer", as: String.self)] =
                count
        }
        return range.dates.compactMap { byDate[$0] }
    }

    /// Folds the shard rows of every day before `before` into shard 0, so a finished day is
    /// one `daily_stats` row and one row per answer, however many writers' shards it had:
    /// a dashboard's cost then grows with days only. Sums are unchanged; safe to run at any
    /// time (a writer still adding to a folded day just starts a new shard row). Returns how
    /// many shard rows were folded away.
    @discardableResult
    public func compact(campus: CampusID, before: LocalDate) async throws -> Int {
        try await client.withTransaction(campus: campus.rawValue) { connection in
            let stats = try await connection.query(
                """
                WITH moved AS (
                    DELETE FROM daily_stats WHERE campus_id = \(campus) AND local_date < \(before) AND shard <> 0
                    RETURNING local_date, submitted, on_time, late, green, yellow, red
                ), folded AS (
                    INSERT INTO daily_stats AS s (campus_id, local_date, shard, submitted, on_time, late, green, yellow, red)
                    SELECT \(campus), local_date, 0, sum(submitted), sum(on_time), sum(late), sum(green), sum(yellow), sum(red)
                    FROM moved GROUP BY local_date
                    \(Rollups.addToStats)
                )
                SELECT count(*) AS n FROM moved
                """)
            let answers = try await connection.query(
                """
                WITH moved AS (
                    DELETE FROM daily_answer_counts WHERE campus_id = \(campus) AND local_date < \(before) AND shard <> 0
                    RETURNING local_date, question_id, answer, count
                ), folded AS (
                    INSERT INTO daily_answer_counts AS c (campus_id, local_date, question_id, answer, shard, count)
                    SELECT \(campus), local_date, question_id, answer, 0, sum(count)
                    FROM moved GROUP BY local_date, question_id, answer
                    \(Rollups.addToAnswerCounts)
                )
                SELECT count(*) AS n FROM moved
                """)
            return try (stats.first?.decode("n", as: Int.self) ?? 0) + (answers.first?.decode("n", as: Int.self) ?? 0)
        }
    }

    /// One member on the follow-up list.
    public struct FollowUp: Sendable, Equatable {
        public var userId: UserID
        public var name: String
        public var email: String
        public var color: BadgeColor
        public var reason: String
        public var submittedAt: Date
        public var onTime: Bool
    }

    /// Where a page of the follow-up list ended: the last member's place in its order (red
    /// first, then by submission time, then by member id). Its text form, `r` or `y`, the
    /// submission time in microseconds since 1970 and the member id, joined by dots, names no
    /// one: it may end up in a proxy's log as part of the URL.
    public struct FollowUpCursor: Sendable, Equatable, CustomStringConvertible {
        public var red: Bool
        public var submittedMicroseconds: Int64
        public var user: UserID

        public var description: String { "\(red ? "r" : "y").\(submittedMicroseconds).\(user.rawValue.lowercasedText)" }

        /// The latest submission time a cursor names, 9999-12-31T23:59:59.999999Z: a later one
        /// is none this API gave out.
        public static let latestMicroseconds: Int64 = 253_402_300_799_999_999
    }

    /// The red and yellow attestations of `date` (or only `colors`) after `cursor`, at most
    /// `limit`: red first, then by submission time (then member id), with who, and the cursor
    /// of the next page (nil on the last). Records an audit entry (actor, filters, how many
    /// rows, whether it continued a list) in the same transaction: no entry, no list.
    public func followUps(
        campus: CampusID, date: LocalDate, colors: [BadgeColor], after cursor: FollowUpCursor? = nil, limit: Int, actor: String
    ) async throws -> (items: [FollowUp], next: FollowUpCursor?) {
        let names = colors.map(\.rawValue)
        // The order as a row, red first: (not red, submitted_at, user_id) ascending.
        let after: SQL =
            cursor.map {
                """
                AND (a.color <> 'red', a.submitted_at, a.user_id)
                    > (\(!$0.red), to_timestamp(0) + \($0.submittedMicroseconds) * interval '1 microsecond', \($0.user))
                """
            } ?? ""
        return try await client.withTransaction(campus: campus.rawValue) { connection in
            let rows = try await connection.query(
                """
                SELECT a.user_id, u.display_name, u.email, a.color, a.reason, a.submitted_at, a.on_time,
                       (extract(epoch FROM a.submitted_at) * 1000000)::bigint AS submitted_us
                FROM attestations a JOIN users u ON u.campus_id = a.campus_id AND u.id = a.user_id
                WHERE a.campus_id = \(campus) AND a.local_date = \(date) AND a.color = ANY(\(names))
                  AND a.color <> 'green' -- the condition of attestations_follow_ups, so using it never depends on the array
                  \(after)
                ORDER BY a.color <> 'red', a.submitted_at, a.user_id
                LIMIT \(limit + 1)
                """)
            let list = try rows.prefix(limit).map { row in
                FollowUp(
                    userId: UserID(try row.decode("user_id", as: UUID.self)), name: try row.decode("display_name"),
                    email: try row.decode("email"), color: BadgeColor(rawValue: try row.decode("color", as: String.self)) ?? .yellow,
                    reason: try row.decode("reason"), submittedAt: try row.decode("submitted_at"), onTime: try row.decode("on_time"))
            }
            var next: FollowUpCursor?
            if rows.count > limit, let last = list.last {
                next = FollowUpCursor(
                    red: last.color == .red, submittedMicroseconds: try rows[limit - 1].decode("submitted_us"), user: last.userId)
            }
            try await AuditLog.record(
                connection, campus: campus, actor: actor, action: "follow-ups.read", target: date.description,
                details: [
                    "date": date.description, "colors": names.joined(separator: ","), "rows": "\(list.count)",
                    "continued": cursor == nil ? "false" : "true",
                ])
            return (list, next)
        }
    }

    /// One attestation with who, for an identifiable report (no answers).
    public struct IdentifiedAttestation: Sendable, Equatable {
        public var date: LocalDate
        public var email: String
        public var name: String
        public var color: BadgeColor
        public var reason: String
        public var onTime: Bool
        public var submittedAt: Date
    }

    /// Every attestation of `range` with who (by date, then email), handed to `page` a page
    /// of at most `pageSize` rows at a time as they are read, so memory stays one page whatever
    /// the range. Returns how many rows were handed over.
    ///
    /// The read is audited first, in a transaction of its own committed before any row is
    /// read, so an export that fails or is interrupted half-way is on record too; the entry's
    /// `rows` is the count when the export began. The rows come from one cursor, so they are
    /// one snapshot of the range.
    public func exportIdentified(
        campus: CampusID, range: DateRange, actor: String, pageSize: Int = 5_000,
        page: ([IdentifiedAttestation]) async throws -> Void
    ) async throws -> Int {
        precondition(pageSize > 0)
        let scope: SQL = "a.campus_id = \(campus) AND a.local_date BETWEEN \(range.from) AND \(range.to)"
        try await client.withTransaction(campus: campus.rawValue) { connection in
            let count =
                try await connection.query("SELECT count(*) AS n FROM attestations a WHERE \(scope)").first?.decode("n", as: Int.self) ?? 0
            try await AuditLog.record(
                connection, campus: campus, actor: actor, action: "report.identifiable",
                target: "\(range.from)..\(range.to)",
                details: ["from": range.from.description, "to": range.to.description, "rows": "\(count)"])
        }
        return try await client.withTransaction(campus: campus.rawValue) { connection in
            try await connection.query(
                """
                DECLARE identified NO SCROLL CURSOR FOR
                SELECT a.local_date, u.email, u.display_name, a.color, a.reason, a.on_time, a.submitted_at
                FROM attestations a JOIN users u ON u.campus_id = a.campus_id AND u.id = a.user_id
                WHERE \(scope)
                ORDER BY a.local_date, u.email
                """)
            var total = 0
            while true {
                let rows = try await connection.query("FETCH \(unsafeRaw: String(pageSize)) FROM identified")
                let list = try rows.map { row in
                    IdentifiedAttestation(
                        date: try row.decode("local_date"), email: try row.decode("email"), name: try row.decode("display_name"),
                        color: BadgeColor(rawValue: try row.decode("color", as: String.self)) ?? .yellow, reason: try row.decode("reason"),
                        onTime: try row.decode("on_time"), submittedAt: try row.decode("submitted_at"))
                }
                if !list.isEmpty { try await page(list) }
                total += list.count
                if list.count < pageSize { return total }
            }
        }
    }
}

extension StatisticsStore.FollowUpCursor {
    /// Nil for anything `description` does not give.
    public init?(_ text: String) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == "r" || parts[0] == "y", parts[1].count <= 18,
            parts[1].utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
            let micros = Int64(parts[1]), micros <= Self.latestMicroseconds, let id = UUID(uuidString: String(parts[2]))
        else { return nil }
        self.init(red: parts[0] == "r", submittedMicroseconds: micros, user: UserID(id))
    }
}

/// The aggregate report of a date range as CSV (`attest report`, the dashboard's download):
/// one row per campus-local day (active members, submitted, on time, late, missing, each
/// colour, compliance), then one column per answer counted (`question:answer`). Counts
/// only: no member appears in it.
public enum AggregateReport {
    public static func csv(_ days: [DayFigures]) -> String {
        let answerColumns = Set(days.flatMap { day in day.answers.flatMap { question, counts in counts.keys.map { "\(question):\($0)" } } })
            .sorted()
        func count(_ day: DayFigures, _ column: String) -> Int {
            guard let colon = column.firstIndex(of: ":") else { return 0 }
            return day.answers[String(column[..<colon])]?[String(column[column.index(after: colon)...])] ?? 0
        }
        var lines = [
            (["date", "active_members", "submitted", "on_time", "late", "missing", "green", "yellow", "red", "compliance_rate"]
                + answerColumns).map(CSV.escape).joined(separator: ",")
        ]
        for day in days {
            let fields =
                [
                    day.date.description, "\(day.active)", "\(day.submitted)", "\(day.onTime)", "\(day.late)", "\(day.missing)",
                    "\(day.green)", "\(day.yellow)", "\(day.red)", day.complianceRate.map { String(format: "%.4f", $0) } ?? "",
                ] + answerColumns.map { "\(count(day, $0))" }
            lines.append(fields.map(CSV.escape).joined(separator: ","))
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
