import AttestPlugins
import AttestPostgres
import Crypto
import Foundation
import Identity
import Logging
import NIOPosix
import Tenancy

/// The submission use case, one call from a route or a form: the active questionnaire, the
/// answers checked against it, today's campus-local date and punctuality, the member's recent
/// history, the campus's badge rule (within a time budget), then the batched write.
public struct AttestationService: Sendable {
    let client: PostgresClient
    let sessions: SessionStore
    let writer: AttestationWriter
    let questionnaires: ActiveQuestionnaires
    let registry: PluginRegistry
    let logger: Logger
    /// How long a badge rule may take before the badge is yellow "needs review". Default 100 ms.
    let ruleBudget: Duration
    /// Built rules by campus and questionnaire version, for a few seconds.
    private let rules = ExpiringCache<RuleKey, (id: String, rule: any BadgeRule)>(ttl: .seconds(5))

    struct RuleKey: Hashable, Sendable {
        var campus: CampusID
        var version: Int
    }

    /// Where the campus's badge rule and its settings (the sealed ones opened with the
    /// key-encryption key) are read.
    let plugins: CampusPluginStore

    public init(
        client: PostgresClient, sessions: SessionStore, writer: AttestationWriter, questionnaires: ActiveQuestionnaires,
        registry: PluginRegistry, logger: Logger, ruleBudget: Duration = .milliseconds(100), kek: KeyEncryptionKey? = nil
    ) {
        self.client = client
        self.plugins = CampusPluginStore(client: client, kek: kek)
        self.sessions = sessions
        self.writer = writer
        self.questionnaires = questionnaires
        self.registry = registry
        self.logger = logger
        self.ruleBudget = ruleBudget
        self.histories = LookupBatcher { day, users in try await Self.histories(client, day: day, users: users) }
        self.submitters = LookupBatcher { day, hashes in try await Self.submitters(client, day: day, hashes: hashes) }
    }

    /// The badge a rule gives when it fails or overruns: never a 500.
    static let needsReview = "Needs review: the campus's badge rule could not decide; a health officer will follow up"

    /// Submits the answers of `submitter` (its session, and the past read with it when
    /// `submitter(campus:token:at:)` read it, used when it is what the rule needs at `now`):
    /// the API's submission and the pages' alike.
    public func submit(
        campus: Campus, as submitter: Submitter, surveyVersion: Int, answers raw: [String: JSONValue], idempotencyKey: String?,
        at now: Date
    ) async throws -> WriteOutcome {
        try await submit(
            campus: campus, user: submitter.session.user.id, surveyVersion: surveyVersion, answers: raw, idempotencyKey: idempotencyKey,
            at: now, prefetched: submitter.history)
    }

    /// Submits `user`'s answers to questionnaire `surveyVersion` at `now`: created, replayed
    /// (the same `idempotencyKey`) or already submitted that day; throws `SurveysError`
    /// `.noSurvey`, `.surveyChanged` or `.invalidAnswers` (every problem), storing nothing.
    /// `prefetched` is the past read with the member's session, used when it is what the rule
    /// needs at `now`.
    public func submit(
        campus: Campus, user: UserID, surveyVersion: Int, answers raw: [String: JSONValue], idempotencyKey: String?, at now: Date,
        prefetched: PrefetchedHistory? = nil
    ) async throws -> WriteOutcome {
        let (questionnaire, answers) = try Self.checked(
            raw, version: surveyVersion, against: try await questionnaires.active(campus: campus.id), campus: campus)
        return try await submit(
            campus: campus, user: user, questionnaire: questionnaire, answers: answers, idempotencyKey: idempotencyKey,
            idempotencyDigest: idempotencyKey.map { _ in Self.digest(surveyVersion: surveyVersion, answers: raw) }, at: now,
            prefetched: prefetched)
    }

    /// `raw` checked against `questionnaire` (the active one, which `version` must name): the
    /// questionnaire and the answers, or `SurveysError` `.noSurvey`, `.surveyChanged` or
    /// `.invalidAnswers` (every problem).
    static func checked(
        _ raw: [String: JSONValue], version: Int, against questionnaire: Questionnaire?, campus: Campus
    ) throws -> (Questionnaire, SurveyAnswers) {
        guard let questionnaire else { throw SurveysError.noSurvey(campus: campus.name) }
        guard version == questionnaire.version else { throw SurveysError.surveyChanged(active: questionnaire.version, given: version) }
        let (answers, problems) = QuestionnaireRules.check(raw, against: questionnaire)
        guard problems.isEmpty else { throw SurveysError.invalidAnswers(problems) }
        return (questionnaire, answers)
    }

