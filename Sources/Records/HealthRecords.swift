import AttestPlugins
import AttestPostgres
import Foundation
import Identity
import Tenancy

/// Test results, isolations and quarantines, and each member's status recomputed from them
/// (DESIGN §11). Every change recomputes the status of each member it touches in its own
/// transaction, keeps it (`member_health`) and, when any status changed,
/// moves the campus's sign-in generation on, so that no server keeps serving a badge made
/// before the change (this one drops its kept badges at once, the others within a second).
public struct HealthRecords: Sendable {
    let client: PostgresClient
    let generations: AuthGenerations?
    /// Seals and opens exemptions' notes; without it they cannot be written or read.
    let kek: KeyEncryptionKey?

    public init(client: PostgresClient, generations: AuthGenerations? = nil, kek: KeyEncryptionKey? = nil) {
        (self.client, self.generations, self.kek) = (client, generations, kek)
    }

    /// What a delivery of results did.
    public struct Receipt: Sendable, Equatable, Codable {
        /// Results in the delivery (a specimen given twice counts once: its later result).
        public var received: Int
        /// Of those, the ones matched to a member.
        public var matched: Int
        /// The ones waiting for a health officer: no member has their subject's email.
        public var unmatched: Int
        /// The ones that replaced a different earlier result for the same specimen.
        public var corrected: Int
        /// The members whose status changed.
        public var statusesChanged: Int
    }

