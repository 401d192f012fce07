import AttestPlugins
import AttestPostgres
import Foundation
import Identity
import Surveys
import Tenancy

/// Made-up history for trying things out and for benchmarks (`attest dev seed`): members and
/// a past of daily attestations with their rollups.
///
/// It lives with the CLI's dev tooling, not in a core module, because it writes several
/// modules' tables at once (Identity's `users`, Surveys' `attestations` and rollups) in bulk:
/// it makes test data, no use case of the product, so it may bypass the stores that own
/// those tables, and does so only through `COPY` and set-based inserts of the same rows they
/// would write. The attestations are made here and sent
/// with binary `COPY`, a slice of members per transaction on concurrent connections.
///
/// Each member attests on about 92% of days, 90% of those on time; badges are about 85%
/// green, 12% yellow (one symptom) and 3% red (one symptom), decided by the seed (rule
/// `seed`), not by the campus's rule. Answers are stored only within the campus's retention,
/// as if the purge had run; the rollups count every day.
///
/// What makes it fast:
/// - `COPY` stores rows a page at a time (one WAL record per page of the table, not one per
///   row), and the server parses nothing: every value is already in its binary form.
/// - Rows reach the indexes in order. The seeded members' ids are a per-run prefix and a
///   counter, and each slice is written member by member, day by day, so the key of
///   `attestations` (campus, member, day) grows at one edge instead of at random places.
/// - Every value that is the same for many rows (a day's instants, the campus and survey,
///   each colour's reason, each answer set) is encoded once, and a row copies its bytes.
/// - The rollups are counted here while the rows are made, and added once per slice.
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
    /// Members per transaction; transactions run on up to `concurrency` connections at once.
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
        let tag = String(UUID().lowercasedText.prefix(8))
        // Ids are a random per-run prefix (48 bits) and a counter: unique, and in index order.
        let userPrefix = UInt64.random(in: 0..<(1 << 48)), idPrefix = UInt64.random(in: 0..<(1 << 48))
        let plan = try SeedPlan(
            campus: campus, questionnaire: questionnaire, first: first, days: days, keepFrom: keepFrom, now: now, idPrefix: idPrefix)
        let domain = campus.emailDomains.first ?? "seed.example.edu"
        let trusted = try await preflight()
        // Members, created at the start of the first day (and counted active from then), each
        // with the member role alone (the column's default), as a member who signs in gets.
        try await client.query(
            """
            WITH added AS (
                INSERT INTO users (campus_id, id, email, display_name, created_at)
                SELECT \(id), \(Self.counterID(prefix: userPrefix, "n")), format('seed-%s-%s@%s', \(tag)::text, n, \(domain)::text),
                       format('Seed Member %s', n), \(first.start(in: campus.zone))
                FROM generate_series(1, \(members)) AS n
                RETURNING campus_id, id, created_at, active
            ), \(UserStore.countAddedMembers(campus: id))
            SELECT 1
            """, campus: id.rawValue)
        let slices = stride(from: 1, through: members, by: slice).map { $0...min($0 + slice - 1, members) }
        let attestations = try await withThrowingTaskGroup(of: Int.self) { group in
            var pending = slices.enumerated().makeIterator()
            func start(_ next: (offset: Int, element: ClosedRange<Int>)) {
                let shard = Int16(truncatingIfNeeded: 100 + next.offset % 10_000)
                let rows = SeedRows(plan: plan, userPrefix: userPrefix, members: next.element)
                group.addTask {
                    try await client.withTransaction(campus: id.rawValue) { connection in
                        let stored: Int
                        if trusted {
                            try await connection.query("SET LOCAL ROLE NONE")
                            try await connection.query("SET LOCAL session_replication_role = replica")
                            stored = try await connection.copy(into: "attestations", columns: SeedPlan.columns) { rows.write(into: &$0) }
                        } else {
                            try await connection.query("CREATE TEMPORARY TABLE attest_seed_rows (LIKE attestations) ON COMMIT DROP")
                            _ = try await connection.copy(into: "attest_seed_rows", columns: SeedPlan.columns) { rows.write(into: &$0) }
                            stored = try await connection.query("INSERT INTO attestations SELECT * FROM attest_seed_rows").affectedRows
                        }
                        for statement in rows.rollups(campus: id, first: first, shard: shard) { try await connection.query(statement) }
                        return stored
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

    /// Whether the seed may skip the per-row foreign-key checks; throws a `CLIError` when it
    /// cannot run at all. Call it before storing anything else for the seed (`seed` asks too).
    ///
    /// Connected as a superuser (the dev cluster's), the slices skip the per-row foreign-key
    /// checks of the rows they make, as pg_restore does: their references hold by
    /// construction (the members just made, the active survey version). The connections work
    /// as the application role (`SET ROLE`), which may not, so each slice transaction returns
    /// to the connecting role first. Others get the checks, and since the server refuses
    /// `COPY` where row-level security applies, their rows go through a temporary table,
    /// which that role must be allowed.
    public func preflight() async throws -> Bool {
        let access = try await client.query(
            """
            SELECT (SELECT rolsuper FROM pg_roles WHERE rolname = session_user) AS trusted, current_user AS role,
                   current_database() AS database, has_database_privilege(current_database(), 'TEMPORARY') AS temporary
            """)[0]
        let trusted = try access.decode("trusted", as: Bool?.self) ?? false
        if !trusted, try !access.decode("temporary", as: Bool.self) {
            let role: String = try access.decode("role"), database: String = try access.decode("database")
            throw CLIError(
                "role \"\(role)\" may not create temporary tables in database \"\(database)\", which a seed needs when it is not "
                    + "connected as a superuser; nothing was stored. Grant it as the database's owner "
                    + "(GRANT TEMPORARY ON DATABASE \"\(database)\" TO \"\(role)\"), or seed as a superuser (as on the dev cluster).")
        }
        return trusted
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

    /// The uuid `SeedRows.uuid(prefix:counter)` makes, in SQL: `prefix` (48 bits, as 12 hex
    /// digits) and the integer expression `counter` zero-padded to 20 hex digits, so ids of one
    /// prefix sort as their counters do.
    static func counterID(prefix: UInt64, _ counter: SQL) -> SQL {
        let hex = String(prefix, radix: 16)
        return "(\(String(repeating: "0", count: 12 - hex.count) + hex)::text || lpad(to_hex(\(counter)), 20, '0'))::uuid"
    }
}
