import AttestFoundation
import AttestPlugins
import AttestPostgres
import Foundation
import Logging
import Metrics
import Notifications
import ServiceLifecycle
import Synchronization
import Tenancy
import Tracing

/// An attestation ready to be written: checked answers, decided badge.
public struct PendingAttestation: Sendable {
    public var campus: CampusID
    public var campusSlug: String
    public var user: UserID
    public var attestation: Attestation
    public var answers: SurveyAnswers
    public var questionnaire: Questionnaire
    /// The submitting request's `traceparent` (`OutboxTrace`), kept with its events; set by
    /// `AttestationWriter.submit`, "" when nothing is traced.
    public var traceParent = ""

    public init(
        campus: CampusID, campusSlug: String, user: UserID, attestation: Attestation, answers: SurveyAnswers, questionnaire: Questionnaire
    ) {
        self.campus = campus
        self.campusSlug = campusSlug
        self.user = user
        self.attestation = attestation
        self.answers = answers
        self.questionnaire = questionnaire
    }
}

/// What happened to a submission.
public enum WriteOutcome: Sendable, Equatable {
    /// Stored now.
    case created(Attestation)
    /// The same `Idempotency-Key` was stored before, with the same body: that attestation.
    case replayed(Attestation)
    /// The same `Idempotency-Key` was stored before with another body: nothing is stored, and
    /// the stored one is not answered as if it were this one's.
    case keyReused
    /// The member already attested on that campus-local date.
    case alreadySubmitted(LocalDate)
}

/// Writes attestations in batches (group commit): submissions that arrive together are
/// written in one transaction sent as one libpq pipeline, and each caller gets its own outcome.
/// A member's conflict never fails the others.
///
/// Per campus in the batch, one statement (its values passed as arrays) inserts the
/// attestations (`ON CONFLICT DO NOTHING`: a second one for the same member and day, or a
/// repeated `Idempotency-Key`, inserts nothing), writes the outbox events of those inserted,
/// one row per event and subscribed sink (none when no sink listens), and adds what they
/// count to the day's rollups in the worker's own shard row, so concurrent batches never wait
/// on each other's counters. Only a submission that inserted nothing costs a second read,
/// which tells replayed from already submitted. Submissions are ordered by campus and member,
/// so concurrent batches take their locks in one order.
///
/// If anything in the batch fails (a member deleted meanwhile, say), the transaction rolls
/// back as a whole and the batch is written again one submission per transaction, so the
/// failure stays with its own caller. It is a `Service`: run it with the server.
public final class AttestationWriter: Service, Sendable {
    struct Job {
        let pending: PendingAttestation
        let continuation: CheckedContinuation<WriteOutcome, any Error>
        /// The submitting request's span: the batch's span is its child (the first's) or linked.
        let trace: ServiceContext?
    }

    struct State {
        var queue: [Job] = []
        /// Resumed with true to take what is queued, false once closed.
        var idleWorkers: [CheckedContinuation<Bool, Never>] = []
        var closed = false
    }

    let client: PostgresClient
    let maxBatch: Int
    let workers: Int
    let logger: Logger
    let metrics: SubmissionMetrics
    /// Each worker adds its deltas to its own shard row; servers start at a random shard.
    let firstShard = Int.random(in: 0..<shards)
    static let shards = 16
    private let state = Mutex(State())

    /// Rung after a commit that wrote outbox events (this server's outbox worker).
    let outboxSignal: OutboxSignal?

    /// `workers` batches may be in flight at once, each on its own connection.
    public init(
        client: PostgresClient, maxBatch: Int = 256, workers: Int = 1, logger: Logger, metrics: SubmissionMetrics = .init(),
        outboxSignal: OutboxSignal? = nil
    ) {
        self.outboxSignal = outboxSignal
        self.client = client
        self.metrics = metrics
        self.maxBatch = maxBatch
        self.workers = workers
        self.logger = logger
    }

    /// Submissions waiting for a worker (for tests that gather a batch before the workers run).
    var queued: Int { state.withLock { $0.queue.count } }

