import AttestPlugins
import AttestPostgres
import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import Tenancy

/// An attestation ready to be written: checked answers, decided badge.
public struct PendingAttestation: Sendable {
    public var campus: CampusID
    public var campusSlug: String
    public var user: UserID
    public var attestation: Attestation
    public var answers: SurveyAnswers
    public var questionnaire: Questionnaire

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
    /// The same `Idempotency-Key` was stored before: that attestation.
    case replayed(Attestation)
    /// The member already attested on that campus-local date.
    case alreadySubmitted(LocalDate)
}

/// Writes attestations in batches (group commit): submissions that arrive together are
/// written in one transaction sent as one libpq pipeline, and each caller gets its own outcome.
/// A member's conflict never fails the others.
///
/// Per submission, one statement inserts the attestation (`ON CONFLICT DO NOTHING`: a second
/// one for the same member and day, or a repeated `Idempotency-Key`, inserts nothing) and
/// writes its outbox events, one row per event and subscribed sink (none when no sink
/// listens); a read then tells created, replayed or already submitted. Per campus in the
/// batch, one statement adds the batch's deltas to the day's rollups, in the worker's own
/// shard row, so concurrent batches never wait on each other's counters. Submissions are
/// ordered by campus and member, so concurrent batches take their locks in one order.
///
/// If anything in the batch fails (a member deleted meanwhile, say), the transaction rolls
/// back as a whole and the batch is written again one submission per transaction, so the
/// failure stays with its own caller. It is a `Service`: run it with the server.
public final class AttestationWriter: Service, Sendable {
    struct Job {
        let pending: PendingAttestation
        let continuation: CheckedContinuation<WriteOutcome, any Error>
    }

    struct State {
        var queue: [Job] = []
        var idleWorkers: [CheckedContinuation<[Job]?, Never>] = []
        var closed = false
    }

    let client: PostgresClient
    let maxBatch: Int
    let workers: Int
    let logger: Logger
    /// Each worker adds its deltas to its own shard row; servers start at a random shard.
    let firstShard = Int.random(in: 0..<shards)
    static let shards = 16
    private let state = Mutex(State())

    /// `workers` batches may be in flight at once, each on its own connection.
    public init(client: PostgresClient, maxBatch: Int = 256, workers: Int = 4, logger: Logger) {
        self.client = client
        self.maxBatch = maxBatch
        self.workers = workers
        self.logger = logger
    }

    /// Queues a submission and waits for its outcome.
    public func submit(_ pending: PendingAttestation) async throws -> WriteOutcome {
        try await withCheckedThrowingContinuation { continuation in
            let job = Job(pending: pending, continuation: continuation)
            let admission = state.withLock { state -> Admission in
                if state.closed { return .refused }
                state.queue.append(job)
                guard let worker = state.idleWorkers.popLast() else { return .queued }
                return .wake(worker, Self.take(&state.queue, maxBatch))
            }
            switch admission {
            case .queued: break
            case .wake(let worker, let batch): worker.resume(returning: batch)
            case .refused: continuation.resume(throwing: PostgresError(code: .poolClosed, message: "the server is shutting down"))
            }
        }
    }

    private enum Admission {
        case queued
        case wake(CheckedContinuation<[Job]?, Never>, [Job])
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
        let idle = state.withLock { state -> [CheckedContinuation<[Job]?, Never>] in
            state.closed = true
            defer { state.idleWorkers = [] }
            return state.idleWorkers
        }
        for worker in idle { worker.resume(returning: nil) }
    }

    private func work(shard: Int16) async {
        while let batch = await nextBatch() {
            await write(batch, shard: shard)
        }
    }

