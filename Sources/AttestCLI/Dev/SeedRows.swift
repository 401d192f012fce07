import AttestPlugins
import AttestPostgres
import Foundation
import Surveys
import Tenancy

/// What every slice of a seed shares, encoded once: the days' instants and the fields many
/// rows repeat, as `COPY` bytes.
struct SeedPlan: Sendable {
    /// The `COPY` columns, in the order `SeedRows` writes them: first those every row shares.
    static let columns = [
        "campus_id", "survey_version", "rule_id", "rule_version", "id", "user_id", "local_date", "submitted_at", "on_time",
        "answers", "color", "reason", "valid_until", "answers_purged_at",
    ]

    /// One campus-local day of the history.
    struct Day: Sendable {
        var date: Int32
        /// The day's first instant and the next day's (`valid_until`), in microseconds since 2000.
        var start: Int64
        var end: Int64
        /// On a day whose UTC offset changes (daylight saving), each minute's instant and the
        /// local minute it is in fact (a minute the clock skips is later); nil on other days,
        /// whose minutes are `start` plus the minute.
        var minutes: [(instant: Int64, localMinute: Int)]?
        /// Within the campus's retention: the row keeps its answers.
        var answered: Bool
    }

    let first: LocalDate
    let days: [Day]
    let deadline: Int
    let symptoms: [String]
    let idPrefix: UInt64
    /// campus_id, survey_version, rule_id and rule_version, encoded.
    let shared: [UInt8]
    /// answers: with no symptom ([0]), then with symptom `s` ([1 + s]).
    let answers: [[UInt8]]
    /// color and reason: green ([0]), yellow with symptom `s` ([1 + s]), red ([1 + kinds + s]).
    let badges: [[UInt8]]
    /// answers_purged_at, for rows older than the retention.
    let purgedAt: [UInt8]

    /// Seconds from 1970 to 2000-01-01, PostgreSQL's epoch.
    static let epoch: Int64 = 946_684_800
    static let epochDate = LocalDate(year: 2000, month: 1, day: 1)

    init(campus: Campus, questionnaire: Questionnaire, first: LocalDate, days count: Int, keepFrom: LocalDate, now: Date, idPrefix: UInt64)
        throws
    {
        let zone = campus.zone
        // Whole seconds: the days' instants are, and `answers_purged_at` needs no finer.
        func microseconds(_ instant: Date) -> Int64 { (Int64(instant.timeIntervalSince1970.rounded(.down)) - Self.epoch) * 1_000_000 }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        var days: [Day] = []
        days.reserveCapacity(count)
        var start = first.start(in: zone)
        for offset in 0..<count {
            let date = first.adding(days: offset)
            let end = date.adding(days: 1).start(in: zone)
            let steady =
                end.timeIntervalSince(start) == 86_400
                && zone.secondsFromGMT(for: start) == zone.secondsFromGMT(for: end.addingTimeInterval(-1))
            var minutes: [(Int64, Int)]?
            if !steady {
                minutes = (0..<1_440).map { minute in
                    let wall = DateComponents(year: date.year, month: date.month, day: date.day, hour: minute / 60, minute: minute % 60)
                    var instant = calendar.date(from: wall) ?? start.addingTimeInterval(Double(minute * 60))
                    if LocalDate(instant, in: zone) != date { instant = start }
                    let local = (Int(instant.timeIntervalSince1970) + zone.secondsFromGMT(for: instant)) % 86_400
                    return (microseconds(instant), (local < 0 ? local + 86_400 : local) / 60)
                }
            }
            days.append(
                Day(
                    date: Int32(Self.epochDate.days(until: date)), start: microseconds(start), end: microseconds(end), minutes: minutes,
                    answered: date >= keepFrom))
            start = end
        }
        self.first = first
        self.days = days
        self.deadline = campus.deadlineMinute
        self.symptoms = questionnaire.questions.filter { $0.kind == .boolean && $0.symptom }.map(\.id)
        self.idPrefix = idPrefix

        let rows = BinaryCopyRows.self
        var shared = campus.id.rawValue.encodedField
        shared += rows.encodedField(Array(withUnsafeBytes(of: Int32(questionnaire.version).bigEndian) { Array($0) }))
        shared += rows.encodedField(Array("seed".utf8)) + rows.encodedField(Array("1".utf8))
        self.shared = shared
        let base = HistorySeeder.baseAnswers(questionnaire)
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        func jsonb(_ answers: [String: AnswerValue]) throws -> [UInt8] { rows.encodedField([1] + Array(try encoder.encode(answers))) }
        self.answers = try [jsonb(base)] + symptoms.map { symptom in try jsonb(base.merging([symptom: .bool(true)]) { $1 }) }
        func badge(_ color: String, _ reason: String) -> [UInt8] {
            rows.encodedField(Array(color.utf8)) + rows.encodedField(Array(reason.utf8))
        }
        let reasons = symptoms.isEmpty ? ["Seeded: unwell"] : symptoms.map { "Seeded: \($0)" }
        self.badges = [badge("green", "No symptoms reported")] + reasons.map { badge("yellow", $0) } + reasons.map { badge("red", $0) }
        self.purgedAt = rows.encodedField(Array(withUnsafeBytes(of: microseconds(now).bigEndian) { Array($0) }))
    }
}