    /// Queues a submission and waits for its outcome.
    public func submit(_ pending: PendingAttestation) async throws -> WriteOutcome {
        var pending = pending
        pending.traceParent = OutboxTrace.current()
        let trace = ServiceContext.current
        return try await withCheckedThrowingContinuation { continuation in
            let job = Job(pending: pending, continuation: continuation, trace: trace)
            let admission = state.withLock { state -> Admission in
                if state.closed { return .refused }
                state.queue.append(job)
                guard let worker = state.idleWorkers.popLast() else { return .queued }
                return .wake(worker)
            }
            switch admission {
            case .queued: break
            case .wake(let worker): worker.resume(returning: true)
            case .refused: continuation.resume(throwing: PostgresError(code: .poolClosed, message: "the server is shutting down"))
            }
        }
    }

    private enum Admission {
        case queued
        case wake(CheckedContinuation<Bool, Never>)
        case refused
    }

    /// Runs the workers until graceful shutdown; queued submissions are written before it returns.
    public func run() async throws {
        await withDiscardingTaskGroup { group in
            for worker in 0..<workers {
                group.addTask { await self.work(shard: Int16((self.firstShard + worker) % Self.shards)) }
            }
            group.addTask {
                try? await gracefulShutdown()
                self.close()
            }
        }
    }

