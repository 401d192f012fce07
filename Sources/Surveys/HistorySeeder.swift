import AttestPlugins
import AttestPostgres
import Foundation
import Tenancy

/// Made-up history for trying things out and for benchmarks (`attest dev seed`): members and
/// a past of daily attestations with their rollups, written by PostgreSQL itself
/// (`generate_series`), a slice of members per statement on concurrent connections.
///
/// Each member attests on about 92% of days, 90% of those on time; badges are about 85%
/// green, 12% yellow (one symptom) and 3% red (one symptom), decided by the seed (rule
/// `seed`), not by the campus's rule. Answers are stored only within the campus's retention,
/// as if the purge had run; the rollups count every day.
///
/// What makes it fast is the order the rows reach the indexes. The seeded members' ids are a
/// per-run prefix and a counter, and each statement generates a slice member by member, day
/// by day, so the key of `attestations` (campus, member, day) grows at one edge instead of at
/// random places: few pages are touched and written, and no sort is needed. The two date
/// indexes are partial and take few of these rows (red and yellow ones; answered ones, only
/// within retention). Per-day values (the next midnight, the UTC offset) are computed once
/// per day, not per row.
public struct HistorySeeder: Sendable {
    public struct Outcome: Sendable {
        public var members: Int
        public var attestations: Int
        public var from: LocalDate
        public var to: LocalDate
        /// False when the rows skipped the per-row foreign-key checks (a superuser's seed).
        public var checkedReferences: Bool
    }

    let client: PostgresClient
    /// Members per statement; statements run on up to `concurrency` connections at once.
    let slice: Int
    let concurrency: Int

    public init(client: PostgresClient, slice: Int = 2_500, concurrency: Int = 2) {
        self.client = client
        self.slice = slice
        self.concurrency = concurrency
    }

    /// Adds `members` members created `days` days ago and their attestations for each of
    /// the `days` days before today (campus-local).
    public func seed(campus: Campus, questionnaire: Questionnaire, members: Int, days: Int, now: Date = Date()) async throws -> Outcome {
        precondition(members > 0 && days > 0)
        let id = campus.id
        let today = campus.localDate(at: now)
        let first = today.adding(days: -days), last = today.adding(days: -1)
        let keepFrom = RetentionPurger.cutoff(campus: campus, now: now)
        let tag = String(UUID().uuidString.lowercased().prefix(8))
        // Ids are a random per-run prefix (48 bits) and a counter: unique, and in index order.
        func prefix() -> String { String(UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(12)) }
        let userPrefix = prefix(), idPrefix = prefix()
        let domain = campus.emailDomains.first ?? "seed.example.edu"
        let symptoms = questionnaire.questions.filter { $0.kind == .boolean && $0.symptom }.map(\.id)
        let base = try PostgresJSON(encoding: Self.baseAnswers(questionnaire))
        let zone = campus.timeZone, deadline = campus.deadlineMinute
        // Members, created at the start of the first day (the trigger counts them active then).
        try await client.query(
            """
            INSERT INTO users (campus_id, id, email, display_name, created_at)
            SELECT \(id), \(Self.counterID(prefix: userPrefix, "n")), format('seed-%s-%s@%s', \(tag)::text, n, \(domain)::text),
                   format('Seed Member %s', n), (\(first)::date)::timestamp AT TIME ZONE \(zone)
            FROM generate_series(1, \(members)) AS n
            """, campus: id.rawValue)
        // Connected as a superuser (the dev cluster's), the slices skip the per-row
        // foreign-key checks of the rows they generate, as pg_restore does: their references
        // hold by construction (the members just made, the active survey version). The
        // connections work as the application role (`SET ROLE`), which may not, so each slice
        // transaction returns to the connecting role first. Others get the checks.
        let trusted = try await client.query("SELECT rolsuper AS trusted FROM pg_roles WHERE rolname = session_user")
            .first?.decode("trusted", as: Bool.self) ?? false
        let slices = stride(from: 1, through: members, by: slice).map { ($0, min($0 + slice - 1, members)) }
        let attestations = try await withThrowingTaskGroup(of: Int.self) { group in
            var pending = slices.enumerated().makeIterator()
            func start(_ next: (offset: Int, element: (Int, Int))) {
                let (low, high) = next.element
                let shard = Int16(truncatingIfNeeded: 100 + next.offset % 10_000)
                group.addTask {
                    try await client.withTransaction(campus: id.rawValue) { connection in
                        // The slice's materialised rows and its rollup aggregates fit in memory rather than spill.
                        try await connection.query("SET LOCAL work_mem = '256MB'")
                        if trusted {
                            try await connection.query("SET LOCAL ROLE NONE")
                            try await connection.query("SET LOCAL session_replication_role = replica")
                        }
                        return try await connection.query(
                            Self.sliceStatement(
                                campus: id, low: low, high: high, first: first, days: days, keepFrom: keepFrom, zone: zone,
                                deadline: deadline, version: questionnaire.version, symptoms: symptoms, base: base,
                                userPrefix: userPrefix, idPrefix: idPrefix, shard: shard)
                        ).first?.decode("n", as: Int.self) ?? 0
                    }
                }
            }
            for _ in 0..<concurrency { if let next = pending.next() { start(next) } }
            var total = 0
            while let count = try await group.next() {
                total += count
                if let next = pending.next() { start(next) }
            }
            return total
        }
        // One rollup row per day (and answer) instead of one per slice.
        try await StatisticsStore(client: client).compact(campus: id, before: today)
        try await client.query(
            """
            INSERT INTO purge_state AS p (campus_id, purged_before) VALUES (\(id), \(keepFrom))
            ON CONFLICT (campus_id) DO UPDATE SET purged_before = greatest(p.purged_before, EXCLUDED.purged_before)
            """, campus: id.rawValue)
        return Outcome(members: members, attestations: attestations, from: first, to: last, checkedReferences: !trusted)
    }