extension UUID {
    /// The uuid's 16 bytes as a `COPY` field.
    fileprivate var encodedField: [UInt8] { BinaryCopyRows.encodedField(withUnsafeBytes(of: uuid) { Array($0) }) }
}

/// One slice of members' attestations, made member by member and day by day and written as
/// `COPY` rows, with the rollups they add. Used by one thread at a time: the copy's, then,
/// after it, the task that adds the rollups.
final class SeedRows: @unchecked Sendable {
    /// What the slice's rows add to the rollups, per day (and per day and symptom).
    struct Tally {
        var submitted: [Int32], onTime: [Int32], green: [Int32], yellow: [Int32], red: [Int32]
        var reported: [Int32]

        init(days: Int, symptoms: Int) {
            let zeros = [Int32](repeating: 0, count: days)
            (submitted, onTime, green, yellow, red) = (zeros, zeros, zeros, zeros, zeros)
            reported = [Int32](repeating: 0, count: days * symptoms)
        }
    }

    let plan: SeedPlan
    let userPrefix: UInt64
    let members: ClosedRange<Int>
    private var next: Int
    private var random = SeedRandom(seed: UInt64.random(in: .min ... .max))
    private(set) var tally: Tally

    init(plan: SeedPlan, userPrefix: UInt64, members: ClosedRange<Int>) {
        self.plan = plan
        self.userPrefix = userPrefix
        self.members = members
        self.next = members.lowerBound
        self.tally = Tally(days: plan.days.count, symptoms: plan.symptoms.count)
    }

    /// The uuid of `prefix` (48 bits) and `counter`: the prefix's 6 bytes, then the counter's
    /// 10, big-endian (as `HistorySeeder.counterID` makes it in SQL).
    static func uuid(prefix: UInt64, counter: Int) -> (high: UInt64, low: UInt64) { (prefix << 16, UInt64(counter)) }