    private func close() {
        let idle = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            state.closed = true
            defer { state.idleWorkers = [] }
            return state.idleWorkers
        }
        for worker in idle { worker.resume(returning: false) }
    }

    private func work(shard: Int16) async {
        while let batch = await nextBatch() {
            await write(batch, shard: shard)
        }
    }

    /// What is queued when this worker runs (up to `maxBatch`), or nil once closed with
    /// nothing queued. An idle worker is woken by the first submission but takes its batch
    /// only when it runs: the submissions that one read batch resumed together queue
    /// meanwhile and are written together; taken at the wake-up, the first of them went
    /// alone or nearly, in smaller batches (docs/performance.md, "Issue 34, eighth round").
    private func nextBatch() async -> [Job]? {
        while true {
            let ready = state.withLock { state -> [Job]?? in
                if !state.queue.isEmpty { return .some(Self.take(&state.queue, maxBatch)) }
                if state.closed { return .some(nil) }
                return .none
            }
            if let ready { return ready }
            let woken = await withCheckedContinuation { continuation in
                let idle = state.withLock { state -> Bool in
                    guard state.queue.isEmpty, !state.closed else { return false }
                    state.idleWorkers.append(continuation)
                    return true
                }
                if !idle { continuation.resume(returning: true) }
            }
            // Closed while idle: whatever was queued before woke another worker, which writes
            // it (a worker that finds the queue empty waits again), and nothing can be since.
            guard woken else { return nil }
        }
    }

    private static func take(_ queue: inout [Job], _ limit: Int) -> [Job] {
        let batch = Array(queue.prefix(limit))
        queue.removeFirst(batch.count)
        return batch
    }

    /// One batch, a span of its own when its requests are traced: the child of the first
    /// traced request's span, linked to the others' (each request's trace then shows the
    /// batch that wrote it). Untraced, no span is made.
    private func write(_ unordered: [Job], shard: Int16) async {
        let batch = unordered.sorted { Self.precedes($0.pending, $1.pending) }
        guard let parent = batch.lazy.compactMap(\.trace).first else { return await write(sorted: batch, shard: shard) }
        await withSpan("attestation.batch", context: parent) { span in
            if span.isRecording {
                span.attributes["attest.batch.size"] = batch.count
                for job in batch.dropFirst() { if let trace = job.trace { span.addLink(SpanLink(context: trace, attributes: [:])) } }
            }
            await write(sorted: batch, shard: shard)
        }
    }

    private func write(sorted batch: [Job], shard: Int16) async {
        let started = ContinuousClock.now
        metrics.batchSize.record(batch.count)
        defer { metrics.batchDuration.record(duration: ContinuousClock.now - started) }
        do {
            var inserted: Set<UUID> = []
            var failed: [Int: PostgresError] = [:]
            let together = try await client.withConnection { try await $0.pipeline([Self.unit(for: batch.map(\.pending), shard: shard)]) }
            switch together[0] {
            case .success(let results):
                inserted = try insertedIDs(results)
            case .failure:
                // Something in the batch failed and it all rolled back: one transaction each now.
                metrics.batchesSplit.increment()
                let alone = try await client.withConnection { connection in
                    try await connection.pipeline(batch.map { Self.unit(for: [$0.pending], shard: shard) })
                }
                for (index, outcome) in alone.enumerated() {
                    switch outcome {
                    case .success(let results): inserted.formUnion(try insertedIDs(results))
                    case .failure(let error): failed[index] = error
                    }
                }
            }
            // Not inserted: another attestation of that member and day (or that key) is stored.
            let conflicted = batch.indices.filter { failed[$0] == nil && !inserted.contains(batch[$0].pending.attestation.id) }
            var resolved: [Int: Result<WriteOutcome, any Error>] = [:]
            if !conflicted.isEmpty {
                let reads = try await client.withConnection { connection in
                    try await connection.pipeline(
                        conflicted.map {
                            PipelineUnit(campus: batch[$0].pending.campus.rawValue, statements: [Self.existing(batch[$0].pending)])
                        })
                }
                for (index, read) in zip(conflicted, reads) {
                    resolved[index] = Result { try Self.interpret(conflict: read.get()[0], batch[index].pending) }
                }
            }
            for (index, job) in batch.enumerated() {
                let outcome: Result<WriteOutcome, any Error> =
                    if let error = failed[index] { .failure(error) } else { resolved[index] ?? .success(.created(job.pending.attestation)) }
                metrics.count(outcome)
                job.continuation.resume(with: outcome)
            }
        } catch {
            // The connection broke mid-batch: the outcome is unknown to every caller, who may
            // retry with the same Idempotency-Key.
            logger.warning("attestation batch failed", metadata: ["size": "\(batch.count)", "error": "\(error)"])
            metrics.failed.increment(by: batch.count)
            for job in batch { job.continuation.resume(throwing: error) }
        }
    }

    /// The order batches are written in, by campus then member: the UUIDs' bytes compared,
    /// not their text, which costs a formatting per comparison.
    static func precedes(_ a: PendingAttestation, _ b: PendingAttestation) -> Bool {
        if a.campus != b.campus { return bytes(of: a.campus.rawValue).lexicographicallyPrecedes(bytes(of: b.campus.rawValue)) }
        return bytes(of: a.user.rawValue).lexicographicallyPrecedes(bytes(of: b.user.rawValue))
    }

    private static func bytes(of id: UUID) -> [UInt8] {
        withUnsafeBytes(of: id.uuid) { Array($0) }
    }

    // MARK: The unit of work

    /// One transaction for `batch` (ordered by campus): per campus, set the campus, then one
    /// statement that writes all of that campus's submissions.
    static func unit(for batch: [PendingAttestation], shard: Int16) -> PipelineUnit {
        var segments: [PipelineUnit.Segment] = []
        var start = 0
        while start < batch.count {
            let campus = batch[start].campus
            let end = batch[start...].firstIndex { $0.campus != campus } ?? batch.count
            segments.append(
                .init(settings: CampusScope.settings(campus.rawValue), statements: [write(Array(batch[start..<end]), shard: shard)]))
            start = end
        }
        return PipelineUnit(segments: segments)
    }

    /// The ids a unit inserted: the rows of its write statements (one per campus). Rings the
    /// outbox signal when they wrote events, so that this server's worker delivers them now.
    func insertedIDs(_ results: [PostgresRows]) throws -> Set<UUID> {
        var ids: Set<UUID> = [], announced = false
        for rows in results {
            for row in rows {
                ids.insert(try row.decode("id", as: UUID.self))
                if !announced { announced = try row.decode("announced", as: Bool.self) }
            }
        }
        if announced { outboxSignal?.wake() }
        return ids
    }

    /// One campus's submissions in one statement, passed as arrays: inserts each attestation
    /// unless the member already has one that day (or that key): `ON CONFLICT DO NOTHING`,
    /// also between two of the batch; writes the outbox events of those inserted for the
    /// sinks that subscribe to them; and adds what they count to the day's rollups in this
    /// worker's shard row, in key order so concurrent writers lock rows in one order.
    /// Returns the ids inserted.
    static func write(_ batch: [PendingAttestation], shard: Int16) -> SQL {
        let campus = batch[0].campus, slug = batch[0].campusSlug
        var ids: [UUID] = [], users: [UUID] = [], dates: [String] = [], submitted: [Date] = [], onTime: [Bool] = []
        var versions: [Int32] = [], answers: [String] = [], colors: [String] = [], reasons: [String] = []
        var validUntil: [Date] = [], ruleIDs: [String] = [], ruleVersions: [String] = [], keys: [String] = [], digests: [Data] = []
        var answerIDs: [UUID] = [], questions: [String] = [], values: [String] = []
        // Each event keeps its submission's traceparent, when any is traced.
        let traced = batch.contains { !$0.traceParent.isEmpty }
        let traceParents: SQL =
            traced
            ? "LEFT JOIN unnest(\(batch.map(\.attestation.id)), \(batch.map(\.traceParent))) AS t(id, trace_parent) ON t.id = m.id" : ""
        for pending in batch {
            let a = pending.attestation
            ids.append(a.id)
            users.append(pending.user.rawValue)
            dates.append(a.date.description)
            submitted.append(a.submittedAt)
            onTime.append(a.onTime)
            versions.append(Int32(truncatingIfNeeded: a.surveyVersion))
            colors.append(a.color.rawValue)
            reasons.append(a.reason)
            validUntil.append(a.validUntil)
            ruleIDs.append(a.ruleID)
            ruleVersions.append(a.ruleVersion)
            keys.append(a.idempotencyKey ?? "")  // a key is never empty: "" stands for none
            digests.append(a.idempotencyDigest ?? Data())
            // The answers' JSON in the questionnaire's order (jsonb keeps keys in its own), and
            // what the day's counts add, in one pass.
            var json = "{", written = 0
            json.reserveCapacity(32 * pending.questionnaire.questions.count)
            for question in pending.questionnaire.questions {
                guard let value = pending.answers[question.id] else { continue }
                if written > 0 { json.append(",") }
                written += 1
                JSONText.appendMember(question.id, value, to: &json)
                switch value {
                case .bool(true):
                    answerIDs.append(a.id)
                    questions.append(question.id)
                    values.append("true")
                case .text(let option) where question.kind == .choice:
                    answerIDs.append(a.id)
                    questions.append(question.id)
                    values.append(option)
                default: break
                }
            }
            json.append("}")
            // Checked answers are the questionnaire's own; any other key is still stored.
            answers.append(written == pending.answers.count ? json : JSONText.answers(pending.answers))
        }
        // The events (`AttestNotification`s) are made in SQL, only when a sink is enabled: one
        // id per event, whichever sinks receive it (a CTE with a volatile function is
        // evaluated once). Always attestation.submitted; attestation.late after the
        // deadline; badge.red with a link to the day's red follow-ups.
        return """
            WITH inserted AS (
                INSERT INTO attestations (campus_id, id, user_id, local_date, submitted_at, on_time, survey_version, answers,
                                          color, reason, valid_until, rule_id, rule_version, idempotency_key, idempotency_digest)
                SELECT \(campus), i.id, i.user_id, i.local_date::date, i.submitted_at, i.on_time, i.survey_version,
                       i.answers::jsonb, i.color, i.reason, i.valid_until, i.rule_id, i.rule_version, NULLIF(i.idempotency_key, ''),
                       NULLIF(i.idempotency_digest, ''::bytea)
                FROM unnest(\(ids), \(users), \(dates), \(submitted), \(onTime), \(versions), \(answers), \(colors), \(reasons),
                            \(validUntil), \(ruleIDs), \(ruleVersions), \(keys), \(digests))
                     AS i(id, user_id, local_date, submitted_at, on_time, survey_version, answers, color, reason, valid_until,
                          rule_id, rule_version, idempotency_key, idempotency_digest)
                ON CONFLICT DO NOTHING
                RETURNING id, user_id, local_date, submitted_at, on_time, color
            ), events AS (
                SELECT gen_random_uuid() AS id, k.event, \(OutboxEvents.payload(
                           event: "k.event", campus: "\(slug)::text", occurredAt: "m.submitted_at", userId: "m.user_id",
                           attestationId: "m.id", date: "m.local_date", color: "m.color", onTime: "m.on_time", links: "k.links")) AS payload
                       \(unsafeRaw: traced ? ", t.trace_parent" : "")
                FROM inserted m \(traceParents)
                CROSS JOIN LATERAL (VALUES
                    ('attestation.submitted', '{}'::jsonb, true),
                    ('attestation.late', '{}'::jsonb, NOT m.on_time),
                    ('badge.red', jsonb_build_object(
                        'followUps', '/v1/campuses/' || \(slug)::text || '/admin/follow-ups?date=' || m.local_date::text || '&color=red'),
                     m.color = 'red')
                ) AS k(event, links, announced)
                WHERE k.announced AND \(OutboxEvents.anySink(campus: campus))
            ), announced AS (
                \(OutboxEvents.insert(campus: campus, traced: traced)) RETURNING 1
            ), stats AS (
                INSERT INTO daily_stats AS s (campus_id, local_date, shard, submitted, on_time, late, green, yellow, red)
                SELECT \(campus), local_date, \(shard), count(*), count(*) FILTER (WHERE on_time), count(*) FILTER (WHERE NOT on_time),
                       count(*) FILTER (WHERE color = 'green'), count(*) FILTER (WHERE color = 'yellow'),
                       count(*) FILTER (WHERE color = 'red')
                FROM inserted GROUP BY local_date ORDER BY local_date
                \(Rollups.addToStats)
            ), counted AS (
                INSERT INTO daily_answer_counts AS c (campus_id, local_date, question_id, answer, shard, count)
                SELECT \(campus), m.local_date, x.question, x.answer, \(shard), count(*)
                FROM inserted m JOIN unnest(\(answerIDs), \(questions), \(values)) AS x(id, question, answer) ON x.id = m.id
                GROUP BY m.local_date, x.question, x.answer ORDER BY m.local_date, x.question, x.answer
                \(Rollups.addToAnswerCounts)
            )
            SELECT id, EXISTS (SELECT 1 FROM announced) AS announced FROM inserted
            """
    }

    /// The member's attestation for that day or with that key, the key's first.
    static func existing(_ pending: PendingAttestation) -> SQL {
        let a = pending.attestation
        return """
            SELECT id, local_date, submitted_at, on_time, survey_version, color, reason, valid_until, rule_id, rule_version,
                   idempotency_key, idempotency_digest
            FROM attestations
            WHERE campus_id = \(pending.campus) AND user_id = \(pending.user)
              AND (local_date = \(a.date) OR idempotency_key = \(a.idempotencyKey))
            ORDER BY (idempotency_key IS NOT DISTINCT FROM \(a.idempotencyKey)) DESC
            LIMIT 1
            """
    }

    /// What a submission that inserted nothing ran into: its own key's attestation (a replay)
    /// or the member's attestation of that day.
    static func interpret(conflict rows: PostgresRows, _ pending: PendingAttestation) throws -> WriteOutcome {
        guard let row = rows.first else {
            throw PostgresError(code: .protocolError, message: "an attestation conflicted but no row was found")
        }
        let stored = try attestation(from: row)
        if let key = pending.attestation.idempotencyKey, stored.idempotencyKey == key {
            // A row stored before keys were bound to a digest has none: replayed, as then.
            guard stored.idempotencyDigest == nil || stored.idempotencyDigest == pending.attestation.idempotencyDigest else {
                return .keyReused
            }
            return .replayed(stored)
        }
        return .alreadySubmitted(stored.date)
    }

    static func attestation(from row: PostgresRow) throws -> Attestation {
        Attestation(
            id: try row.decode("id"), date: try row.decode("local_date"), submittedAt: try row.decode("submitted_at"),
            onTime: try row.decode("on_time"), surveyVersion: try row.decode("survey_version"),
            color: BadgeColor(rawValue: try row.decode("color")) ?? .yellow, reason: try row.decode("reason"),
            validUntil: try row.decode("valid_until"), ruleID: try row.decode("rule_id"), ruleVersion: try row.decode("rule_version"),
            idempotencyKey: try row.decode("idempotency_key"), idempotencyDigest: try row.decode("idempotency_digest"))
    }
}