    /// Stores `results` at `campus` from `source` (`lab:<name>` or `import`), all or none:
    /// each matched to the member with its subject's email, a known specimen's earlier result
    /// replaced (audited as a correction when it differs), and every touched member's status
    /// recomputed.
    public func receive(campus: Campus, results incoming: [LabResult], source: String, actor: String) async throws -> Receipt {
        // One result per specimen: the one resulted last (the later in the delivery on a tie).
        var bySpecimen: [String: LabResult] = [:]
        bySpecimen.reserveCapacity(incoming.count)
        for result in incoming {
            if let earlier = bySpecimen[result.specimenID], earlier.resultedAt > result.resultedAt { continue }
            bySpecimen[result.specimenID] = result
        }
        // In specimen order: two deliveries naming the same specimens take their rows in one order.
        let results = bySpecimen.values.sorted { $0.specimenID < $1.specimenID }
        guard !results.isEmpty else { return Receipt(received: 0, matched: 0, unmatched: 0, corrected: 0, statusesChanged: 0) }
        let policy = RecordsPolicy(campus: campus)
        // A new result's id: time-ordered in specimen order, so that the rows reach both of the
        // table's unique indexes in their order (rightmost pages, not random ones; a third of
        // the import's time with random ids).
        let ids = UUID.timeOrdered(at: Date(), count: results.count)
        let (receipt, changed) = try await changingRecords(of: campus) { connection in
            let rows = try await connection.query(
                """
                WITH incoming AS (
                    SELECT * FROM unnest(\(results.map(\.specimenID)), \(results.map(\.subject)), \(results.map(\.testCode)),
                                         \(results.map(\.detected)), \(results.map(\.collectedAt)), \(results.map(\.resultedAt)), \(ids))
                         AS i(specimen_id, subject, test_code, detected, collected_at, resulted_at, id)
                ), previous AS (
                    SELECT t.specimen_id, t.user_id, t.subject, t.test_code, t.detected, t.collected_at
                    FROM test_results t
                    WHERE t.campus_id = \(campus.id) AND t.specimen_id IN (SELECT specimen_id FROM incoming)
                ), matched AS (
                    SELECT i.specimen_id, i.id, coalesce(u.id, n.id) AS user_id, i.subject, i.test_code, i.detected,
                           i.collected_at, i.resulted_at, p.specimen_id IS NOT NULL AS known
                    FROM incoming i
                    LEFT JOIN users u ON u.campus_id = \(campus.id) AND u.email = i.subject
                    -- A subject `id:…` is the member's campus id.
                    LEFT JOIN users n ON n.campus_id = \(campus.id) AND i.subject LIKE 'id:%' AND n.member_id = substr(i.subject, 4)
                    LEFT JOIN previous p USING (specimen_id)
                ), added AS (
                    -- A plain INSERT for the specimens not stored yet (no other transaction
                    -- writes results while this one holds the records lock), cheaper than an
                    -- upsert, which looks for a conflict at every row; the known ones take
                    -- that look (one probe of the key each) to find the row they replace.
                    INSERT INTO test_results (campus_id, id, specimen_id, user_id, subject, test_code, detected, collected_at,
                                              resulted_at, source)
                    SELECT \(campus.id), m.id, m.specimen_id, m.user_id, m.subject, m.test_code, m.detected,
                           m.collected_at, m.resulted_at, \(source)
                    FROM matched m WHERE NOT m.known
                    ORDER BY m.specimen_id
                    RETURNING id, specimen_id, user_id
                ), replaced AS (
                    INSERT INTO test_results AS t (campus_id, id, specimen_id, user_id, subject, test_code, detected, collected_at,
                                                   resulted_at, source)
                    SELECT \(campus.id), m.id, m.specimen_id, m.user_id, m.subject, m.test_code, m.detected,
                           m.collected_at, m.resulted_at, \(source)
                    FROM matched m WHERE m.known
                    ORDER BY m.specimen_id
                    ON CONFLICT (campus_id, specimen_id) DO UPDATE SET
                        -- A result matched by hand stays with its member while its subject is the same.
                        user_id = CASE WHEN EXCLUDED.user_id IS NOT NULL THEN EXCLUDED.user_id
                                       WHEN EXCLUDED.subject = t.subject THEN t.user_id END,
                        subject = EXCLUDED.subject, test_code = EXCLUDED.test_code, detected = EXCLUDED.detected,
                        collected_at = EXCLUDED.collected_at, resulted_at = EXCLUDED.resulted_at, source = EXCLUDED.source,
                        received_at = now(), dismissed_at = NULL
                    RETURNING t.id, t.specimen_id, t.user_id
                ), stored AS (
                    SELECT * FROM added UNION ALL SELECT * FROM replaced
                ), outcome AS (
                    SELECT s.id, s.specimen_id, s.user_id, p.user_id AS previous_user,
                           p.specimen_id IS NOT NULL AND (p.subject, p.test_code, p.detected, p.collected_at)
                               IS DISTINCT FROM (i.subject, i.test_code, i.detected, i.collected_at) AS corrected,
                           p.detected AS previous_detected, i.detected
                    FROM stored s JOIN incoming i USING (specimen_id) LEFT JOIN previous p USING (specimen_id)
                )
                -- The counts and the members touched in one row, then a row for each correction:
                -- not a row for every result, read back and decoded to be counted.
                SELECT (SELECT count(*) FROM outcome) AS received, (SELECT count(user_id) FROM outcome) AS matched,
                       ARRAY(SELECT user_id FROM outcome WHERE user_id IS NOT NULL
                             UNION SELECT previous_user FROM outcome WHERE previous_user IS NOT NULL ORDER BY 1) AS touched,
                       NULL::uuid AS id, NULL::text AS specimen_id, NULL::bool AS previous_detected, NULL::bool AS detected
                UNION ALL
                SELECT NULL, NULL, NULL, id, specimen_id, previous_detected, detected FROM outcome WHERE corrected
                """)
            var received = 0, matched = 0, corrected = 0
            var touched: [UUID] = []
            for row in rows {
                if let count = try row.decode("received", as: Int?.self) {
                    (received, matched) = (count, try row.decode("matched"))
                    touched = try row.decode("touched")
                    continue
                }
                corrected += 1
                let before = try row.decode("previous_detected", as: Bool?.self), after = try row.decode("detected", as: Bool.self)
                try await AuditLog.record(
                    connection, campus: campus.id, actor: actor, action: "result.correct",
                    target: "specimen:\(try row.decode("specimen_id", as: String.self))",
                    details: [
                        "result": try row.decode("id", as: UUID.self).lowercasedText, "source": source,
                        "was": before.map(Self.words) ?? "", "now": Self.words(after),
                    ])
            }
            try await AuditLog.record(
                connection, campus: campus.id, actor: actor, action: "results.receive", target: source,
                details: [
                    "received": "\(received)", "matched": "\(matched)", "unmatched": "\(received - matched)",
                    "corrected": "\(corrected)",
                ])
            let changed = try await Self.recompute(connection, campus: campus, users: touched, policy: policy)
            return (
                Receipt(
                    received: received, matched: matched, unmatched: received - matched, corrected: corrected,
                    statusesChanged: changed),
                changed
            )
        }
        if changed > 0 { generations?.advance(campus.id) }
        return receipt
    }

