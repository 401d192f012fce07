import AttestPlugins
import Foundation
import Tenancy

/// The statistics use cases, one call each from a route or a page: members' shares with
/// small counts suppressed, the admin dashboard, the health officers' follow-ups.
public struct StatisticsService: Sendable {
    public let store: StatisticsStore
    let questionnaires: ActiveQuestionnaires

    public init(store: StatisticsStore, questionnaires: ActiveQuestionnaires) {
        self.store = store
        self.questionnaires = questionnaires
    }

    /// One day as members see it: percentages with one decimal, nil where suppressed.
    public struct MemberDay: Sendable, Equatable {
        public var date: LocalDate
        /// Too few attestations that day to show anything.
        public var suppressed: Bool
        public var submitted: Int?
        public var green, yellow, red: Double?
        /// Per symptom question of the active survey, in survey order.
        public var symptoms: [(id: String, percent: Double?)]

        public static func == (lhs: MemberDay, rhs: MemberDay) -> Bool {
            (lhs.date, lhs.suppressed, lhs.submitted, lhs.green, lhs.yellow, lhs.red) == (
                rhs.date, rhs.suppressed, rhs.submitted, rhs.green, rhs.yellow, rhs.red
            )
                && lhs.symptoms.map(\.id) == rhs.symptoms.map(\.id) && lhs.symptoms.map(\.percent) == rhs.symptoms.map(\.percent)
        }
    }

    /// The boolean questions the active survey marks as symptoms, in survey order.
    public func symptoms(campus: CampusID) async throws -> [String] {
        try await questionnaires.active(campus: campus)?.questions.filter { $0.kind == .boolean && $0.symptom }.map(\.id) ?? []
    }

    /// Percent with one decimal.
    static func percent(_ count: Int, of total: Int) -> Double { (Double(count) * 1000 / Double(total)).rounded() / 10 }

    /// Every day of `range` as members see it: a day with fewer attestations than the campus's
    /// `statsMinCount` suppressed whole; within a day, small counts and whatever would give
    /// them back by subtraction hidden (`SmallCounts`).
    public func memberDays(campus: Campus, range: DateRange) async throws -> [MemberDay] {
        let days = try await store.days(campus: campus.id, range: range)
        let symptoms = try await symptoms(campus: campus.id)
        let minCount = campus.statsMinCount
        return days.map { day in
            guard day.submitted >= max(minCount, 1) else {
                return MemberDay(date: day.date, suppressed: true, submitted: nil, symptoms: symptoms.map { ($0, nil) })
            }
            let colors = [day.green, day.yellow, day.red]
            let hidden = SmallCounts.hidden(colors, minCount: minCount)
            func color(_ index: Int) -> Double? { hidden.contains(index) ? nil : Self.percent(colors[index], of: day.submitted) }
            return MemberDay(
                date: day.date, suppressed: false, submitted: day.submitted, green: color(0), yellow: color(1), red: color(2),
                symptoms: symptoms.map { id in
                    let yes = day.answers[id]?["true"] ?? 0
                    return (
                        id, SmallCounts.hidesYes(yes, of: day.submitted, minCount: minCount) ? nil : Self.percent(yes, of: day.submitted)
                    )
                })
        }
    }

    /// The admin dashboard: every day's figures, their totals, and the symptom questions.
    public func dashboard(campus: CampusID, range: DateRange) async throws -> (days: [DayFigures], total: RangeTotals, symptoms: [String]) {
        let days = try await store.days(campus: campus, range: range)
        return (days, RangeTotals(days), try await symptoms(campus: campus))
    }

    /// The admin dashboard's days as kept (which are settled, and since when), and the
    /// symptom questions: for a caller that keeps what it makes of the settled days.
    public func keptDashboard(campus: CampusID, range: DateRange) async throws -> (days: StatisticsStore.KeptDays, symptoms: [String]) {
        (try await store.keptDays(campus: campus, range: range), try await symptoms(campus: campus))
    }

    /// A page of the day's red and yellow attestations with who (audited); see
    /// `StatisticsStore.followUps`.
    public func followUps(
        campus: CampusID, date: LocalDate, colors: [BadgeColor], after cursor: StatisticsStore.FollowUpCursor?, limit: Int, actor: String
    ) async throws -> (items: [StatisticsStore.FollowUp], next: StatisticsStore.FollowUpCursor?) {
        try await store.followUps(campus: campus, date: date, colors: colors, after: cursor, limit: limit, actor: actor)
    }
}
