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
/// sent as one libpq pipeline, each as its own unit of work (its own implicit transaction),
/// and each caller gets its own outcome. A member's conflict never fails the others.
///
/// Each unit is one statement that inserts the attestation (`ON CONFLICT DO NOTHING`) and,
/// only if it went in, adds its deltas to the day's rollups (in one of 16 shard rows, so
/// concurrent writers do not queue on one counter row) and writes its events to the outbox,
/// one row per event and subscribed sink (none when no sink listens), then a read of the row
/// that decides created, replayed or already submitted. It is a `Service`: run it with the server.
public final class AttestationWriter: Service, Sendable {
    struct Job {
        let pending: PendingAttestation
        let unit: PipelineUnit
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
        let unit = PipelineUnit(campus: pending.campus.rawValue, statements: Self.statements(for: pending))
        return try await withCheckedThrowingContinuation { continuation in
            let job = Job(pending: pending, unit: unit, continuation: continuation)
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
            for _ in 0..<workers {
                group.addTask { await self.work() }
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

    private func work() async {
        while let batch = await nextBatch() {
            await write(batch)
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

    private func write(_ batch: [Job]) async {
        do {
            let outcomes = try await client.withConnection { try await $0.pipeline(batch.map(\.unit)) }
            for (job, outcome) in zip(batch, outcomes) {
                job.continuation.resume(with: Result { try Self.interpret(outcome.get(), job.pending) })
            }
        } catch {
            // The connection broke mid-batch: the outcome is unknown to every caller, who may
            // retry with the same Idempotency-Key.
            logger.warning("attestation batch failed", metadata: ["size": "\(batch.count)", "error": "\(error)"])
            for job in batch { job.continuation.resume(throwing: error) }
        }
    }

    // MARK: The unit of work

    static func statements(for pending: PendingAttestation) -> [SQL] {
        let a = pending.attestation
        let campus = pending.campus, user = pending.user
        // Spread each day's counters over 16 rows by user, so writers rarely share a row.
        let shard = Int16(withUnsafeBytes(of: user.rawValue.uuid) { $0[15] } % 16)
        var questions: [String] = [], values: [String] = []
        for question in pending.questionnaire.questions {
            switch pending.answers[question.id] {
            case .bool(true)?: questions.append(question.id); values.append("true")
            case .text(let option)? where question.kind == .choice: questions.append(question.id); values.append(option)
            default: break
            }
        }
        let answers = (try? PostgresJSON(encoding: pending.answers)) ?? PostgresJSON("{}")
        let events = Self.events(for: pending)
        let payloads = events.map { (try? String(decoding: JSONEncoder().encode($0), as: UTF8.self)) ?? "{}" }
        let onTime = a.onTime ? 1 : 0
        let insert: SQL = """
            WITH inserted AS (
                INSERT INTO attestations (campus_id, id, user_id, local_date, submitted_at, on_time, survey_version, answers,
                                          color, reason, valid_until, rule_id, rule_version, idempotency_key)
                VALUES (\(campus), \(a.id), \(user), \(a.date), \(a.submittedAt), \(a.onTime), \(a.surveyVersion), \(answers),
                        \(a.color.rawValue), \(a.reason), \(a.validUntil), \(a.ruleID), \(a.ruleVersion), \(a.idempotencyKey))
                ON CONFLICT DO NOTHING
                RETURNING local_date
            ), stats AS (
                INSERT INTO daily_stats AS s (campus_id, local_date, shard, submitted, on_time, late, green, yellow, red)
                SELECT \(campus), local_date, \(shard), 1, \(onTime), \(1 - onTime),
                       \(a.color == .green ? 1 : 0), \(a.color == .yellow ? 1 : 0), \(a.color == .red ? 1 : 0)
                FROM inserted
                ON CONFLICT (campus_id, local_date, shard) DO UPDATE SET
                    submitted = s.submitted + 1, on_time = s.on_time + EXCLUDED.on_time, late = s.late + EXCLUDED.late,
                    green = s.green + EXCLUDED.green, yellow = s.yellow + EXCLUDED.yellow, red = s.red + EXCLUDED.red
            ), counted AS (
                INSERT INTO daily_answer_counts AS c (campus_id, local_date, question_id, answer, shard, count)
                SELECT \(campus), i.local_date, x.question, x.answer, \(shard), 1
                FROM inserted i CROSS JOIN unnest(\(questions), \(values)) AS x(question, answer)
                ON CONFLICT (campus_id, local_date, question_id, answer, shard) DO UPDATE SET count = c.count + 1
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
        let existing: SQL = """
            SELECT id, local_date, submitted_at, on_time, survey_version, color, reason, valid_until, rule_id, rule_version,
                   idempotency_key
            FROM attestations
            WHERE campus_id = \(campus) AND user_id = \(user) AND (local_date = \(a.date) OR idempotency_key = \(a.idempotencyKey))
            ORDER BY (idempotency_key IS NOT DISTINCT FROM \(a.idempotencyKey)) DESC
            LIMIT 1
            """
        return [insert, existing]
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