    /// Writes the next members' rows, about 256 KB; false once the slice is done.
    func write(into rows: inout BinaryCopyRows) -> Bool {
        // The loop works on locals: a class's stored properties are checked for exclusive
        // access at run time, on every access.
        var random = self.random, tally = Tally(days: 0, symptoms: 0), next = self.next
        swap(&tally, &self.tally)
        defer {
            self.random = random
            self.next = next
            swap(&tally, &self.tally)
        }
        let plan = self.plan, last = members.upperBound
        let deadline = plan.deadline, onTimeSpan = min(plan.deadline, 300)
        let kinds = max(plan.symptoms.count, 1), symptomCount = plan.symptoms.count
        while next <= last {
            let member = next
            let user = Self.uuid(prefix: userPrefix, counter: member)
            for index in plan.days.indices {
                guard random.unit() < 0.92 else { continue }
                var onTime = random.unit() < 0.9 && deadline > 0
                let badge = random.unit()
                let symptom = Int(random.unit() * Double(kinds))
                let draw = random.unit()
                let minute = onTime ? deadline - 1 - Int(draw * Double(onTimeSpan - 1)) : deadline + Int(draw * Double(1_439 - deadline))
                let day = plan.days[index]
                let instant: Int64
                if let minutes = day.minutes {
                    instant = minutes[minute].instant
                    onTime = onTime && minutes[minute].localMinute < deadline
                } else {
                    instant = day.start + Int64(minute) * 60_000_000
                }
                let id = Self.uuid(prefix: plan.idPrefix, counter: member * 100_000 + index)
                rows.row(fields: 14)
                rows.raw(plan.shared)
                rows.uuid(high: id.high, low: id.low)
                rows.uuid(high: user.high, low: user.low)
                rows.date(daysSince2000: day.date)
                rows.timestamp(microsecondsSince2000: instant)
                rows.bool(onTime)
                let ill = badge < 0.15
                if day.answered { rows.raw(plan.answers[ill && symptomCount > 0 ? 1 + symptom : 0]) } else { rows.null() }
                rows.raw(plan.badges[badge < 0.03 ? 1 + kinds + symptom : ill ? 1 + symptom : 0])
                rows.timestamp(microsecondsSince2000: day.end)
                if day.answered { rows.null() } else { rows.raw(plan.purgedAt) }

                tally.submitted[index] += 1
                if onTime { tally.onTime[index] += 1 }
                if badge < 0.03 { tally.red[index] += 1 } else if ill { tally.yellow[index] += 1 } else { tally.green[index] += 1 }
                if ill && symptomCount > 0 { tally.reported[index * symptomCount + symptom] += 1 }
            }
            next += 1
            if rows.byteCount >= 1 << 18 { return next <= last }
        }
        return false
    }

    /// The statements that add this slice's counts to the rollups, in its own shard rows.
    func rollups(campus: CampusID, first: LocalDate, shard: Int16) -> [SQL] {
        let tally = self.tally
        let days = tally.submitted.indices.filter { tally.submitted[$0] > 0 }
        guard !days.isEmpty else { return [] }
        func pick(_ counts: [Int32]) -> [Int32] { days.map { counts[$0] } }
        var statements: [SQL] = [
            """
            INSERT INTO daily_stats AS s (campus_id, local_date, shard, submitted, on_time, late, green, yellow, red)
            SELECT \(campus), \(first)::date + d.day, \(shard), d.submitted, d.on_time, d.submitted - d.on_time, d.green, d.yellow, d.red
            FROM unnest(\(days.map(Int32.init)), \(pick(tally.submitted)), \(pick(tally.onTime)), \(pick(tally.green)), \(pick(tally.yellow)), \(pick(tally.red)))
                 AS d(day, submitted, on_time, green, yellow, red)
            \(Rollups.addToStats)
            """
        ]
        let symptoms = plan.symptoms
        let answered = tally.reported.indices.filter { tally.reported[$0] > 0 }
        if !answered.isEmpty {
            statements.append(
                """
                INSERT INTO daily_answer_counts AS c (campus_id, local_date, question_id, answer, shard, count)
                SELECT \(campus), \(first)::date + d.day, d.question, 'true', \(shard), d.count
                FROM unnest(\(answered.map { Int32($0 / symptoms.count) }), \(answered.map { symptoms[$0 % symptoms.count] }),
                            \(answered.map { tally.reported[$0] })) AS d(day, question, count)
                \(Rollups.addToAnswerCounts)
                """)
        }
        return statements
    }
}

/// xoshiro256**: fast, and good enough for made-up history (not for anything secret).
struct SeedRandom {
    private var state: (UInt64, UInt64, UInt64, UInt64)

    init(seed: UInt64) {
        var mixer = seed
        func splitMix() -> UInt64 {
            mixer &+= 0x9E37_79B9_7F4A_7C15
            var z = mixer
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        state = (splitMix(), splitMix(), splitMix(), splitMix())
    }

    mutating func next() -> UInt64 {
        let result = ((state.1 &* 5) << 7 | (state.1 &* 5) >> 57) &* 9
        let shifted = state.1 << 17
        state.2 ^= state.0
        state.3 ^= state.1
        state.1 ^= state.2
        state.0 ^= state.3
        state.2 ^= shifted
        state.3 = state.3 << 45 | state.3 >> 19
        return result
    }

    /// Uniform in [0, 1).
    mutating func unit() -> Double { Double(next() >> 11) * 0x1p-53 }
}
