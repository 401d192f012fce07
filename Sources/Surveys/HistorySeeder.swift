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
public struct HistorySeeder: Sendable {
    public struct Outcome: Sendable {
        public var members: Int
        public var attestations: Int
        public var from: LocalDate
        public var to: LocalDate
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
        let idPrefix = UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(12)
        let domain = campus.emailDomains.first ?? "seed.example.edu"
        let symptoms = questionnaire.questions.filter { $0.kind == .boolean && $0.symptom }.map(\.id)
        let base = try PostgresJSON(encoding: Self.baseAnswers(questionnaire))
        let zone = campus.timeZone, deadline = campus.deadlineMinute
        // Members, created at the start of the first day (the trigger counts them active then).
        try await client.query(
            """
            INSERT INTO users (campus_id, id, email, display_name, created_at)
            SELECT \(id), gen_random_uuid(), format('seed-%s-%s@%s', \(tag)::text, n, \(domain)::text),
                   format('Seed Member %s', n), (\(first)::date)::timestamp AT TIME ZONE \(zone)
            FROM generate_series(1, \(members)) AS n
            """, campus: id.rawValue)
        // A role that may (a superuser) skips the per-row foreign-key checks of the rows the
        // seed generates, as pg_restore does: their references hold by construction (members
        // joined from users, the active survey version). Others get the checks.
        let trusted = try await client.query("SELECT current_setting('is_superuser') = 'on' AS trusted")
            .first?.decode("trusted", as: Bool.self) ?? false
        let slices = stride(from: 1, through: members, by: slice).map { ($0, min($0 + slice - 1, members)) }
        let attestations = try await withThrowingTaskGroup(of: Int.self) { group in
            var pending = slices.enumerated().makeIterator()
            func start(_ next: (offset: Int, element: (Int, Int))) {
                let (low, high) = next.element
                let shard = Int16(truncatingIfNeeded: 100 + next.offset % 10_000)
                group.addTask {
                    try await client.withTransaction(campus: id.rawValue) { connection in
                        // The slice's sorts and materialised rows fit in memory rather than spill.
                        try await connection.query("SET LOCAL work_mem = '256MB'")
                        if trusted { try await connection.query("SET LOCAL session_replication_role = replica") }
                        return try await connection.query(
                            Self.sliceStatement(
                                campus: id, tag: tag, domain: domain, low: low, high: high, first: first, last: last,
                                keepFrom: keepFrom, zone: zone, deadline: deadline, version: questionnaire.version,
                                symptoms: symptoms, base: base, idPrefix: String(idPrefix), shard: shard)
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
        return Outcome(members: members, attestations: attestations, from: first, to: last)
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

    /// One slice of members: their attestations and the rollups they add (in the slice's own
    /// shard rows), in one statement.
    static func sliceStatement(
        campus: CampusID, tag: String, domain: String, low: Int, high: Int, first: LocalDate, last: LocalDate,
        keepFrom: LocalDate, zone: String, deadline: Int, version: Int, symptoms: [String], base: PostgresJSON,
        idPrefix: String, shard: Int16
    ) -> SQL {
        let symptomCount = symptoms.count
        return """
            WITH members AS MATERIALIZED (
                SELECT n, u.id FROM generate_series(\(low), \(high)) AS n
                JOIN users u ON u.campus_id = \(campus) AND u.email = format('seed-%s-%s@%s', \(tag)::text, n, \(domain)::text)
            ), days AS MATERIALIZED (
                SELECT d::date AS local_date, row_number() OVER (ORDER BY d) AS k
                FROM generate_series(\(first)::date, \(last)::date, interval '1 day') AS d
            ), drawn AS MATERIALIZED (
                SELECT m.n, m.id AS user_id, d.local_date, d.k, random() AS attend, random() < 0.9 AS on_time,
                       random() AS badge, floor(random() * greatest(\(symptomCount), 1))::int + 1 AS symptom,
                       random() AS minute
                FROM members m CROSS JOIN days d
            ), rows AS MATERIALIZED (
                SELECT n, user_id, local_date, k, on_time,
                       CASE WHEN badge < 0.03 THEN 'red' WHEN badge < 0.15 THEN 'yellow' ELSE 'green' END AS color,
                       CASE WHEN badge < 0.15 AND \(symptomCount) > 0 THEN (\(symptoms))[symptom] END AS symptom,
                       CASE WHEN on_time THEN 300 + minute * greatest(\(deadline) - 301, 0)
                            ELSE \(deadline) + minute * (1439 - \(deadline)) END AS minute
                FROM drawn WHERE attend < 0.92
            ), inserted AS (
                INSERT INTO attestations (campus_id, id, user_id, local_date, submitted_at, on_time, survey_version, answers,
                                          color, reason, valid_until, rule_id, rule_version, answers_purged_at)
                SELECT \(campus), (\(idPrefix) || lpad(to_hex(n::bigint * 100000 + k), 20, '0'))::uuid, user_id, local_date,
                       (local_date + make_interval(secs => minute * 60))::timestamp AT TIME ZONE \(zone), on_time, \(version),
                       CASE WHEN local_date >= \(keepFrom)
                            THEN \(base)::jsonb || CASE WHEN symptom IS NULL THEN '{}'::jsonb ELSE jsonb_build_object(symptom, true) END
                       END,
                       color, CASE color WHEN 'green' THEN 'No symptoms reported' ELSE 'Seeded: ' || coalesce(symptom, 'unwell') END,
                       (local_date + 1)::timestamp AT TIME ZONE \(zone), 'seed', '1',
                       CASE WHEN local_date < \(keepFrom) THEN now() END
                FROM rows ORDER BY n, k
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