    private func nextBatch() async -> [Job]? {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> [Job]?? in
                if !state.queue.isEmpty { return .some(Self.take(&state.queue, maxBatch)) }
                if state.closed { return .some(nil) }
                state.idleWorkers.append(continuation)
                return .none
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    private static func take(_ queue: inout [Job], _ limit: Int) -> [Job] {
        let batch = Array(queue.prefix(limit))
        queue.removeFirst(batch.count)
        return batch
    }

    private func write(_ unordered: [Job], shard: Int16) async {
        let batch = unordered.sorted {
            ($0.pending.campus.description, $0.pending.user.description) < ($1.pending.campus.description, $1.pending.user.description)
        }
        do {
            let together = try await client.withConnection { try await $0.pipeline([Self.unit(for: batch.map(\.pending), shard: shard)]) }
            if case .success(let results) = together[0] {
                // Per campus: set campus, then insert and read per submission, then the deltas.
                var index = 0, campus: CampusID?
                for job in batch {
                    if job.pending.campus != campus {
                        if campus != nil { index += 1 }  // the previous campus's deltas
                        campus = job.pending.campus
                        index += 1  // set campus
                    }
                    let outcome = Result { try Self.interpret(Array(results[index..<index + 2]), job.pending) }
                    job.continuation.resume(with: outcome)
                    index += 2
                }
                return
            }
            // Something in the batch failed and it all rolled back: one transaction each now.
            let alone = try await client.withConnection { connection in
                try await connection.pipeline(batch.map { Self.unit(for: [$0.pending], shard: shard) })
            }
            for (job, outcome) in zip(batch, alone) {
                // Alone: set campus, insert, read, deltas.
                job.continuation.resume(with: Result { try Self.interpret(Array(outcome.get()[1..<3]), job.pending) })
            }
        } catch {
            // The connection broke mid-batch: the outcome is unknown to every caller, who may
            // retry with the same Idempotency-Key.
            logger.warning("attestation batch failed", metadata: ["size": "\(batch.count)", "error": "\(error)"])
            for job in batch { job.continuation.resume(throwing: error) }
        }
    }

    // MARK: The unit of work

    /// One transaction for `batch` (ordered by campus): per campus, set the campus, insert and
    /// read each submission, then add the rollup deltas of those inserted.
    static func unit(for batch: [PendingAttestation], shard: Int16) -> PipelineUnit {
        var statements: [SQL] = []
        var start = 0
        while start < batch.count {
            let campus = batch[start].campus
            let end = batch[start...].firstIndex { $0.campus != campus } ?? batch.count
            statements.append("SELECT set_config('attest.campus_id', \(campus.description), true)")
            for pending in batch[start..<end] {
                statements += [insert(pending), existing(pending)]
            }
            statements.append(deltas(Array(batch[start..<end]), shard: shard))
            start = end
        }
        return PipelineUnit(statements: statements)
    }

    /// Inserts the attestation unless the member already has one that day (or that key),
    /// and its outbox events for the sinks that subscribe to them.
    static func insert(_ pending: PendingAttestation) -> SQL {
        let a = pending.attestation
        let campus = pending.campus, user = pending.user
        let answers = (try? PostgresJSON(encoding: pending.answers)) ?? PostgresJSON("{}")
        let events = Self.events(for: pending)
        let payloads = events.map { (try? String(decoding: JSONEncoder().encode($0), as: UTF8.self)) ?? "{}" }
        return """
            WITH inserted AS (
                INSERT INTO attestations (campus_id, id, user_id, local_date, submitted_at, on_time, survey_version, answers,
                                          color, reason, valid_until, rule_id, rule_version, idempotency_key)
                VALUES (\(campus), \(a.id), \(user), \(a.date), \(a.submittedAt), \(a.onTime), \(a.surveyVersion), \(answers),
                        \(a.color.rawValue), \(a.reason), \(a.validUntil), \(a.ruleID), \(a.ruleVersion), \(a.idempotencyKey))
                ON CONFLICT DO NOTHING
                RETURNING id
            ), announced AS (
                INSERT INTO notification_outbox (campus_id, id, event, sink_id, payload)
                SELECT \(campus), e.id::uuid, e.event, p.plugin_id, e.payload::jsonb
                FROM inserted
                CROSS JOIN unnest(\(events.map(\.id)), \(events.map(\.event.rawValue)), \(payloads)) AS e(id, event, payload)
                JOIN campus_plugins p ON p.campus_id = \(campus) AND p.kind = 'sink'
                    AND (NOT p.settings ? 'events' OR p.settings -> 'events' ? e.event)
            )
            SELECT count(*) AS inserted FROM inserted
            """
    }

    /// The member's attestation for that day or with that key, the key's first.
    static func existing(_ pending: PendingAttestation) -> SQL {
        let a = pending.attestation
        return """
            SELECT id, local_date, submitted_at, on_time, survey_version, color, reason, valid_until, rule_id, rule_version,
                   idempotency_key
            FROM attestations
            WHERE campus_id = \(pending.campus) AND user_id = \(pending.user)
              AND (local_date = \(a.date) OR idempotency_key = \(a.idempotencyKey))
            ORDER BY (idempotency_key IS NOT DISTINCT FROM \(a.idempotencyKey)) DESC
            LIMIT 1
            """
    }

    /// Adds to one campus's daily rollups what the batch's inserted attestations count:
    /// those are the rows with the batch's fresh ids (a conflicting submission inserted
    /// nothing). Rows are upserted in key order, so concurrent writers lock them in one order.
    static func deltas(_ batch: [PendingAttestation], shard: Int16) -> SQL {
        let campus = batch[0].campus
        var ids: [UUID] = [], answerIDs: [UUID] = [], questions: [String] = [], values: [String] = []
        for pending in batch {
            ids.append(pending.attestation.id)
            for question in pending.questionnaire.questions {
                switch pending.answers[question.id] {
                case .bool(true)?: answerIDs.append(pending.attestation.id); questions.append(question.id); values.append("true")
                case .text(let option)? where question.kind == .choice:
                    answerIDs.append(pending.attestation.id); questions.append(question.id); values.append(option)
                default: break
                }
            }
        }
        return """
            WITH mine AS (
                SELECT id, local_date, on_time, color FROM attestations WHERE campus_id = \(campus) AND id = ANY(\(ids))
            ), stats AS (
                INSERT INTO daily_stats AS s (campus_id, local_date, shard, submitted, on_time, late, green, yellow, red)
                SELECT \(campus), local_date, \(shard), count(*), count(*) FILTER (WHERE on_time), count(*) FILTER (WHERE NOT on_time),
                       count(*) FILTER (WHERE color = 'green'), count(*) FILTER (WHERE color = 'yellow'),
                       count(*) FILTER (WHERE color = 'red')
                FROM mine GROUP BY local_date ORDER BY local_date
                ON CONFLICT (campus_id, local_date, shard) DO UPDATE SET
                    submitted = s.submitted + EXCLUDED.submitted, on_time = s.on_time + EXCLUDED.on_time,
                    late = s.late + EXCLUDED.late, green = s.green + EXCLUDED.green, yellow = s.yellow + EXCLUDED.yellow,
                    red = s.red + EXCLUDED.red
            ), counted AS (
                INSERT INTO daily_answer_counts AS c (campus_id, local_date, question_id, answer, shard, count)
                SELECT \(campus), m.local_date, x.question, x.answer, \(shard), count(*)
                FROM mine m JOIN unnest(\(answerIDs), \(questions), \(values)) AS x(id, question, answer) ON x.id = m.id
                GROUP BY m.local_date, x.question, x.answer ORDER BY m.local_date, x.question, x.answer
                ON CONFLICT (campus_id, local_date, question_id, answer, shard) DO UPDATE SET count = c.count + EXCLUDED.count
            )
            SELECT count(*) AS counted FROM mine
            """
    }

    /// The events an attestation announces: always submitted; late after the deadline; red badges.
    static func events(for pending: PendingAttestation) -> [AttestNotification] {
        let a = pending.attestation, slug = pending.campusSlug
        func event(_ kind: NotificationEvent, links: [String: String] = [:]) -> AttestNotification {
            AttestNotification(
                event: kind, campus: slug, occurredAt: a.submittedAt, userId: pending.user, attestationId: a.id, date: a.date,
                color: a.color, onTime: a.onTime, links: links)
        }
        var events = [event(.attestationSubmitted)]
        if !a.onTime { events.append(event(.attestationLate)) }
        if a.color == .red {
            events.append(event(.badgeRed, links: ["followUps": "/v1/campuses/\(slug)/admin/follow-ups?date=\(a.date)&color=red"]))
        }
        return events
    }

    static func interpret(_ results: [PostgresRows], _ pending: PendingAttestation) throws -> WriteOutcome {
        let inserted: Int = try results[0][0].decode("inserted")
        if inserted == 1 { return .created(pending.attestation) }
        guard let row = results[1].first else {
            throw PostgresError(code: .protocolError, message: "an attestation conflicted but no row was found")
        }
        let stored = try attestation(from: row)
        if let key = pending.attestation.idempotencyKey, stored.idempotencyKey == key { return .replayed(stored) }
        return .alreadySubmitted(stored.date)
    }

    static func attestation(from row: PostgresRow) throws -> Attestation {
        Attestation(
            id: try row.decode("id"), date: try row.decode("local_date"), submittedAt: try row.decode("submitted_at"),
            onTime: try row.decode("on_time"), surveyVersion: try row.decode("survey_version"),
            color: BadgeColor(rawValue: try row.decode("color")) ?? .yellow, reason: try row.decode("reason"),
            validUntil: try row.decode("valid_until"), ruleID: try row.decode("rule_id"), ruleVersion: try row.decode("rule_version"),
            idempotencyKey: try row.decode("idempotency_key"))
    }
}