    /// Answers with every boolean no, and a plain value for other required questions.
    static func baseAnswers(_ questionnaire: Questionnaire) -> [String: AnswerValue] {
        var answers: [String: AnswerValue] = [:]
        for question in questionnaire.questions {
            switch question.kind {
            case .boolean: answers[question.id] = .bool(false)
            case .choice where question.required: if let option = question.options?.first { answers[question.id] = .text(option) }
            case .number where question.required: answers[question.id] = .number(question.min ?? 0)
            case .text where question.required: answers[question.id] = .text("")
            default: break
            }
        }
        return answers
    }

    /// A uuid made of `prefix` (12 hex digits) and the integer expression `counter`,
    /// zero-padded: ids of one prefix sort as their counters do.
    static func counterID(prefix: String, _ counter: SQL) -> SQL {
        "(\(prefix)::text || lpad(to_hex(\(counter)), 20, '0'))::uuid"
    }

    /// One slice of members (`low...high`): their attestations and the rollups they add (in
    /// the slice's own shard rows), in one statement.
    ///
    /// Rows are generated in index order, member by member and day by day, from one series:
    /// row `i` is member `low + i / days` on day `first + i % days`. The members' ids and the
    /// days' values are looked up in arrays computed once (`slice`). A submission's instant
    /// is the day's midnight (at the offset of its noon) plus its minute; on a day whose UTC
    /// offset changes (daylight saving) it is converted exactly instead, and a minute in the
    /// hour the clock skips, which is an hour later in fact, is on time only if still before
    /// the deadline.
    static func sliceStatement(
        campus: CampusID, low: Int, high: Int, first: LocalDate, days: Int, keepFrom: LocalDate, zone: String,
        deadline: Int, version: Int, symptoms: [String], base: PostgresJSON, userPrefix: String, idPrefix: String, shard: Int16
    ) -> SQL {
        let symptomCount = symptoms.count
        // On time: within the five hours before the deadline; late: from it to 23:59.
        let onTimeSpan = min(deadline, 300)
        return """
            WITH slice AS MATERIALIZED (
                SELECT (SELECT array_agg(\(counterID(prefix: userPrefix, "n")) ORDER BY n)
                        FROM generate_series(\(low)::bigint, \(high)::bigint) AS n) AS users,
                       array_agg(((d + time '12:00') AT TIME ZONE \(zone)) - interval '12 hours' ORDER BY d) AS midnights,
                       array_agg(((d + time '00:00') AT TIME ZONE \(zone)) + interval '12 hours'
                                 <> (d + time '12:00') AT TIME ZONE \(zone)
                                 OR ((d + 1)::timestamp AT TIME ZONE \(zone)) - interval '12 hours'
                                 <> (d + time '12:00') AT TIME ZONE \(zone) ORDER BY d) AS shifts,
                       array_agg((d + 1)::timestamp AT TIME ZONE \(zone) ORDER BY d) AS ends
                FROM (SELECT \(first)::date + j AS d FROM generate_series(0, \(days)::int - 1) AS j) AS day
            ), drawn AS (
                SELECT (i / \(days))::int AS m, (i % \(days))::int AS k, random() AS attend,
                       random() < 0.9 AND \(deadline) > 0 AS on_time, random() AS badge,
                       floor(random() * greatest(\(symptomCount), 1))::int + 1 AS symptom, random() AS minute
                FROM generate_series(0::bigint, (\(high) - \(low) + 1)::bigint * \(days) - 1) AS i
            ), rows AS MATERIALIZED (
                -- A minute in the hour a clock skips is later in fact: on time only if still before the deadline.
                SELECT m, k, local_date, color, symptom, at,
                       on_time AND (NOT shifted OR (at AT TIME ZONE \(zone))::time < time '00:00' + \(deadline) * interval '1 minute') AS on_time
                FROM (
                    SELECT m, k, \(first)::date + k AS local_date, on_time,
                           CASE WHEN badge < 0.03 THEN 'red' WHEN badge < 0.15 THEN 'yellow' ELSE 'green' END AS color,
                           CASE WHEN badge < 0.15 AND \(symptomCount) > 0 THEN (\(symptoms))[symptom] END AS symptom,
                           s.shifts[k + 1] AS shifted,
                           CASE WHEN s.shifts[k + 1] THEN (\(first)::date + k + minute * interval '1 minute') AT TIME ZONE \(zone)
                                ELSE s.midnights[k + 1] + minute * interval '1 minute' END AS at
                    FROM (
                        SELECT m, k, on_time, badge, symptom,
                               floor(CASE WHEN on_time THEN \(deadline) - 1 - minute * \(onTimeSpan - 1)
                                          ELSE \(deadline) + minute * (1439 - \(deadline)) END)::int AS minute
                        FROM drawn WHERE attend < 0.92
                    ) AS attended, slice s
                ) AS placed
            ), inserted AS (
                INSERT INTO attestations (campus_id, id, user_id, local_date, submitted_at, on_time, survey_version, answers,
                                          color, reason, valid_until, rule_id, rule_version, answers_purged_at)
                SELECT \(campus), \(counterID(prefix: idPrefix, "(\(low)::bigint + m) * 100000 + k")), s.users[m + 1], local_date,
                       at, on_time, \(version),
                       CASE WHEN local_date >= \(keepFrom)
                            THEN \(base)::jsonb || CASE WHEN symptom IS NULL THEN '{}'::jsonb ELSE jsonb_build_object(symptom, true) END
                       END,
                       color, CASE color WHEN 'green' THEN 'No symptoms reported' ELSE 'Seeded: ' || coalesce(symptom, 'unwell') END,
                       s.ends[k + 1], 'seed', '1',
                       CASE WHEN local_date < \(keepFrom) THEN now() END
                FROM rows, slice s
                RETURNING 1
            ), stats AS (
                INSERT INTO daily_stats AS s (campus_id, local_date, shard, submitted, on_time, late, green, yellow, red)
                SELECT \(campus), local_date, \(shard), count(*), count(*) FILTER (WHERE on_time), count(*) FILTER (WHERE NOT on_time),
                       count(*) FILTER (WHERE color = 'green'), count(*) FILTER (WHERE color = 'yellow'),
                       count(*) FILTER (WHERE color = 'red')
                FROM rows GROUP BY local_date
                \(Rollups.addToStats)
            ), counted AS (
                INSERT INTO daily_answer_counts AS c (campus_id, local_date, question_id, answer, shard, count)
                SELECT \(campus), local_date, symptom, 'true', \(shard), count(*)
                FROM rows WHERE symptom IS NOT NULL GROUP BY local_date, symptom
                \(Rollups.addToAnswerCounts)
            )
            SELECT count(*) AS n FROM inserted
            """
    }
}