    /// What an `Idempotency-Key` is bound to: the SHA-256 of the use case, the questionnaire
    /// version and the answers as canonical JSON (keys sorted), so the same body however
    /// spaced or ordered is the same request, and any other is not.
    static func digest(surveyVersion: Int, answers: [String: JSONValue]) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var hasher = SHA256()
        hasher.update(data: Data("attestation v\(surveyVersion)\n".utf8))
        hasher.update(data: (try? encoder.encode(JSONValue.object(answers))) ?? Data())
        return Data(hasher.finalize())
    }

    func submit(
        campus: Campus, user: UserID, questionnaire: Questionnaire, answers: SurveyAnswers, idempotencyKey: String?,
        idempotencyDigest: Data? = nil, at now: Date, prefetched: PrefetchedHistory? = nil
    ) async throws -> WriteOutcome {
        let date = campus.localDate(at: now)
        let endOfDay = campus.nextWindow(after: now)
        // The rule first: what it reads of the past is all the history fetched.
        let configured: Result<(id: String, rule: any BadgeRule), any Error>
        do { configured = .success(try await rule(for: campus, questionnaire: questionnaire)) } catch { configured = .failure(error) }
        let need = (try? configured.get())?.rule.historyNeed ?? .nothing
        let history: [PastAttestation]
        if let prefetched, prefetched.user == user, prefetched.day == HistoryDay(campus: campus.id, date: date, need: need) {
            history = prefetched.history
        } else {
            history = try await self.history(campus: campus.id, user: user, before: date, need: need)
        }
        let input = BadgeRuleInput(
            answers: answers, questionnaire: questionnaire,
            campusSettings: campus.settings.bytes.withUnsafeBytes { try? JSONValue(parsing: $0) } ?? .object([:]),
            history: history, date: date, now: now, endOfDay: endOfDay)
        let (ruleID, ruleVersion, decision) = await decide(configured, campus: campus, input: input)
        let attestation = Attestation(
            id: .timeOrdered(at: now), date: date, submittedAt: now, onTime: campus.isOnTime(now), surveyVersion: questionnaire.version,
            color: decision.color, reason: String(decision.reason.prefix(500)), validUntil: min(decision.validUntil, endOfDay),
            ruleID: ruleID, ruleVersion: ruleVersion, idempotencyKey: idempotencyKey, idempotencyDigest: idempotencyDigest)
        return try await writer.submit(
            PendingAttestation(
                campus: campus.id, campusSlug: campus.slug, user: user, attestation: attestation, answers: answers,
                questionnaire: questionnaire))
    }

    /// The member's attestations of the `need.days` days before `date`, newest first, with
    /// the answers `need` names. Concurrent submissions of one campus, day and need read
    /// their histories in one query; a rule that needs no past costs no query.
    func history(campus: CampusID, user: UserID, before date: LocalDate, need: HistoryNeed) async throws -> [PastAttestation] {
        guard need.days > 0 else { return [] }
        return try await histories.value(for: user, in: HistoryDay(campus: campus, date: date, need: need)) ?? []
    }

    struct HistoryDay: Hashable, Sendable {
        var campus: CampusID
        var date: LocalDate
        var need: HistoryNeed
    }

    private let histories: LookupBatcher<HistoryDay, UserID, [PastAttestation]>

    static func histories(_ client: PostgresClient, day: HistoryDay, users: [UserID]) async throws -> [UserID: [PastAttestation]] {
        let questions = day.need.questions?.sorted()
        let rows = try await client.query(
            """
            SELECT user_id, local_date, color, \(pastAnswers(questions)) FROM attestations
            WHERE campus_id = \(day.campus) AND user_id = ANY(\(users.map(\.rawValue)))
              AND local_date >= \(day.date.adding(days: -day.need.days)) AND local_date < \(day.date)
            ORDER BY user_id, local_date DESC
            """, campus: day.campus.rawValue)
        let past = try PastColumns(rows, questions: questions), user = try rows.position(of: "user_id")
        var histories: [UserID: [PastAttestation]] = [:]
        for row in rows {
            histories[UserID(try row.decode(at: user, as: UUID.self)), default: []].append(try past.attestation(in: row))
        }
        return histories
    }

    // MARK: The member's session and past in one read

    /// The past a submission's rule needs, read with the member's session.
    public struct PrefetchedHistory: Sendable {
        let user: UserID
        let day: HistoryDay
        let history: [PastAttestation]
    }

    /// The member about to submit: their verified session and, when it was read from the
    /// database, the past their campus's rule needs for a submission today.
    public struct Submitter: Sendable {
        public let session: SessionStore.Session
        public let history: PrefetchedHistory?

        /// A session the server keeps (`SessionStore.cached`): its past is read at the submission.
        public init(kept session: SessionStore.Session) { (self.session, history) = (session, nil) }

        init(session: SessionStore.Session, history: PrefetchedHistory?) { (self.session, self.history) = (session, history) }
    }

    /// The session `token` stands for at `campus` (nil when it is unknown there, expired or
    /// revoked, as `SessionStore.authenticate`), and with it, in the same statement,
    /// the member's past as the campus's rule needs it for a submission at `now`. A session
    /// the server keeps costs no read (its past is read at the submission), nor does a rule
    /// that needs no past; otherwise submitting costs one round trip fewer: the session and
    /// the history were the two reads before every submission's write, each a batch of its
    /// own (docs/performance.md, "Issue 34, third round").
    public func submitter(campus: Campus, token: SessionStore.SessionToken, at now: Date) async throws -> Submitter? {
        if let kept = sessions.cached(campus: campus.id, token: token) { return Submitter(session: kept, history: nil) }
        guard let day = try await historyDay(campus: campus, at: now) else {
            return try await sessions.authenticate(campus: campus.id, token: token).map { Submitter(session: $0, history: nil) }
        }
        let verification = sessions.verification(campus: campus.id)
        let hash = token.hash
        let found = try await submitters.value(for: hash, in: day)
        guard let session = sessions.keep(found?.session, hash: hash, verification: verification) else { return nil }
        return Submitter(session: session, history: found.map { PrefetchedHistory(user: session.user.id, day: day, history: $0.history) })
    }

    /// What the campus's rule would read of the past for a submission at `now`: nil when there
    /// is no active questionnaire, the rule cannot be built, or it needs no past.
    private func historyDay(campus: Campus, at now: Date) async throws -> HistoryDay? {
        guard let questionnaire = try await questionnaires.active(campus: campus.id),
            let configured = try? await rule(for: campus, questionnaire: questionnaire), configured.rule.historyNeed.days > 0
        else { return nil }
        return HistoryDay(campus: campus.id, date: campus.localDate(at: now), need: configured.rule.historyNeed)
    }

    private let submitters: LookupBatcher<HistoryDay, Data, (session: SessionStore.Session, history: [PastAttestation])>

    /// The live sessions among `hashes` with their members' past of `day`, in two kinds of
    /// row: one per session (the past columns null) and one per past day (the session columns
    /// null, `past_of` naming the member; a member with two sessions here has their past
    /// once). The sessions are materialised first, and the past is read for the members they
    /// name. With the past on rows of its own, PostgreSQL sends each member's columns, roles
    /// among them, once rather than once per past day, and sorts nothing (one row per member
    /// and day cost it more CPU: docs/performance.md, "Issue 34, fifth round").
    static func submitters(
        _ client: PostgresClient, day: HistoryDay, hashes: [Data]
    ) async throws -> [Data: (session: SessionStore.Session, history: [PastAttestation])] {
        let questions = day.need.questions?.sorted()
        let rows = try await client.query(
            """
            WITH live AS MATERIALIZED (\(SessionStore.live(campus: day.campus, hashes: hashes)))
            SELECT live.*, NULL::uuid AS past_of, NULL AS local_date, NULL AS color, \(pastAnswers(questions, null: true)) FROM live
            UNION ALL
            SELECT \(SessionStore.noLiveColumns), a.user_id, a.local_date, a.color, \(pastAnswers(questions))
            FROM attestations a
            WHERE a.campus_id = \(day.campus) AND a.user_id = ANY(ARRAY(SELECT id FROM live))
              AND a.local_date >= \(day.date.adding(days: -day.need.days)) AND a.local_date < \(day.date)
            """, campus: day.campus.rawValue)
        let past = try PastColumns(rows, questions: questions)
        let token = try rows.position(of: "token_hash"), owner = try rows.position(of: "past_of")
        var sessions: [(hash: Data, session: SessionStore.Session)] = []
        var pasts: [UserID: [PastAttestation]] = [:]
        for row in rows {
            if row.isNull(at: token) {
                pasts[UserID(try row.decode(at: owner, as: UUID.self)), default: []].append(try past.attestation(in: row))
            } else {
                sessions.append((try row.decode(at: token, as: Data.self), try SessionStore.session(from: row)))
            }
        }
        var found: [Data: (session: SessionStore.Session, history: [PastAttestation])] = [:]
        for (hash, session) in sessions {
            found[hash] = (session, (pasts[session.user.id] ?? []).sorted { $0.date > $1.date })
        }
        return found
    }

    /// The columns of the stored answers a rule reads: with every question, the stored
    /// object (`answers`); with named ones, whether the answers were purged (`purged`) and
    /// each named answer alone (`a0`, `a1`, … in `questions`' order; null when not given).
    /// Only those leave the database, and PostgreSQL builds no object for them: building one
    /// per row was a sixth of the history read's cost (pgbench, 10 members of 9 days each).
    /// With `null`, the same columns, each NULL: a row that is no past day.
    static func pastAnswers(_ questions: [String]?, null: Bool = false) -> SQL {
        guard let questions else { return null ? "NULL AS answers" : "answers" }
        var columns: SQL = null ? "NULL AS purged" : "answers IS NULL AS purged"
        for (index, question) in questions.enumerated() {
            columns = columns + (null ? ", NULL AS " : ", answers -> \(question)::text AS ") + SQL(unsafeSQL: "a\(index)")
        }
        return columns
    }

    /// Where a result's past-attestation columns are (`local_date`, `color` and those of
    /// `pastAnswers(questions)`), found once per result: a batch's history is a hundred rows.
    struct PastColumns {
        let date: Int, color: Int
        /// With every question: the stored object.
        let answers: Int?
        /// With named questions: whether the answers were purged, and each answer's column.
        let purged: Int?
        let named: [(question: String, position: Int)]

        init(_ rows: PostgresRows, questions: [String]?) throws {
            date = try rows.position(of: "local_date")
            color = try rows.position(of: "color")
            if let questions {
                (answers, purged) = (nil, try rows.position(of: "purged"))
                named = try questions.enumerated().map { ($0.element, try rows.position(of: "a\($0.offset)")) }
            } else {
                (answers, purged, named) = (try rows.position(of: "answers"), nil, [])
            }
        }

        func attestation(in row: PostgresRow) throws -> PastAttestation {
            PastAttestation(
                date: try row.decode(at: date), color: BadgeColor(rawValue: try row.decode(at: color)) ?? .yellow,
                answers: try answers(in: row))
        }

        /// nil once purged, else those of the questions given that day (all of them when
        /// every question was read).
        func answers(in row: PostgresRow) throws -> SurveyAnswers? {
            if let answers { return try row.decode(at: answers, as: PostgresJSON?.self).map(AttestationService.storedAnswers) }
            if let purged, try row.decode(at: purged, as: Bool.self) { return nil }
            var found: SurveyAnswers = [:]
            for (question, position) in named {
                // Absent (SQL NULL) or JSON null: not given, as `jsonb_strip_nulls` did.
                if let answer = try row.decode(at: position, as: StoredAnswer?.self)?.value { found[question] = answer }
            }
            return found
        }
    }

    /// One stored answer read in place from its column (`answers -> 'question'`): no copy of
    /// the text, and `true` and `false`, which most answers are, without the parser. Its
    /// value is nil for JSON null.
    struct StoredAnswer: PostgresDecodable {
        let value: AnswerValue?

        static func decode(from bytes: UnsafeRawBufferPointer, type: PostgresType) throws -> StoredAnswer {
            let text = try PostgresJSON.text(in: bytes, type: type)
            if text.elementsEqual("true".utf8) { return StoredAnswer(value: .bool(true)) }
            if text.elementsEqual("false".utf8) { return StoredAnswer(value: .bool(false)) }
            let json: JSONValue
            do { json = try JSONValue(parsing: text) } catch { throw PostgresCodingFailure("a stored answer is not JSON: \(error)") }
            if case .null = json { return StoredAnswer(value: nil) }
            return StoredAnswer(value: try storedAnswer(json))
        }
    }

    /// Stored answers (an object of booleans, numbers and strings), read with the project's
    /// JSON parser. Every submission reads its member's recent past, and `JSONDecoder` took
    /// a third of the server's CPU per submission reading 14 days of it.
    static func storedAnswers(_ json: PostgresJSON) throws -> SurveyAnswers {
        guard case .object(let object) = try JSONValue(parsing: json.bytes) else {
            throw PostgresCodingFailure("stored answers are not a JSON object")
        }
        return try object.mapValues(storedAnswer)
    }

    /// One stored answer: a boolean, a number or a string.
    static func storedAnswer(_ value: JSONValue) throws -> AnswerValue {
        guard let answer = AnswerValue(value) else { throw PostgresCodingFailure("a stored answer is not a boolean, number or string") }
        return answer
    }

    /// One page of the member's own attestations, newest first: those before `before`
    /// (exclusive; nil for the newest), at most `limit`, with the date to continue from.
    public func page(
        campus: CampusID, user: UserID, before: LocalDate?, limit: Int
    ) async throws -> (items: [(attestation: Attestation, answers: SurveyAnswers?)], next: LocalDate?) {
        let bound: SQL = before.map { "AND local_date < \($0)" } ?? ""
        let rows = try await client.query(
            """
            SELECT id, local_date, submitted_at, on_time, survey_version, color, reason, valid_until, rule_id, rule_version,
                   idempotency_key, idempotency_digest, answers
            FROM attestations
            WHERE campus_id = \(campus) AND user_id = \(user) \(bound)
            ORDER BY local_date DESC
            LIMIT \(limit + 1)
            """, campus: campus.rawValue)
        let items = try rows.prefix(limit).map { row in
            (
                attestation: try AttestationWriter.attestation(from: row),
                answers: try row.decode("answers", as: PostgresJSON?.self).map(Self.storedAnswers)
            )
        }
        return (items, rows.count > limit ? items.last?.attestation.date : nil)
    }

    /// Where rules that may block are evaluated: threads of their own, never Swift's
    /// cooperative pool (one thread per core). A rule blocking a cooperative thread held back
    /// everything else the server did, the budget's own timer with it: under load a 0.5 s rule
    /// finished before its 0.1 s budget fired. A rule still running past its budget keeps its
    /// thread until it returns; with all four held, later rules wait and overrun (yellow).
    static let blockingRules: NIOThreadPool = {
        let pool = NIOThreadPool(numberOfThreads: 4)
        pool.start()
        return pool
    }()

    /// Runs the campus's rule within the budget; a failure or overrun gives yellow "needs review".
    func decide(
        _ found: Result<(id: String, rule: any BadgeRule), any Error>, campus: Campus, input: BadgeRuleInput
    ) async -> (String, String, BadgeDecision) {
        let review = BadgeDecision(color: .yellow, reason: Self.needsReview, validUntil: input.endOfDay)
        let configured: (id: String, rule: any BadgeRule)
        do {
            configured = try found.get()
        } catch {
            logger.error("badge rule unavailable", metadata: ["campus": "\(campus.slug)", "error": "\(error)"])
            writer.metrics.ruleUnavailable.increment()
            return ("unavailable", "", review)
        }
        let rule = configured.rule
        let outcome = await withinBudget(inline: rule.evaluatesInline) { try rule.evaluate(input) }
        switch outcome {
        case .success(let decision)? where decision.color != .gray && PostgresDate.holds(decision.validUntil):
            return (configured.id, rule.version, decision)
        case .success(let decision)? where decision.color != .gray:
            // No time PostgreSQL holds (NaN, infinite, or ages away): it could not be stored.
            logger.error(
                "badge rule answered a validity that is no storable time",
                metadata: ["campus": "\(campus.slug)", "rule": "\(configured.id)"])
            writer.metrics.ruleError.increment()
        case .success?:
            logger.error("badge rule answered gray", metadata: ["campus": "\(campus.slug)", "rule": "\(configured.id)"])
            writer.metrics.ruleGray.increment()
        case .failure(let error)?:
            logger.error("badge rule failed", metadata: ["campus": "\(campus.slug)", "rule": "\(configured.id)", "error": "\(error)"])
            writer.metrics.ruleError.increment()
        case nil:
            logger.error(
                "badge rule overran its budget",
                metadata: ["campus": "\(campus.slug)", "rule": "\(configured.id)", "budget": "\(ruleBudget)"])
            writer.metrics.ruleOverran.increment()
        }
        return (configured.id, rule.version, review)
    }

    /// `work` (a rule's `evaluate` or `decide`) within the rule budget; nil when it overran. A
    /// rule that cannot block runs here (past the budget it still counts as an overrun); any
    /// other on `blockingRules`, answered by the budget's timer when it is late. An answer that
    /// comes past the budget is an overrun whether or not the timer has fired yet: on a loaded
    /// machine the timer's task can wake late, and the verdict must not depend on that.
    func withinBudget<Value: Sendable>(
        inline: Bool, _ work: @escaping @Sendable () throws -> Value
    ) async -> Result<Value, any Error>? {
        let clock = ContinuousClock(), start = clock.now, budget = ruleBudget
        if inline {
            let result = Result { try work() }
            return clock.now - start > budget ? nil : result
        }
        let verdict = FirstOutcome<Result<Value, any Error>?>()
        return await withCheckedContinuation { continuation in
            verdict.set(continuation)
            Self.blockingRules.submit { state in
                guard case .active = state else { return verdict.finish(nil) }
                let result = Result { try work() }
                verdict.finish(clock.now - start > budget ? nil : result)
            }
            verdict.setTimer(
                Task {
                    try await timerSleep(for: budget)
                    verdict.finish(nil)
                })
        }
    }

    /// The campus's configured rule (`campus_plugins`, kind badge-rule), else `standard` with
    /// its default table; built once per campus and questionnaire version, kept 5 s.
    func rule(for campus: Campus, questionnaire: Questionnaire) async throws -> (id: String, rule: any BadgeRule) {
        try await rules.value(for: RuleKey(campus: campus.id, version: questionnaire.version)) {
            let enabled = try await plugins.list(campus: campus.id, kind: .badgeRule).first
            let id = enabled?.id ?? "standard"
            return (id, try registry.makeBadgeRule(id: id, settings: enabled?.settings ?? .null, questionnaire: questionnaire))
        }
    }

    /// `reasons` (badges' and attestations' of `campus`) in `language`, a page's: each as the
    /// campus's rule words it (`BadgeRule.localize`), else as given. The rule of the campus's
    /// active questionnaire answers for every reason: one of an older table it no longer has
    /// is shown as written.
    public func localize(_ reasons: [String], campus: Campus, language: String) async -> [String] {
        guard !reasons.isEmpty, let questionnaire = try? await questionnaires.active(campus: campus.id),
            let configured = try? await rule(for: campus, questionnaire: questionnaire)
        else { return reasons }
        return reasons.map { configured.rule.localize(reason: $0, language: language) ?? $0 }
    }

    /// What the campus's rule shows given the member's health record: its `decide` weighing
    /// `health` against `answered` (what the day's answers gave; nil when none), or the
    /// platform's default when there is no questionnaire or the rule cannot be built. A
    /// `validUntil` past the end of the day is cut to it.
    public func decide(health: HealthStatus, answered: BadgeDecision?, campus: Campus, at now: Date) async -> BadgeDecision? {
        let endOfDay = campus.nextWindow(after: now)
        let input = HealthInput(
            answered: answered, health: health, date: campus.localDate(at: now),
            campusSettings: campus.settings.bytes.withUnsafeBytes { try? JSONValue(parsing: $0) } ?? .object([:]), endOfDay: endOfDay,
            timeZone: campus.zone)
        guard let questionnaire = try? await questionnaires.active(campus: campus.id),
            let configured = try? await rule(for: campus, questionnaire: questionnaire)
        else { return input.standardDecision }
        let rule = configured.rule
        // Within the same budget as `evaluate`: past it, the platform's default (red while an
        // isolation or quarantine lasts), so a slow rule never holds a badge read or hides a record.
        guard case .success(let decided)? = await withinBudget(inline: rule.evaluatesInline, { rule.decide(input) }) else {
            logger.error(
                "badge rule's decide overran its budget",
                metadata: ["campus": "\(campus.slug)", "rule": "\(configured.id)", "budget": "\(ruleBudget)"])
            writer.metrics.ruleOverran.increment()
            return input.standardDecision
        }
        guard var decision = decided else { return nil }
        if !decision.validUntil.timeIntervalSince1970.isFinite || decision.validUntil > endOfDay { decision.validUntil = endOfDay }
        return decision
    }

    /// `attestation` as its member sees it: with a health record, what `decide` makes of it.
    public func shown(_ attestation: Attestation, health: HealthStatus?, campus: Campus, at now: Date) async -> Attestation {
        guard let health else { return attestation }
        let answered = BadgeDecision(color: attestation.color, reason: attestation.reason, validUntil: attestation.validUntil)
        guard let decided = await decide(health: health, answered: answered, campus: campus, at: now), decided.color != .gray else {
            return attestation
        }
        var shown = attestation
        (shown.color, shown.reason, shown.validUntil) = (decided.color, String(decided.reason.prefix(500)), decided.validUntil)
        return shown
    }
}
