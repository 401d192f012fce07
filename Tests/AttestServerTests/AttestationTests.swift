import AttestPlugins
import AttestPluginsTesting
import AttestPostgres
import AttestTestSupport
import BuiltinPlugins
import Foundation
import HTTPTypes
import Hummingbird
import Identity
import Synchronization
import Tenancy
import Testing

@testable import AttestAPI
@testable import AttestServer
@testable import AttestWeb
@testable import Surveys

@Suite("Attestations")
struct AttestationTests {
    static let path = "/v1/campuses/{campus}/attestations"
    static let healthy = #"{"fever": false, "cough": false}"#

    static let draft = QuestionnaireRules.Draft(
        title: "Check",
        questions: [
            Question(id: "fever", kind: .boolean, prompt: "Fever?", symptom: true),
            Question(id: "cough", kind: .boolean, prompt: "Cough?", symptom: true),
            Question(id: "positive_test", kind: .boolean, required: false, prompt: "Positive test?"),
            Question(id: "temperature", kind: .number, required: false, prompt: "Temperature", min: 34, max: 43, unit: "°C"),
        ])

    static func body(_ answers: String, version: Int = 1) -> String { #"{"surveyVersion": \#(version), "answers": \#(answers)}"# }

    static func setUp(
        clock: TestClock, registry: PluginRegistry = .builtin, timeZone: String = "America/New_York", slug: String = "north",
        settingsStyle: TransactionSettings.Style = .automatic
    ) async throws -> (TestServer, Campus) {
        let server = try await TestServer.make(registry: registry, clock: clock.read, settingsStyle: settingsStyle)
        let campus = try await server.campus(slug, timeZone: timeZone)
        _ = try await QuestionnaireStore(client: server.pool).publish(campus: campus, draft: draft, actor: "test")
        return (server, campus)
    }

    static func count(_ server: TestServer, _ campus: Campus) async throws -> Int {
        try await server.pool.query("SELECT count(*) AS n FROM attestations", campus: campus.id.rawValue)[0].decode("n")
    }

    @Test func onceADayAndTheSecondIsA409NamingTheDateAndTheNextWindow() async throws {
        let clock = try TestClock("2026-11-20T14:30:00Z")  // 09:30 in New York
        let (server, campus) = try await Self.setUp(clock: clock)
        let (_, token) = try await server.user("a@example.edu", at: campus)
        try await server.run { api in
            let first = try await api.send(
                .post, "/v1/campuses/north/attestations", template: Self.path, token: token, json: Self.body(Self.healthy))
            #expect(first.status == 201)
            #expect(first.json["date"] as? String == "2026-11-20")
            // A time-ordered id (UUID version 7) of the submission's instant, 2026-11-20T14:30:00Z.
            #expect((first.json["id"] as? String)?.hasPrefix("01a1f95d-3e40-7") == true, "\(first.body)")
            #expect(first.json["onTime"] as? Bool == true)
            let badge = first.json["badge"] as? [String: Any]
            #expect(badge?["color"] as? String == "green")
            #expect(badge?["validUntil"] as? String == "2026-11-21T05:00:00Z")

            let second = try await api.send(
                .post, "/v1/campuses/north/attestations", template: Self.path, token: token,
                json: Self.body(#"{"fever": true, "cough": true}"#))
            #expect(second.status == 409)
            #expect(second.problem.detail.contains("2026-11-20 (America/New_York)"))
            #expect(second.problem.detail.contains("00:00 America/New_York, in 14 h 30 min"))

            // A new local day opens a new window.
            try clock.set("2026-11-21T05:00:00Z")
            let tomorrow = try await api.send(
                .post, "/v1/campuses/north/attestations", template: Self.path, token: token, json: Self.body(Self.healthy))
            #expect(tomorrow.status == 201)
            #expect(tomorrow.json["date"] as? String == "2026-11-21")
            #expect(try await Self.count(server, campus) == 2)
        }
    }

    @Test func theDeadlineEdgeIsOnTimeUntil095959() async throws {
        let clock = try TestClock("2026-11-20T14:59:59Z")  // 09:59:59 EST
        let (server, campus) = try await Self.setUp(clock: clock)
        let (_, early) = try await server.user("early@example.edu", at: campus)
        let (_, late) = try await server.user("late@example.edu", at: campus)
        try await server.run { api in
            let onTime = try await api.send(
                .post, "/v1/campuses/north/attestations", template: Self.path, token: early, json: Self.body(Self.healthy))
            #expect(onTime.json["onTime"] as? Bool == true)
            try clock.set("2026-11-20T15:00:00Z")  // 10:00:00 EST
            let tardy = try await api.send(
                .post, "/v1/campuses/north/attestations", template: Self.path, token: late, json: Self.body(Self.healthy))
            #expect(tardy.json["onTime"] as? Bool == false)
            let stats = try await server.pool.query(
                "SELECT sum(submitted) AS submitted, sum(on_time) AS on_time, sum(late) AS late, sum(green) AS green FROM daily_stats",
                campus: campus.id.rawValue)
            #expect(try stats[0].decode("submitted", as: Int.self) == 2)
            #expect(try stats[0].decode("on_time", as: Int.self) == 1)
            #expect(try stats[0].decode("late", as: Int.self) == 1)
            #expect(try stats[0].decode("green", as: Int.self) == 2)
        }
    }

    @Test func campusesOnEitherSideOfTheDateLineGetDifferentDatesAtOneInstant() async throws {
        let clock = try TestClock("2026-06-15T11:30:00Z")
        let server = try await TestServer.make(clock: clock.read)
        let east = try await server.campus("kiritimati", timeZone: "Pacific/Kiritimati")  // UTC+14
        let west = try await server.campus("honolulu", timeZone: "Pacific/Honolulu")  // UTC−10
        for campus in [east, west] {
            _ = try await QuestionnaireStore(client: server.pool).publish(campus: campus, draft: Self.draft, actor: "test")
        }
        let (_, eastToken) = try await server.user("e@example.edu", at: east)
        let (_, westToken) = try await server.user("w@example.edu", at: west)
        try await server.run { api in
            let a = try await api.send(
                .post, "/v1/campuses/kiritimati/attestations", template: Self.path, token: eastToken, json: Self.body(Self.healthy))
            let b = try await api.send(
                .post, "/v1/campuses/honolulu/attestations", template: Self.path, token: westToken, json: Self.body(Self.healthy))
            #expect(a.json["date"] as? String == "2026-06-16")
            #expect(b.json["date"] as? String == "2026-06-15")
        }
    }

    /// An `Idempotency-Key` is bound to what it came with (draft-ietf-httpapi-idempotency-key-header):
    /// the same body, however spaced or ordered, replays the 201; another body is a 422 naming
    /// the key, on the same day and any later one.
    @Test func anIdempotencyKeyReturnsTheOriginal201() async throws {
        let clock = try TestClock("2026-11-20T20:00:00Z")
        let (server, campus) = try await Self.setUp(clock: clock)
        let (_, token) = try await server.user("i@example.edu", at: campus)
        try await server.run { api in
            func post(_ key: String, _ answers: String) async throws -> (Int, String?, String?) {
                let response = try await api.client.execute(
                    uri: "/v1/campuses/north/attestations", method: .post,
                    headers: [
                        .authorization: "Bearer \(token)", .contentType: "application/json", HTTPField.Name("Idempotency-Key")!: key,
                    ],
                    body: ByteBuffer(string: Self.body(answers)))
                let json = try? JSONSerialization.jsonObject(with: Data(String(buffer: response.body).utf8)) as? [String: Any]
                return (Int(response.status.code), json?["id"] as? String, response.headers[HTTPField.Name("Idempotent-Replayed")!])
            }
            let first = try await post("retry-me-1", Self.healthy)
            let retry = try await post("retry-me-1", Self.healthy)
            #expect(first.0 == 201 && retry.0 == 201)
            #expect(first.1 != nil && first.1 == retry.1)
            #expect(first.2 == nil && retry.2 == "true")
            let reordered = try await post("retry-me-1", #"{ "cough" : false,   "fever": false }"#)
            #expect(reordered.0 == 201 && reordered.1 == first.1 && reordered.2 == "true")
            let changed = try await api.send(
                .post, "/v1/campuses/north/attestations", template: Self.path, token: token,
                json: Self.body(#"{"fever": true, "cough": false}"#),
                headers: [HTTPField.Name("Idempotency-Key")!: "retry-me-1"])
            #expect(
                changed.status == 422 && changed.problem.type.hasSuffix("/idempotency-key-reused")
                    && changed.problem.fields == ["Idempotency-Key"])
            let other = try await post("another-key", Self.healthy)
            #expect(other.0 == 409)
            // A later day: the key still names that first body.
            clock.advance(by: 86_400)
            let nextDay = try await api.send(
                .post, "/v1/campuses/north/attestations", template: Self.path, token: token,
                json: Self.body(#"{"fever": true, "cough": true}"#),
                headers: [HTTPField.Name("Idempotency-Key")!: "retry-me-1"])
            #expect(nextDay.status == 422 && nextDay.problem.fields == ["Idempotency-Key"], "\(nextDay.body)")
            clock.advance(by: -86_400)
            let bad = try await api.client.execute(
                uri: "/v1/campuses/north/attestations", method: .post,
                headers: [
                    .authorization: "Bearer \(token)", .contentType: "application/json",
                    HTTPField.Name("Idempotency-Key")!: String(repeating: "k", count: 201),
                ],
                body: ByteBuffer(string: Self.body(Self.healthy)))
            #expect(bad.status == .unprocessableContent)
            #expect(try await Self.count(server, campus) == 1)
        }
    }

    /// Two requests racing with one key and one body store one attestation; with one key and
    /// two bodies, one is stored and the other refused.
    @Test func racingRequestsWithOneKeyStoreOneAttestation() async throws {
        let clock = try TestClock("2026-11-20T14:00:00Z")
        let (server, campus) = try await Self.setUp(clock: clock)
        var tokens: [String] = []
        for index in 0..<12 { tokens.append(try await server.user("race\(index)@example.edu", at: campus).token) }
        let members = tokens
        try await server.run { api in
            try await api.withConnections(members.count * 2) { clients in
                let statuses = try await withThrowingTaskGroup(of: (Int, Int).self) { group in
                    for (index, client) in clients.enumerated() {
                        let member = index / 2, second = index % 2 == 1
                        // Even members send the same body twice; odd ones two bodies.
                        let answers = member % 2 == 1 && second ? #"{"fever": true, "cough": false}"# : Self.healthy
                        group.addTask {
                            let reply = try await client.send(
                                .post, "/v1/campuses/north/attestations", template: Self.path, token: members[member],
                                json: Self.body(answers),
                                headers: [HTTPField.Name("Idempotency-Key")!: "race-key"])
                            return (member, reply.status)
                        }
                    }
                    var seen: [Int: [Int]] = [:]
                    for try await (member, status) in group { seen[member, default: []].append(status) }
                    return seen
                }
                for (member, pair) in statuses {
                    #expect(pair.sorted() == (member % 2 == 0 ? [201, 201] : [201, 422]), "member \(member): \(pair)")
                }
            }
            #expect(try await Self.count(server, campus) == members.count)
        }
    }

    @Test func theDirectlyWritten201IsWhatJSONEncoderWrites() throws {
        let attestation = Attestation(
            id: UUID(), date: LocalDate(year: 2026, month: 11, day: 20), submittedAt: Date(timeIntervalSince1970: 1_795_190_400.75),
            onTime: false, surveyVersion: 12, color: .yellow, reason: "Say \"why\"\n\\ – ünïcode 😀 \u{01}",
            validUntil: Date(timeIntervalSince1970: 1_795_215_600), ruleID: "standard", ruleVersion: "1", idempotencyKey: nil)
        let body = AttestationRoutes.AttestationBody(attestation)
        let direct = try JSONSerialization.jsonObject(with: Data(body.json.text.utf8)) as? NSDictionary
        let encoded = try JSONSerialization.jsonObject(with: JSONEncoder().encode(body)) as? NSDictionary
        #expect(direct != nil && direct == encoded, "\(body.json.text)")
    }

    @Test func badSubmissionsAre4xxWithFieldsAndStoreNothing() async throws {
        let clock = try TestClock("2026-11-20T20:00:00Z")
        let (server, campus) = try await Self.setUp(clock: clock)
        let (_, token) = try await server.user("v@example.edu", at: campus)
        try await server.run { api in
            let cases: [(String, Int, [String])] = [
                (#"{"answers": {}}"#, 422, ["surveyVersion"]),
                (#"{"surveyVersion": "1", "answers": {"fever": false, "cough": false}}"#, 422, ["surveyVersion"]),
                (#"{"surveyVersion": 1, "answers": [true]}"#, 422, ["answers"]),
                (#"{"surveyVersion": 1, "answers": {}, "color": "green"}"#, 422, ["color"]),
                (Self.body(#"{"fever": "no", "cough": false}"#), 422, ["answers.fever"]),
                (Self.body(#"{"fever": false}"#), 422, ["answers.cough"]),
                (Self.body(#"{"fever": false, "cough": false, "shoe_size": 44}"#), 422, ["answers.shoe_size"]),
                (Self.body(#"{"fever": false, "cough": false, "temperature": 99}"#), 422, ["answers.temperature"]),
                (
                    Self.body(#"{"fever": false, "cough": false, "'); DROP TABLE attestations;--": true}"#), 422,
                    ["answers.'); DROP TABLE attestations;--"]
                ),
                (Self.body(Self.healthy, version: 2), 409, []),
                ("{\"surveyVersion\": 1, \"answers\": {\"fever\": false, \"cough\": false, \"temperature\": 1e999}}", 400, []),
                ("not json", 400, []),
                // Parsers disagree on which of two equal keys counts: refused, not guessed.
                (Self.body(#"{"fever": false, "cough": false, "fever": true}"#), 400, []),
            ]
            for (json, status, fields) in cases {
                let reply = try await api.send(.post, "/v1/campuses/north/attestations", template: Self.path, token: token, json: json)
                #expect(reply.status == status, "\(json): \(reply.body)")
                #expect(Set(reply.problem.fields) == Set(fields), "\(json): \(reply.body)")
            }
            let repeated = try await api.send(
                .post, "/v1/campuses/north/attestations", template: Self.path, token: token,
                json: #"{"surveyVersion": 1, "surveyVersion": 2, "answers": {}}"#)
            #expect(repeated.status == 400 && repeated.body.contains(#"the key \"surveyVersion\" repeated at byte 21"#), "\(repeated.body)")
            // Bodies refused before any answer is looked at: too large, nested too deep, an
            // unpaired surrogate, bytes that are not UTF-8, another content type.
            let refused: [(json: String, contentType: String, status: Int, detail: String)] = [
                (
                    Self.body(#"{"fever": false, "cough": false, "x": "\#(String(repeating: "x", count: 70_000))"}"#), "application/json",
                    413, "larger than 64 KiB"
                ),
                (
                    Self.body(#"{"x": \#(String(repeating: "[", count: 5_000) + String(repeating: "]", count: 5_000))}"#),
                    "application/json", 400, "nesting deeper than 64"
                ),
                (Self.body(#"{"fever": false, "cough": "\ud800"}"#), "application/json", 400, "an unpaired surrogate"),
                (Self.body(Self.healthy), "text/plain", 415, "application/json"),
                (Self.body(Self.healthy), "application/json-patch+json", 415, "application/json"),
                // The media type in another case and with a parameter is still JSON: this
                // body then fails on its own fields.
                (#"{"surveyVersion": 1}"#, "Application/JSON; charset=utf-8", 422, "answers: is required"),
            ]
            for (json, contentType, status, detail) in refused {
                let reply = try await api.send(
                    .post, "/v1/campuses/north/attestations", template: Self.path, token: token, json: json, contentType: contentType)
                #expect(reply.status == status && reply.problem.detail.contains(detail), "\(json.prefix(60)): \(reply.body)")
            }
            let notUTF8 = try await api.client.execute(
                uri: "/v1/campuses/north/attestations", method: .post,
                headers: [.authorization: "Bearer \(token)", .contentType: "application/json"],
                body: ByteBuffer(
                    bytes: Array(#"{"surveyVersion": 1, "answers": {"fever": false, "cough": false, "x": ""#.utf8) + [0xC3, 0x28]
                        + Array(#""}}"#.utf8)))
            #expect(notUTF8.status == .badRequest && String(buffer: notUTF8.body).contains("UTF-8"), "\(String(buffer: notUTF8.body))")
            #expect(try await Self.count(server, campus) == 0)
            let stats = try await server.pool.query("SELECT count(*) AS n FROM daily_stats", campus: campus.id.rawValue)
            #expect(try stats[0].decode("n", as: Int.self) == 0)
            let unauthenticated = try await api.send(
                .post, "/v1/campuses/north/attestations", template: Self.path, json: Self.body(Self.healthy))
            #expect(unauthenticated.status == 401)
        }
    }

    @Test func fiftyConcurrentSubmitsByOneMemberStoreExactlyOne() async throws {
        let clock = try TestClock("2026-11-20T20:00:00Z")
        let (server, campus) = try await Self.setUp(clock: clock)
        let (_, token) = try await server.user("race@example.edu", at: campus)
        let (_, bystander) = try await server.user("by@example.edu", at: campus)
        try await server.run { api in
            // A connection each: the 51 requests are in the server at once.
            let statuses = try await api.withConnections(51) { clients in
                try await withThrowingTaskGroup(of: Int.self) { group in
                    for index in 0..<50 {
                        group.addTask {
                            let answers = index % 2 == 0 ? Self.healthy : #"{"fever": true, "cough": false}"#
                            return try await clients[index].send(
                                .post, "/v1/campuses/north/attestations", template: Self.path, token: token, json: Self.body(answers)
                            ).status
                        }
                    }
                    group.addTask {
                        try await clients[50].send(
                            .post, "/v1/campuses/north/attestations", template: Self.path, token: bystander, json: Self.body(Self.healthy)
                        ).status
                    }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
            }
            #expect(statuses.filter { $0 == 201 }.count == 2)  // one for the racer, one for the bystander
            #expect(statuses.filter { $0 == 409 }.count == 49)
            #expect(try await Self.count(server, campus) == 2)
            let stats = try await server.pool.query("SELECT sum(submitted) AS n FROM daily_stats", campus: campus.id.rawValue)
            #expect(try stats[0].decode("n", as: Int.self) == 2)
        }
    }

    /// Submissions resumed together, as a read batch resumes its callers, are written as one
    /// batch, though the first of them wakes the idle writer: its worker takes what is queued
    /// when it runs, not when it is woken (taken at the wake-up, the first went alone). On one
    /// serial executor the order is fixed: the resumed tasks run first in, first out, and the
    /// woken worker's turn comes after theirs.
    @Test func submissionsResumedTogetherAreWrittenInOneBatch() async throws {
        let clock = try TestClock("2026-11-20T14:00:00Z")
        let (server, campus) = try await Self.setUp(clock: clock)
        let questionnaire = try #require(try await QuestionnaireStore(client: server.pool).active(campus: campus.id))
        var members: [UserID] = []
        for index in 0..<13 { members.append(try await server.user("m\(index)@example.edu", at: campus).user.id) }
        let metrics = ServerMetrics()
        let writer = AttestationWriter(
            client: server.pool, logger: TestDatabase.testLogger, metrics: SubmissionMetrics(factory: metrics.factory))
        @Sendable func pending(_ user: UserID) -> PendingAttestation {
            let attestation = Attestation(
                id: UUID(), date: LocalDate(year: 2026, month: 11, day: 20), submittedAt: clock.read(), onTime: true,
                surveyVersion: 1, color: .green, reason: "test", validUntil: clock.read(), ruleID: "test",
                ruleVersion: "1", idempotencyKey: nil)
            return PendingAttestation(
                campus: campus.id, campusSlug: campus.slug, user: user, attestation: attestation,
                answers: ["fever": .bool(false), "cough": .bool(false)], questionnaire: questionnaire)
        }
        let executor = SerialThreadExecutor()
        let gate = Gate()
        let burst = Array(members.dropFirst())
        let outcomes = try await withTaskExecutorPreference(executor) {
            let running = Task(executorPreference: executor) { try await writer.run() }
            // One submission first: the worker writes it alone and is idle afterwards.
            let first = try await writer.submit(pending(members[0]))
            let rest = try await withThrowingTaskGroup(of: WriteOutcome.self) { group in
                for user in burst {
                    group.addTask {
                        await gate.wait()
                        return try await writer.submit(pending(user))
                    }
                }
                while gate.waiting < burst.count { await Task.yield() }
                gate.open()  // every waiter resumed in one loop, as a read batch does
                return try await group.reduce(into: [WriteOutcome]()) { $0.append($1) }
            }
            running.cancel()
            _ = await running.result
            return [first] + rest
        }
        executor.stop()
        #expect(outcomes.count == members.count)
        #expect(outcomes.allSatisfy { if case .created = $0 { true } else { false } })
        let text = metrics.registry.emitToString()
        #expect(metric(text, "attest_write_batch_size_count") == 2, "the first alone, then the twelve together: \(text)")
        #expect(metric(text, "attest_write_batch_size_sum") == 13)
        #expect(try await Self.count(server, campus) == 13)
    }

    /// Thirty members and one id that is no member are queued before the writer runs, so its
    /// worker takes them as one batch (the batch-size histogram says so); the ghost's insert
    /// breaks that batch's transaction, the batch is written again one by one (the split
    /// counter says so), and only the ghost's caller gets the error, the database's own.
    /// With either way of making the campus setting: with `.setLocal` (Citus) each transaction
    /// is an explicit block, and the ghost's failed block must not take the others with it.
    @Test(arguments: [TransactionSettings.Style.setConfig, .setLocal])
    func aFailingSubmissionInABatchFailsAloneAndTheRollupsCountOnlyWhatWasStored(style: TransactionSettings.Style) async throws {
        let clock = try TestClock("2026-11-20T14:00:00Z")
        let (server, campus) = try await Self.setUp(clock: clock, settingsStyle: style)
        let questionnaire = try #require(try await QuestionnaireStore(client: server.pool).active(campus: campus.id))
        var added: [UserID] = []
        for index in 0..<30 { added.append(try await server.user("m\(index)@example.edu", at: campus).user.id) }
        let members = added
        let ghost = UserID(UUID())  // not a member: its insert breaks the batch's transaction
        let metrics = ServerMetrics()
        let writer = AttestationWriter(
            client: server.pool, logger: TestDatabase.testLogger, metrics: SubmissionMetrics(factory: metrics.factory))
        let outcomes = try await withThrowingTaskGroup(of: (UserID, Result<WriteOutcome, any Error>).self) { group in
            for user in members + [ghost] {
                group.addTask {
                    let attestation = Attestation(
                        id: UUID(), date: LocalDate(year: 2026, month: 11, day: 20), submittedAt: clock.read(), onTime: true,
                        surveyVersion: 1, color: .yellow, reason: "test", validUntil: clock.read(), ruleID: "test",
                        ruleVersion: "1", idempotencyKey: nil)
                    let pending = PendingAttestation(
                        campus: campus.id, campusSlug: campus.slug, user: user, attestation: attestation,
                        answers: ["fever": .bool(true), "cough": .bool(false)], questionnaire: questionnaire)
                    do { return (user, .success(try await writer.submit(pending))) } catch { return (user, .failure(error)) }
                }
            }
            while writer.queued < members.count + 1 { try await Task.sleep(for: .milliseconds(5)) }
            let running = Task { try await writer.run() }
            var outcomes: [UserID: Result<WriteOutcome, any Error>] = [:]
            for try await (user, outcome) in group { outcomes[user] = outcome }
            running.cancel()
            return outcomes
        }
        let text = metrics.registry.emitToString()
        #expect(metric(text, "attest_write_batch_size_count") == 1, "\(text)")
        #expect(metric(text, "attest_write_batch_size_sum") == 31)
        #expect(metric(text, "attest_write_batches_split_total") == 1)
        #expect(metric(text, #"attest_submissions_total{outcome="failed"}"#) == 1)
        if case .failure(let error)? = outcomes[ghost], let database = error as? PostgresError {
            #expect(database.sqlState == "23503", "\(database)")  // foreign_key_violation
        } else {
            Issue.record("the ghost's submission did not fail with the database's error: \(String(describing: outcomes[ghost]))")
        }
        for member in members {
            guard case .success(.created)? = outcomes[member] else {
                Issue.record("member \(member) was not created: \(String(describing: outcomes[member]))")
                continue
            }
        }
        #expect(try await Self.count(server, campus) == 30)
        let stats = try await server.pool.query(
            "SELECT sum(submitted) AS n, sum(yellow) AS yellow FROM daily_stats", campus: campus.id.rawValue)
        #expect(try stats[0].decode("n", as: Int.self) == 30)
        #expect(try stats[0].decode("yellow", as: Int.self) == 30)
        let fevers = try await server.pool.query(
            "SELECT sum(count) AS n FROM daily_answer_counts WHERE question_id = 'fever' AND answer = 'true'", campus: campus.id.rawValue)
        #expect(try fevers[0].decode("n", as: Int.self) == 30)
        await server.pool.shutdown()
    }

    struct AlwaysRed: BadgeRule {
        var version: String { "red-1" }
        func evaluate(_ input: BadgeRuleInput) throws -> BadgeDecision {
            BadgeDecision(color: .red, reason: "Everyone stays home", validUntil: input.endOfDay.addingTimeInterval(86_400))
        }
    }

    /// A rule whose badge is valid until a time that is no time.
    struct NoTime: BadgeRule {
        let seconds: TimeInterval
        var version: String { "no-time-1" }
        func evaluate(_ input: BadgeRuleInput) throws -> BadgeDecision {
            BadgeDecision(color: .green, reason: "Valid until \(seconds)", validUntil: Date(timeIntervalSince1970: seconds))
        }
    }

    /// A validity of NaN, minus infinity or one ages before PostgreSQL's first timestamp could
    /// not be stored: the badge is
    /// "needs review" until the end of the day, as for any rule that fails, not an error.
    @Test func aRuleAnsweringAValidityThatIsNoTimeGivesNeedsReview() async throws {
        var registry = PluginRegistry.builtin
        registry.registerBadgeRule(id: "nan") { _, _ in NoTime(seconds: .nan) }
        registry.registerBadgeRule(id: "minus-infinity") { _, _ in NoTime(seconds: -.infinity) }
        registry.registerBadgeRule(id: "far-past") { _, _ in NoTime(seconds: -1e20) }
        let clock = try TestClock("2026-11-20T20:00:00Z")
        let server = try await TestServer.make(registry: registry, clock: clock.read)
        var members: [(slug: String, token: String)] = []
        for rule in ["nan", "minus-infinity", "far-past"] {
            let campus = try await server.campus(rule)
            _ = try await QuestionnaireStore(client: server.pool).publish(campus: campus, draft: Self.draft, actor: "test")
            try await server.pool.query(
                "INSERT INTO campus_plugins (campus_id, kind, plugin_id) VALUES (\(campus.id), 'badge-rule', \(rule))",
                campus: campus.id.rawValue)
            members.append((rule, try await server.user("m@example.edu", at: campus).token))
        }
        let attending = members
        try await server.run { api in
            for member in attending {
                let reply = try await api.send(
                    .post, "/v1/campuses/\(member.slug)/attestations", template: Self.path, token: member.token,
                    json: Self.body(Self.healthy))
                #expect(reply.status == 201, "\(member.slug): \(reply.body)")
                let badge = reply.json["badge"] as? [String: Any]
                #expect(badge?["color"] as? String == "yellow", "\(member.slug)")
                #expect(badge?["validUntil"] as? String == "2026-11-21T05:00:00Z", "\(member.slug)")
            }
        }
    }

    struct Broken: BadgeRule {
        struct Failure: Error {}
        var version: String { "broken-1" }
        func evaluate(_ input: BadgeRuleInput) throws -> BadgeDecision { throw Failure() }
    }

    struct Slow: BadgeRule {
        var version: String { "slow-1" }
        func evaluate(_ input: BadgeRuleInput) throws -> BadgeDecision {
            Thread.sleep(forTimeInterval: 0.5)
            return BadgeDecision(color: .green, reason: "late", validUntil: input.endOfDay)
        }
    }

    /// A rule that says it may run inline, quick or slow: a slow one holds its submission,
    /// but is still over budget; a quick one must not be taken for an overrun.
    struct Inline: BadgeRule {
        var delay: TimeInterval
        var color: BadgeColor
        var version: String { "inline-1" }
        var evaluatesInline: Bool { true }
        func evaluate(_ input: BadgeRuleInput) throws -> BadgeDecision {
            if delay > 0 { Thread.sleep(forTimeInterval: delay) }
            return BadgeDecision(color: color, reason: "Inline, after \(delay) s", validUntil: input.endOfDay)
        }
    }

    /// The histories each rule was given, by rule id, in order.
    final class HistorySeen: Sendable {
        private let seen = Mutex<[String: [[PastAttestation]]]>([:])
        func record(_ rule: String, _ history: [PastAttestation]) { seen.withLock { $0[rule, default: []].append(history) } }
        func last(_ rule: String) -> [PastAttestation]? { seen.withLock { $0[rule]?.last } }
        func all(_ rule: String) -> [[PastAttestation]] { seen.withLock { $0[rule] ?? [] } }
    }

    /// A rule that names what of the past it reads and records what it was given.
    struct Recording: BadgeRule {
        let id: String
        let historyNeed: HistoryNeed
        let seen: HistorySeen
        var version: String { "recording-1" }
        func evaluate(_ input: BadgeRuleInput) throws -> BadgeDecision {
            seen.record(id, input.history)
            return BadgeDecision(color: .green, reason: "Recorded", validUntil: input.endOfDay)
        }
    }

    /// A server with a campus for each rule of `needs` (named after it), each with the draft
    /// and its `Recording` rule enabled.
    static func recordingServer(
        _ needs: [(id: String, need: HistoryNeed)], seen: HistorySeen, clock: TestClock
    ) async throws -> (TestServer, [Campus]) {
        var registry = PluginRegistry.builtin
        for (id, need) in needs { registry.registerBadgeRule(id: id) { _, _ in Recording(id: id, historyNeed: need, seen: seen) } }
        let server = try await TestServer.make(registry: registry, clock: clock.read)
        var campuses: [Campus] = []
        for (id, _) in needs {
            let campus = try await server.campus(id)
            _ = try await QuestionnaireStore(client: server.pool).publish(campus: campus, draft: Self.draft, actor: "test")
            try await server.pool.query(
                "INSERT INTO campus_plugins (campus_id, kind, plugin_id) VALUES (\(campus.id), 'badge-rule', \(id))",
                campus: campus.id.rawValue)
            campuses.append(campus)
        }
        return (server, campuses)
    }

    /// The answers of 10 to 14 November in the recorded tests: a fever every day, a cough
    /// on even days, a temperature on the 12th.
    static func recordedDay(_ day: Int) -> String {
        #"{"fever": true, "cough": \#(day % 2 == 0)\#(day == 12 ? #", "temperature": 37.1"# : "")}"#
    }

    /// Each rule is given exactly the days and answers its `historyNeed` names, narrowed in
    /// PostgreSQL: a rule reading one answer gets only that one (where given), purged days
    /// stay without answers, and a rule reading no past gets none.
    @Test func aRuleIsGivenThePastItNamesAndNoMore() async throws {
        let seen = HistorySeen()
        let needs: [(id: String, need: HistoryNeed)] = [
            ("cough-three-days", HistoryNeed(days: 3, questions: ["cough"])), ("everything", .everything),
            ("nothing", .nothing), ("dates-only", HistoryNeed(days: 14, questions: [])),
            ("temperature-and-cough", HistoryNeed(days: 4, questions: ["temperature", "cough"])),
        ]
        let clock = try TestClock("2026-11-10T15:00:00Z")
        let (server, campuses) = try await Self.recordingServer(needs, seen: seen, clock: clock)
        var members: [(slug: String, token: String, campus: CampusID)] = []
        for campus in campuses { members.append((campus.slug, try await server.user("m@example.edu", at: campus).token, campus.id)) }
        let attending = members
        try await server.run { api in
            for day in 10...14 {
                try clock.set("2026-11-\(day)T15:00:00Z")
                for member in attending {
                    let reply = try await api.send(
                        .post, "/v1/campuses/\(member.slug)/attestations", template: Self.path, token: member.token,
                        json: Self.body(Self.recordedDay(day)))
                    #expect(reply.status == 201, "\(member.slug), day \(day)")
                }
            }
            // The 13th's answers are purged everywhere; then the 15th's submission reads the past.
            for member in attending {
                let purged = try await server.pool.query(
                    "UPDATE attestations SET answers = NULL, answers_purged_at = now() WHERE campus_id = \(member.campus) AND local_date = '2026-11-13' RETURNING 1",
                    campus: member.campus.rawValue)
                #expect(purged.count == 1)
            }
            try clock.set("2026-11-15T15:00:00Z")
            for member in attending {
                let reply = try await api.send(
                    .post, "/v1/campuses/\(member.slug)/attestations", template: Self.path, token: member.token,
                    json: Self.body(Self.healthy))
                #expect(reply.status == 201, "\(member.slug), the 15th")
            }
        }
        func dates(_ history: [PastAttestation]?) -> [String] { (history ?? []).map(\.date.description) }
        let threeDays = seen.last("cough-three-days")
        #expect(dates(threeDays) == ["2026-11-14", "2026-11-13", "2026-11-12"])
        #expect(threeDays?.map(\.answers) == [["cough": .bool(true)], nil, ["cough": .bool(true)]])
        let everything = seen.last("everything")
        #expect(dates(everything) == ["2026-11-14", "2026-11-13", "2026-11-12", "2026-11-11", "2026-11-10"])
        #expect(everything?.first?.answers == ["fever": .bool(true), "cough": .bool(true)])
        #expect(everything?[2].answers == ["fever": .bool(true), "cough": .bool(true), "temperature": .number(37.1)])
        #expect(everything?[3].answers == ["fever": .bool(true), "cough": .bool(false)])
        #expect(everything?[1].answers == nil)
        #expect(seen.last("nothing") == [])
        let datesOnly = seen.last("dates-only")
        #expect(dates(datesOnly) == dates(everything))
        #expect(datesOnly?.map(\.answers) == [[:], nil, [:], [:], [:]])
        #expect(datesOnly?.allSatisfy { $0.color == .green } == true)
        // Two answers, each its own column: a number and a boolean, each only where given.
        let two = seen.last("temperature-and-cough")
        #expect(dates(two) == ["2026-11-14", "2026-11-13", "2026-11-12", "2026-11-11"])
        #expect(
            two?.map(\.answers) == [
                ["cough": .bool(true)], nil, ["cough": .bool(true), "temperature": .number(37.1)], ["cough": .bool(false)],
            ])
    }

    /// A submission whose session the server does not keep reads the member's past in the
    /// same statement as the session (`AttestationService.submitter`); one whose session is
    /// kept reads it on its own. Each rule is given the same past either way.
    @Test func thePastReadWithTheSessionIsThePastReadAfterIt() async throws {
        let seen = HistorySeen()
        let needs: [(id: String, need: HistoryNeed)] = [
            ("cough-three-days", HistoryNeed(days: 3, questions: ["cough"])), ("everything", .everything),
            ("dates-only", HistoryNeed(days: 14, questions: [])),
            ("temperature-and-cough", HistoryNeed(days: 4, questions: ["temperature", "cough"])),
        ]
        let clock = try TestClock("2026-11-10T15:00:00Z")
        let (server, campuses) = try await Self.recordingServer(needs, seen: seen, clock: clock)
        var members: [(slug: String, campus: Campus, kept: String, other: UserID)] = []
        for campus in campuses {
            let kept = try await server.user("kept@example.edu", at: campus).token
            members.append((campus.slug, campus, kept, try await server.user("fresh@example.edu", at: campus).user.id))
        }
        let attending = members
        try await server.run { api in
            for day in 10...14 {
                try clock.set("2026-11-\(day)T15:00:00Z")
                let answers = Self.recordedDay(day)
                for member in attending {
                    // The other member signs in afresh each day: no session of theirs is ever kept.
                    let fresh = try await SessionStore(client: server.pool).issue(campus: member.campus, user: member.other).token
                    for token in [member.kept, fresh] {
                        let reply = try await api.send(
                            .post, "/v1/campuses/\(member.slug)/attestations", template: Self.path, token: token, json: Self.body(answers))
                        #expect(reply.status == 201, "\(member.slug), day \(day)")
                    }
                }
            }
            for member in attending {
                try await server.pool.query(
                    "UPDATE attestations SET answers = NULL, answers_purged_at = now() WHERE campus_id = \(member.campus.id) AND local_date = '2026-11-13'",
                    campus: member.campus.id.rawValue)
            }
            try clock.set("2026-11-15T15:00:00Z")
            for member in attending {
                // Used a moment ago: kept, so its past is read at the submission. (A GET first:
                // this test's server polls no sign-in generations, so it trusts a kept session
                // for 5 s from its verification, and on a loaded machine the submissions and
                // purges since this member's last one took longer once, in CI. A GET served
                // from the kept session in its last moment leaves it to lapse before it is
                // looked at, as it did once in CI too: the next GET verifies it afresh.)
                var kept = false
                for _ in 0..<3 where !kept {
                    let used = try await api.send(
                        .get, "/v1/campuses/\(member.slug)/survey", template: "/v1/campuses/{campus}/survey", token: member.kept)
                    #expect(used.status == 200)
                    kept = server.services.sessions.cached(campus: member.campus.id, token: member.kept) != nil
                }
                #expect(kept)
                let fresh = try await SessionStore(client: server.pool).issue(campus: member.campus, user: member.other).token
                for token in [member.kept, fresh] {
                    let reply = try await api.send(
                        .post, "/v1/campuses/\(member.slug)/attestations", template: Self.path, token: token, json: Self.body(Self.healthy))
                    #expect(reply.status == 201, "\(member.slug), the 15th")
                }
            }
        }
        for (id, need) in needs {
            let given = seen.all(id)
            #expect(given.count == 12, "\(id)")
            // Pairs of the same day: the kept session's member, then the fresh one's.
            for pair in stride(from: 0, to: given.count - 1, by: 2) { #expect(given[pair] == given[pair + 1], "\(id), submission \(pair)") }
            #expect(given.last?.count == min(need.days, 5), "\(id)")
        }
        #expect(
            seen.last("temperature-and-cough")?.map(\.answers) == [
                ["cough": .bool(true)], nil, ["cough": .bool(true), "temperature": .number(37.1)], ["cough": .bool(false)],
            ])
    }

    /// Concurrent submitters of one campus read their sessions and pasts in one batch: two
    /// sessions of one member, members with a past and without, and tokens that stand for
    /// nothing here (unknown, revoked, expired, another campus's), each answered as alone.
    @Test func sessionsAndTheirPastsAreReadTogetherAndEachGetsItsOwn() async throws {
        let clock = try TestClock("2026-11-17T15:00:00Z")
        let (server, campus) = try await Self.setUp(clock: clock)
        let south = try await server.campus("south")
        _ = try await QuestionnaireStore(client: server.pool).publish(campus: south, draft: Self.draft, actor: "test")
        let (tested, testedToken) = try await server.user("tested@example.edu", at: campus)
        let (_, quietToken) = try await server.user("quiet@example.edu", at: campus)
        let sessions = SessionStore(client: server.pool)
        let secondDevice = try await sessions.issue(campus: campus, user: tested.id).token
        let revoked = try await sessions.issue(campus: campus, user: tested.id).token
        #expect(try await sessions.revoke(campus: campus.id, token: revoked))
        let expired = try await sessions.issue(campus: campus, user: tested.id, lifetime: -60).token
        let (_, southToken) = try await server.user("tested@example.edu", at: south)
        try await server.run { api in
            // A positive test three days ago.
            try clock.set("2026-11-14T15:00:00Z")
            let day = try await api.send(
                .post, "/v1/campuses/north/attestations", template: Self.path, token: testedToken,
                json: Self.body(#"{"fever": false, "cough": false, "positive_test": true}"#))
            #expect(day.status == 201)
            // And a day without one after it: the past comes newest first.
            try clock.set("2026-11-15T15:00:00Z")
            let next = try await api.send(
                .post, "/v1/campuses/north/attestations", template: Self.path, token: testedToken,
                json: Self.body(#"{"fever": false, "cough": false, "positive_test": false}"#))
            #expect(next.status == 201)
        }
        // Another server on the same database, which keeps none of these sessions yet.
        let pool = TestDatabase.client(database: server.database, maxConnections: 4)
        let reader = TestServer(
            database: server.database, pool: pool,
            services: AttestServices(
                database: pool, configuration: server.configuration, registry: .builtin, kek: TestServer.kek,
                logger: TestDatabase.testLogger, clock: clock.read))
        try clock.set("2026-11-17T15:00:00Z")
        let now = clock.read()
        let tokens = [testedToken, secondDevice, quietToken, revoked, expired, southToken, SessionStore.newToken()]
        let found = try await withThrowingTaskGroup(of: (Int, AttestationService.Submitter?).self) { group in
            for (index, token) in tokens.enumerated() {
                group.addTask {
                    let parsed = try #require(SessionStore.SessionToken(token))
                    return (index, try await reader.services.attestations.submitter(campus: campus, token: parsed, at: now))
                }
            }
            var found: [Int: AttestationService.Submitter] = [:]
            for try await (index, submitter) in group { found[index] = submitter }
            return found
        }
        let positive = try #require(found[0])
        #expect(positive.session.user.id == tested.id)
        #expect(positive.history?.history.map(\.date.description) == ["2026-11-15", "2026-11-14"])
        #expect(positive.history?.history.map(\.answers) == [["positive_test": .bool(false)], ["positive_test": .bool(true)]])
        let second = try #require(found[1])
        #expect(second.session.user.id == tested.id)
        #expect(second.history?.history == positive.history?.history)
        let quiet = try #require(found[2])
        #expect(quiet.session.user.email == "quiet@example.edu")
        #expect(quiet.history?.history == [])
        for index in 3..<tokens.count { #expect(found[index] == nil, "token \(index) stands for nothing at north") }
        // Now kept: a second look costs no read, and the past is left to the submission.
        let again = try await reader.services.attestations.submitter(
            campus: campus, token: try #require(SessionStore.SessionToken(testedToken)), at: now)
        #expect(again?.session.user.id == tested.id)
        #expect(again?.history == nil)
        // End to end with a session this server does not keep: the past read with it makes the badge red.
        let third = try await SessionStore(client: pool).issue(campus: campus, user: tested.id).token
        try await reader.run { api in
            let reply = try await api.send(
                .post, "/v1/campuses/north/attestations", template: Self.path, token: third, json: Self.body(Self.healthy))
            #expect(reply.status == 201)
            let badge = reply.json["badge"] as? [String: Any]
            #expect(badge?["color"] as? String == "red", "\(reply.body)")
            #expect(
                (badge?["reason"] as? String)?.hasPrefix("Positive test in the last 10 days (reported 2026-11-14") == true, "\(reply.body)")
        }
    }

    @Test func aRulePluginFromATestRegistryDecidesAndFailuresBecomeNeedsReview() async throws {
        var registry = PluginRegistry.builtin
        registry.registerBadgeRule(id: "always-red") { _, _ in AlwaysRed() }
        registry.registerBadgeRule(id: "broken") { _, _ in Broken() }
        registry.registerBadgeRule(id: "slow") { _, _ in Slow() }
        registry.registerBadgeRule(id: "slow-inline") { _, _ in Inline(delay: 0.3, color: .green) }
        registry.registerBadgeRule(id: "quick-inline") { _, _ in Inline(delay: 0, color: .red) }
        let clock = try TestClock("2026-11-20T20:00:00Z")
        let (server, campus) = try await Self.setUp(clock: clock, registry: registry)
        try await server.run { api in
            let cases = [
                ("always-red", "red", "Everyone stays home"), ("broken", "yellow", "Needs review"), ("slow", "yellow", "Needs review"),
                ("slow-inline", "yellow", "Needs review"), ("quick-inline", "red", "Inline, after 0.0 s"),
            ]
            for (plugin, color, reasonPart) in cases {
                try await server.pool.withTransaction(campus: campus.id.rawValue) { connection in
                    try await connection.query("DELETE FROM campus_plugins WHERE campus_id = \(campus.id)")
                    try await connection.query(
                        "INSERT INTO campus_plugins (campus_id, kind, plugin_id) VALUES (\(campus.id), 'badge-rule', \(plugin))")
                }
                try await Task.sleep(for: .seconds(5.1))  // the rule cache's bound
                let (_, token) = try await server.user("\(plugin)@example.edu", at: campus)
                let started = ContinuousClock.now
                let reply = try await api.send(
                    .post, "/v1/campuses/north/attestations", template: Self.path, token: token, json: Self.body(Self.healthy))
                // Inline, the slow rule holds its submission: the answer cannot come before it
                // returns (on the pool for rules that may block, the budget would answer at 0.1 s).
                if plugin == "slow-inline" { #expect(ContinuousClock.now - started >= .milliseconds(300)) }
                #expect(reply.status == 201, "\(plugin)")
                let badge = reply.json["badge"] as? [String: Any]
                #expect(badge?["color"] as? String == color, "\(plugin)")
                #expect((badge?["reason"] as? String)?.contains(reasonPart) == true, "\(plugin)")
                // validUntil never passes the end of the local day.
                #expect(badge?["validUntil"] as? String == "2026-11-21T05:00:00Z", "\(plugin)")
            }
            let rules = try await server.pool.query(
                "SELECT rule_id, rule_version FROM attestations ORDER BY submitted_at, rule_id", campus: campus.id.rawValue)
            #expect(
                Set(try rules.map { try $0.decode("rule_id", as: String.self) }) == [
                    "always-red", "broken", "slow", "slow-inline", "quick-inline",
                ])
            // Each failure is counted by its reason, for an operator's alert.
            let metrics = try await api.send(.get, "/metrics", template: "/metrics").body
            #expect(metric(metrics, #"attest_badge_rule_failures_total{reason="error"}"#) == 1)
            #expect(metric(metrics, #"attest_badge_rule_failures_total{reason="overran"}"#) == 2)
            #expect(metric(metrics, #"attest_badge_rule_failures_total{reason="unavailable"}"#) == 0)
        }
    }

    /// The Content-Type check compares bytes: the media type alone, in any case, spaces and
    /// tabs around it allowed, and nothing that merely begins or ends like JSON.
    @Test func theContentTypeCheckReadsOnlyTheMediaType() {
        for json in [
            "application/json", "APPLICATION/JSON", "Application/Json; charset=utf-8", " application/json ",
            "\tapplication/json\t;charset=utf-8", "application/json;", "application/json ; q=1",
        ] {
            #expect(Request.namesJSON(json), "\(json)")
        }
        for other in [
            "", ";", "text/plain", "text/json", "application/jsonx", "application/json-patch+json", "xapplication/json",
            "application /json", "application\u{0F}json", "application/jsoN\u{0}", "application/js on", "ápplication/json",
        ] {
            #expect(!Request.namesJSON(other), "\(other)")
        }
    }

    /// Histories of concurrent submissions are read together (one query per batch); each
    /// member's badge must still follow that member's own history.
    @Test func concurrentSubmissionsEachSeeTheirOwnHistory() async throws {
        let clock = try TestClock("2026-11-10T15:00:00Z")
        let (server, campus) = try await Self.setUp(clock: clock)
        var tokens: [String] = []
        for index in 0..<24 { tokens.append(try await server.user("h\(index)@example.edu", at: campus).token) }
        let members = tokens
        try await server.run { api in
            func submitAll(_ answers: @escaping @Sendable (Int) -> String) async throws -> [Int: String] {
                try await api.withConnections(members.count) { clients in
                    try await withThrowingTaskGroup(of: (Int, String?).self) { group in
                        for (index, token) in members.enumerated() {
                            group.addTask {
                                let reply = try await clients[index].send(
                                    .post, "/v1/campuses/north/attestations", template: Self.path, token: token,
                                    json: Self.body(answers(index)))
                                return (index, (reply.json["badge"] as? [String: Any])?["color"] as? String)
                            }
                        }
                        return try await group.reduce(into: [Int: String]()) { $0[$1.0] = $1.1 }
                    }
                }
            }
            // Day 0: every third member reports a positive test.
            let first = try await submitAll { $0 % 3 == 0 ? #"{"fever": false, "cough": false, "positive_test": true}"# : Self.healthy }
            #expect(first.count == 24)
            for (index, color) in first { #expect(color == (index % 3 == 0 ? "red" : "green"), "member \(index), day 0") }
            // Day 2: everyone healthy, all at once; the positive ones stay red from their history.
            try clock.set("2026-11-12T15:00:00Z")
            let second = try await submitAll { _ in Self.healthy }
            for (index, color) in second { #expect(color == (index % 3 == 0 ? "red" : "green"), "member \(index), day 2") }
        }
    }

    @Test func thePositiveTestRuleReadsHistoryAcrossDays() async throws {
        let clock = try TestClock("2026-11-10T15:00:00Z")
        let (server, campus) = try await Self.setUp(clock: clock)
        let (_, token) = try await server.user("p@example.edu", at: campus)
        try await server.run { api in
            let day0 = try await api.send(
                .post, "/v1/campuses/north/attestations", template: Self.path, token: token,
                json: Self.body(#"{"fever": false, "cough": false, "positive_test": true}"#))
            #expect((day0.json["badge"] as? [String: Any])?["color"] as? String == "red")
            try clock.set("2026-11-19T15:00:00Z")  // 9 days later
            let day9 = try await api.send(
                .post, "/v1/campuses/north/attestations", template: Self.path, token: token, json: Self.body(Self.healthy))
            #expect((day9.json["badge"] as? [String: Any])?["color"] as? String == "red")
            try clock.set("2026-11-20T15:00:00Z")  // 10 days later
            let day10 = try await api.send(
                .post, "/v1/campuses/north/attestations", template: Self.path, token: token, json: Self.body(Self.healthy))
            #expect((day10.json["badge"] as? [String: Any])?["color"] as? String == "green")
        }
    }
}

/// Runs its jobs one at a time, first in, first out, on a thread of its own: there the order
/// tasks run in is the order they were resumed in.
final class SerialThreadExecutor: TaskExecutor, @unchecked Sendable {
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var stopped = false

    init() {
        Thread { [self] in run() }.start()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    /// The thread ends once the jobs queued before this have run.
    func stop() {
        condition.lock()
        stopped = true
        condition.signal()
        condition.unlock()
    }

    private func run() {
        while true {
            condition.lock()
            while jobs.isEmpty, !stopped { condition.wait() }
            if jobs.isEmpty {
                condition.unlock()
                return
            }
            let job = jobs.removeFirst()
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}

/// Tasks that wait until `open` resumes them all, in the order they came, in one loop.
final class Gate: Sendable {
    private let waiters = Mutex<[CheckedContinuation<Void, Never>]>([])

    var waiting: Int { waiters.withLock { $0.count } }

    func wait() async {
        await withCheckedContinuation { continuation in waiters.withLock { $0.append(continuation) } }
    }

    func open() {
        for waiter in waiters.withLock({ waiters in
            defer { waiters = [] }
            return waiters
        }) {
            waiter.resume()
        }
    }
}

extension AttestationTests {
    /// A member erased while their submission runs (its session read just before): the
    /// database's foreign key refuses the write, and the member is told so in a 409 that keeps
    /// nothing, not a 500.
    @Test func aMemberErasedWhileTheirSubmissionRunsGetsA409NotA500() async throws {
        let clock = try TestClock("2026-11-20T14:30:00Z")
        let (server, campus) = try await Self.setUp(clock: clock)
        let (member, _) = try await server.user("leaving@example.edu", at: campus)
        let owner = TestDatabase.client(database: server.database, role: nil, maxConnections: 1)
        let services = server.services
        let version = try #require(try await services.questionnaires.active(campus: campus.id)).version
        try await server.run(extraRoutes: { router in
            router.post("probe/erased-meanwhile") { _, _ -> Response in
                // The request has read its member; the directory erases them; the write follows.
                _ = try await UserStore(client: owner).erase(campus: campus, email: "leaving@example.edu", actor: "scim:test")
                _ = try await services.attestations.submit(
                    campus: campus, user: member.id, surveyVersion: version,
                    answers: ["fever": .bool(false), "cough": .bool(false)], idempotencyKey: nil, at: clock.read())
                return Response(status: .created)
            }
        }) { api in
            let reply = try await api.client.execute(uri: "/probe/erased-meanwhile", method: .post)
            #expect(reply.status == .conflict)
            #expect(reply.headers[.contentType] == "application/problem+json")
            let body = String(buffer: reply.body)
            #expect(body.contains(#""type":"/problems/gone-meanwhile""#) && body.contains("nothing was kept"), "\(body)")
            #expect(try await Self.count(server, campus) == 0)
        }
        await owner.shutdown()
    }
}