    static func words(_ detected: Bool) -> String { detected ? "detected" : "not detected" }

    /// Deletes every test result of `campus` inside `connection`'s transaction: before the
    /// campus itself is erased, since a result that matched no member refers to no row that
    /// would take it along. Returns how many.
    public static func forgetResults(_ connection: PostgresConnection, campus: CampusID) async throws -> Int {
        try await connection.query("DELETE FROM test_results WHERE campus_id = \(campus)").affectedRows
    }

    /// A transaction that changes a campus's records and recomputes statuses: it first takes
    /// the campus's records lock (a transaction-level advisory lock), so that two changes for
    /// one member never recompute from two snapshots that each miss the other's rows (under
    /// READ COMMITTED, the second recomputes after the first committed and sees it all).
    /// Changes in this process wait for the campus's turn before they take a connection.
    func changingRecords<Result: Sendable>(
        of campus: Campus, _ body: (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        try await Self.turns.inTurn(of: campus.id) {
            try await changingRecordsInTurn(of: campus, body)
        }
    }

    /// Every records change of this process, a campus at a time.
    static let turns = Turns<CampusID>()

    private func changingRecordsInTurn<Result: Sendable>(
        of campus: Campus, _ body: (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        try await client.withTransaction(campus: campus.id.rawValue) { connection in
            // No JIT: a delivery of 100,000 results is estimated dear enough to be compiled, which
            // took 0.7 s of the 3.4 s its statement ran. A delivery's hash (its subjects, for the
            // match) in memory, not in batches on disk.
            try await connection.query(
                """
                SELECT set_config('jit', 'off', true), set_config('work_mem', '32MB', true), \(Self.lock(campus: campus.id))
                """)
            return try await body(connection)
        }
    }

    /// The advisory locks' first key: "rec" (records); the second is the campus's hash
    /// (`hashtext` of its id).
    static let lockClass: Int32 = 0x72_6563

    /// The call that takes `campus`'s records lock until its transaction ends (a SELECT's
    /// expression). Public for a process that must hold a campus's records still.
    public static func lock(campus: CampusID) -> SQL {
        "pg_advisory_xact_lock(\(lockClass), hashtext(\(campus.rawValue.lowercasedText)))"
    }

    /// Recomputes the status of `users` at `campus` from their whole record, inside the
    /// caller's transaction; writes the ones that changed and, when any did, moves the
    /// campus's sign-in generation on. Returns how many changed.
    /// `slice` members' records are read at a time, so that a delivery or a policy change
    /// that touches a whole campus holds no more than a slice's records in memory. Give
    /// `users` in their order: each slice's statuses then reach one stretch of the index.
    static func recompute(
        _ connection: PostgresConnection, campus: Campus, users: [UUID], policy: RecordsPolicy, slice: Int = recomputeSlice
    ) async throws -> Int {
        var changed = 0
        for start in stride(from: 0, to: users.count, by: max(slice, 1)) {
            changed += try await recomputeOnce(
                connection, campus: campus, users: Array(users[start..<min(start + max(slice, 1), users.count)]), policy: policy)
        }
        if changed > 0 { try await AuthGenerations.bump(connection, campus: campus.id) }
        return changed
    }

    /// The most members whose records one read of `recompute` takes by default.
    public static let recomputeSlice = 10_000

    /// `recompute` for one slice of members; the caller moves the generation on.
    private static func recomputeOnce(
        _ connection: PostgresConnection, campus: Campus, users: [UUID], policy: RecordsPolicy
    ) async throws -> Int {
        guard !users.isEmpty else { return 0 }
        let rows = try await connection.query(
            """
            SELECT 'r' AS kind, t.user_id, t.specimen_id, t.test_code, t.detected, t.collected_at, t.resulted_at,
                   t.released_at IS NOT NULL AS released, NULL::text AS restriction, NULL::date AS ends_on, NULL::jsonb AS health
            FROM test_results t
            WHERE t.campus_id = \(campus.id) AND t.user_id = ANY(\(users)) AND t.dismissed_at IS NULL
            UNION ALL
            SELECT 'i', s.user_id, NULL, NULL, NULL, NULL, NULL, NULL, s.kind, s.ends_on, NULL
            FROM isolations s
            WHERE s.campus_id = \(campus.id) AND s.user_id = ANY(\(users)) AND s.released_at IS NULL
            UNION ALL
            SELECT 'e', e.user_id, NULL, NULL, NULL, NULL, NULL, NULL, e.kind, e.expires_on, NULL
            FROM exemptions e
            WHERE e.campus_id = \(campus.id) AND e.user_id = ANY(\(users)) AND e.status = 'approved'
            UNION ALL
            SELECT 'v', v.user_id, NULL, v.cvx, NULL, NULL, NULL, NULL, NULL, v.given_on, NULL
            FROM vaccinations v
            WHERE v.campus_id = \(campus.id) AND v.user_id = ANY(\(users))
            UNION ALL
            SELECT 'u', u.id, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, \(UserStore.health)
            FROM users u
            WHERE u.campus_id = \(campus.id) AND u.id = ANY(\(users))
            """)
        var results: [UUID: [HealthStatusComputation.Result]] = [:]
        var isolations: [UUID: [HealthStatusComputation.Isolation]] = [:]
        var exemptions: [UUID: [HealthStatus.Exemption]] = [:]
        var doses: [UUID: [SmartHealthCards.Dose]] = [:]
        var stored: [UUID: HealthStatus?] = [:]
        var kept = Set<UUID>()
        for row in rows {
            let user = try row.decode("user_id", as: UUID.self)
            switch try row.decode("kind", as: String.self) {
            case "r":
                results[user, default: []].append(
                    .init(
                        specimenID: try row.decode("specimen_id"), code: try row.decode("test_code"), detected: try row.decode("detected"),
                        collectedAt: try row.decode("collected_at"), resultedAt: try row.decode("resulted_at"),
                        released: try row.decode("released")))
            case "i":
                let kind = HealthStatus.RestrictionKind(rawValue: try row.decode("restriction")) ?? .isolation
                isolations[user, default: []].append(.init(kind: kind, until: try row.decode("ends_on")))
            case "e":
                let kind = HealthStatus.ExemptionKind(rawValue: try row.decode("restriction")) ?? .other
                exemptions[user, default: []].append(.init(kind: kind, expires: try row.decode("ends_on")))
            case "v":
                doses[user, default: []].append(.init(cvx: try row.decode("test_code"), date: try row.decode("ends_on")))
            default:
                // A row keeps a status (never NULL), even one this server cannot read.
                let health = try row.decode("health", as: PostgresJSON?.self)
                stored[user] = HealthStatus.stored(health)
                if health != nil { kept.insert(user) }
            }
        }
        // New rows, rows rewritten, rows deleted.
        var added: (ids: [UUID], statuses: [String]) = ([], []), rewritten: (ids: [UUID], statuses: [String]) = ([], [])
        var cleared: [UUID] = []
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        // Each distinct status encoded once: a delivery's members share a few dozen (the day a
        // test was collected, its result), and JSONEncoder was a quarter of an import's CPU.
        var encoded: [HealthStatus: String] = [:]
        for (user, before) in stored {
            let status = HealthStatusComputation.status(
                results: results[user] ?? [], isolations: isolations[user] ?? [], exemptions: exemptions[user] ?? [],
                doses: doses[user] ?? [],
                policy: policy,
                zone: campus.zone)
            guard status != before else { continue }
            if let status {
                let json: String
                if let known = encoded[status] {
                    json = known
                } else {
                    json = String(decoding: try encoder.encode(status), as: UTF8.self)
                    encoded[status] = json
                }
                if kept.contains(user) {
                    rewritten.ids.append(user)
                    rewritten.statuses.append(json)
                } else {
                    added.ids.append(user)
                    added.statuses.append(json)
                }
            } else {
                cleared.append(user)
            }
        }
        guard !added.ids.isEmpty || !rewritten.ids.isEmpty || !cleared.isEmpty else { return 0 }
        if !added.ids.isEmpty || !rewritten.ids.isEmpty {
            // A plain INSERT for the members without a row (no other transaction writes
            // statuses while this one holds the records lock): a fifth less than an upsert's
            // look for a conflict. The others' rows are found by that look (one probe of the
            // key each; an UPDATE joined to the list could read the campus's statuses for it).
            // In the key's order: the index takes the rows one page after another.
            try await connection.query(
                """
                WITH rewritten AS (
                    INSERT INTO member_health AS h (campus_id, user_id, health)
                    SELECT \(campus.id), c.id, c.health::jsonb FROM unnest(\(rewritten.ids), \(rewritten.statuses)) AS c(id, health)
                    ORDER BY c.id
                    ON CONFLICT (campus_id, user_id) DO UPDATE SET health = EXCLUDED.health
                )
                INSERT INTO member_health (campus_id, user_id, health)
                SELECT \(campus.id), c.id, c.health::jsonb FROM unnest(\(added.ids), \(added.statuses)) AS c(id, health) ORDER BY c.id
                """)
        }
        if !cleared.isEmpty {
            try await connection.query("DELETE FROM member_health WHERE campus_id = \(campus.id) AND user_id = ANY(\(cleared))")
        }
        return added.ids.count + rewritten.ids.count + cleared.count
    }

    /// Recomputes every status at `campus` whose record could have changed without a new
    /// entry: after the campus's policy or zone changed (`attest campus set` calls it then).
    /// `slice` members' records are read at a time. Returns how many changed.
    public func recomputeAll(campus: Campus, slice: Int = recomputeSlice) async throws -> Int {
        let policy = RecordsPolicy(campus: campus)
        let changed = try await changingRecords(of: campus) { connection in
            let rows = try await connection.query(
                """
                SELECT user_id FROM member_health WHERE campus_id = \(campus.id)
                UNION SELECT user_id FROM test_results WHERE campus_id = \(campus.id) AND user_id IS NOT NULL
                UNION SELECT user_id FROM isolations WHERE campus_id = \(campus.id)
                UNION SELECT user_id FROM exemptions WHERE campus_id = \(campus.id) AND status = 'approved'
                UNION SELECT user_id FROM vaccinations WHERE campus_id = \(campus.id)
                ORDER BY 1
                """)
            return try await Self.recompute(
                connection, campus: campus, users: try rows.map { try $0.decode("user_id") }, policy: policy, slice: slice)
        }
        if changed > 0 { generations?.advance(campus.id) }
        return changed
    }

    /// A result waiting for a health officer (it matched no member).
    public struct Unmatched: Sendable, Equatable {
        public var id: UUID
        /// As received, its subject the identifier nobody matched.
        public var result: LabResult
        public var receivedAt: Date
    }

    /// The results no member matched and no one dismissed, oldest first, at most `limit`;
    /// the read is audited (each names a person).
    public func unmatched(campus: Campus, actor: String, limit: Int = 500) async throws -> [Unmatched] {
        try await client.withTransaction(campus: campus.id.rawValue) { connection in
            let rows = try await connection.query(
                """
                SELECT id, specimen_id, subject, test_code, detected, collected_at, resulted_at, received_at
                FROM test_results
                WHERE campus_id = \(campus.id) AND user_id IS NULL AND dismissed_at IS NULL
                ORDER BY received_at, specimen_id LIMIT \(limit)
                """)
            try await AuditLog.record(
                connection, campus: campus.id, actor: actor, action: "results.unmatched.read", target: "",
                details: ["count": "\(rows.count)"])
            return try rows.map { row in
                Unmatched(
                    id: try row.decode("id"),
                    result: LabResult(
                        specimenID: try row.decode("specimen_id"), subject: try row.decode("subject"),
                        testCode: try row.decode("test_code"),
                        detected: try row.decode("detected"), collectedAt: try row.decode("collected_at"),
                        resultedAt: try row.decode("resulted_at")),
                    receivedAt: try row.decode("received_at"))
            }
        }
    }

    /// Gives an unmatched result to the member with `email`, audited; their status follows.
    public func match(campus: Campus, result: UUID, email: String, actor: String) async throws {
        let policy = RecordsPolicy(campus: campus)
        let changed = try await changingRecords(of: campus) { connection in
            let rows = try await connection.query(
                """
                WITH member AS (SELECT id FROM users WHERE campus_id = \(campus.id) AND email = \(email.lowercased()))
                UPDATE test_results t SET user_id = (SELECT id FROM member)
                WHERE t.campus_id = \(campus.id) AND t.id = \(result) AND t.user_id IS NULL AND t.dismissed_at IS NULL
                  AND EXISTS (SELECT 1 FROM member)
                RETURNING t.user_id, t.specimen_id
                """)
            guard let row = rows.first else {
                throw try await Self.whyNot(connection, campus: campus, result: result, email: email)
            }
            let user: UUID = try row.decode("user_id")
            try await AuditLog.record(
                connection, campus: campus.id, actor: actor, action: "result.match", target: email.lowercased(),
                details: ["result": result.lowercasedText, "specimen": try row.decode("specimen_id")])
            return try await Self.recompute(connection, campus: campus, users: [user], policy: policy)
        }
        if changed > 0 { generations?.advance(campus.id) }
    }

    /// Why `match` found nothing to change.
    static func whyNot(_ connection: PostgresConnection, campus: Campus, result: UUID, email: String) async throws -> RecordsError {
        let rows = try await connection.query(
            """
            SELECT (SELECT user_id IS NOT NULL OR dismissed_at IS NOT NULL FROM test_results
                    WHERE campus_id = \(campus.id) AND id = \(result)) AS settled,
                   EXISTS (SELECT 1 FROM users WHERE campus_id = \(campus.id) AND email = \(email.lowercased())) AS member
            """)
        let settled = try rows.first?.decode("settled", as: Bool?.self)
        guard let settled else { return .notFound("no such test result at this campus: the id is not one GET …/health/results gave") }
        if settled { return .conflict("this result is no longer waiting: it was matched or dismissed already") }
        return .noMember(email: email)
    }

    /// Sets an unmatched result aside (a member of another campus, a test sent by mistake), audited.
    public func dismiss(campus: Campus, result: UUID, actor: String) async throws {
        try await client.withTransaction(campus: campus.id.rawValue) { connection in
            let rows = try await connection.query(
                """
                UPDATE test_results SET dismissed_at = now()
                WHERE campus_id = \(campus.id) AND id = \(result) AND user_id IS NULL AND dismissed_at IS NULL
                RETURNING specimen_id
                """)
            guard let row = rows.first else {
                let exists = try await connection.query("SELECT 1 FROM test_results WHERE campus_id = \(campus.id) AND id = \(result)")
                throw exists.isEmpty
                    ? RecordsError.notFound("no such test result at this campus: the id is not one GET …/health/results gave")
                    : RecordsError.conflict("this result is no longer waiting: it was matched or dismissed already")
            }
            try await AuditLog.record(
                connection, campus: campus.id, actor: actor, action: "result.dismiss",
                target: "specimen:\(try row.decode("specimen_id") as String)",
                details: ["result": result.lowercasedText])
        }
    }

    /// Deletes the results waiting under `subject` (an erased member's email) or `memberID`
    /// (their campus id): their matched ones went with their row. Returns how many.
    public func forgetWaiting(campus: Campus, subject: String, memberID: String? = nil) async throws -> Int {
        let subjects = [subject.lowercased()] + (memberID.map { [LabResult.memberIDPrefix + $0] } ?? [])
        return try await client.query(
            "DELETE FROM test_results WHERE campus_id = \(campus.id) AND user_id IS NULL AND subject = ANY(\(subjects))",
            campus: campus.id.rawValue
        ).affectedRows
    }
}

/// An erased member's results still waiting to be matched (under their email or the campus's
/// id for them); their matched records went with their `users` row.
public struct RecordsErasure: MemberErasure {
    let records: HealthRecords

    public init(records: HealthRecords) { self.records = records }

    public func forget(_ member: ErasedMember, campus: Campus) async throws -> [String: Int] {
        ["waitingResults": try await records.forgetWaiting(campus: campus, subject: member.email, memberID: member.memberID)]
    }
}

/// Retention of health records (the campus's `retention-days`, as for answers), once a day:
/// what can no longer weigh on a badge and is older than the cutoff is deleted. A result
/// collected before the cutoff goes unless it is its member's latest (the status's latest
/// test) or its isolation could still be in force (collected within the policy's longest
/// isolation, 60 days, before the cutoff); results nobody matched or that were dismissed go
/// when received before the cutoff; isolations and quarantines that ended before it; exemptions
/// denied or ended, or approved and expired, before it. Vaccination doses are kept until the member is
/// erased: a series completed years ago still counts. Statuses are recomputed for the members
/// touched (the restriction they keep may be an older, also ended, one).
public struct RecordsUpkeep: DailyUpkeep {
    let records: HealthRecords

    public init(records: HealthRecords) { self.records = records }

    public var name: String { "health records" }

    public func run(campus: Campus, now: Date) async throws -> [String: Int] {
        let cutoff = campus.localDate(at: now).adding(days: -campus.retentionDays)
        return try await records.purge(campus: campus, before: cutoff)
    }
}

extension HealthRecords {
    /// Deletes what `RecordsUpkeep` says, before `cutoff` (campus-local), in one transaction
    /// under the records lock; returns the counts.
    public func purge(campus: Campus, before cutoff: LocalDate) async throws -> [String: Int] {
        let policy = RecordsPolicy(campus: campus)
        let cutoffStart = cutoff.start(in: campus.zone)
        let isolationBound = cutoff.adding(days: -RecordsPolicy.days.upperBound).start(in: campus.zone)
        let (counts, changed) = try await changingRecords(of: campus) { connection in
            let results = try await connection.query(
                """
                DELETE FROM test_results t
                WHERE t.campus_id = \(campus.id)
                  AND ((t.user_id IS NULL AND t.received_at < \(cutoffStart))
                       OR (t.user_id IS NOT NULL AND t.collected_at < \(isolationBound)
                           AND EXISTS (SELECT 1 FROM test_results n
                                       WHERE n.campus_id = t.campus_id AND n.user_id = t.user_id AND n.dismissed_at IS NULL
                                         AND (n.collected_at, n.resulted_at, n.specimen_id) > (t.collected_at, t.resulted_at, t.specimen_id))))
                RETURNING t.user_id
                """)
            let isolations = try await connection.query(
                "DELETE FROM isolations WHERE campus_id = \(campus.id) AND ends_on < \(cutoff) RETURNING user_id")
            let exemptions = try await connection.query(
                """
                DELETE FROM exemptions WHERE campus_id = \(campus.id)
                  AND ((status IN ('denied', 'ended') AND decided_at < \(cutoffStart)) OR (status = 'approved' AND expires_on < \(cutoff)))
                RETURNING user_id
                """)
            var touched = Set<UUID>()
            for rows in [results, isolations, exemptions] {
                for row in rows { if let user = try row.decode("user_id", as: UUID?.self) { touched.insert(user) } }
            }
            let changed = try await Self.recompute(connection, campus: campus, users: Array(touched), policy: policy)
            return (
                ["test_results_purged": results.count, "isolations_purged": isolations.count, "exemptions_purged": exemptions.count],
                changed
            )
        }
        if changed > 0 { generations?.advance(campus.id) }
        return counts
    }
}
