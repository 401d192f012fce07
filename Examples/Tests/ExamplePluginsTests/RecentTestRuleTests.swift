import AttestPlugins
import AttestPluginsTesting
import ExamplePlugins
import Foundation
import Testing

@Suite struct RecentTestRuleTests {
    static let survey = Questionnaire.testing(version: 1, .yesNo("fever", "Fever?"))
    static let zone = TimeZone(identifier: "America/New_York")!
    static let today = LocalDate(year: 2026, month: 11, day: 21)
    static let endOfDay = today.adding(days: 1).start(in: zone)
    static let green = BadgeDecision(color: .green, reason: "No symptoms reported", validUntil: endOfDay)

    static func input(_ answered: BadgeDecision?, _ health: HealthStatus) -> HealthInput {
        HealthInput(answered: answered, health: health, date: today, endOfDay: endOfDay, timeZone: zone)
    }

    /// A test collected at 23:30 campus time on `date` (the next day in UTC).
    static func test(_ date: LocalDate, detected: Bool) -> HealthStatus.Test {
        let collected = date.start(in: zone).addingTimeInterval(23.5 * 3600)
        return .init(code: "94500-6", detected: detected, collected: collected, resulted: collected.addingTimeInterval(3600))
    }

    @Test func aGreenBadgeNeedsANegativeTestWithinTheDaysTheCampusSets() throws {
        let rule = try RecentTestRule(settings: .object(["testEveryDays": .number(7)]))
        #expect(
            rule.decide(Self.input(Self.green, HealthStatus(latestTest: Self.test(Self.today.adding(days: -7), detected: false))))
                == Self.green)
        let overdue = rule.decide(Self.input(Self.green, HealthStatus(latestTest: Self.test(Self.today.adding(days: -8), detected: false))))
        #expect(overdue?.color == .yellow && overdue?.reason.hasPrefix("Test due") == true, "day 8, counted on the campus's dates")
        #expect(rule.decide(Self.input(Self.green, .none))?.color == .yellow, "no test at all")
        let yellow = BadgeDecision(color: .yellow, reason: "Symptom reported: Fever?", validUntil: Self.endOfDay)
        #expect(rule.decide(Self.input(yellow, .none)) == yellow, "the answers' own yellow stays itself")
        #expect(rule.decide(Self.input(nil, .none)) == nil, "not answered: gray")
        // An isolation is red, as the platform's default says, answered or not.
        let isolated = HealthStatus(
            latestTest: Self.test(Self.today.adding(days: -2), detected: true), restriction: .init(kind: .isolation, until: Self.today))
        #expect(rule.decide(Self.input(Self.green, isolated))?.color == .red)
        #expect(rule.decide(Self.input(nil, isolated))?.reason == "Isolation until 21 Nov")
    }

    @Test func settingsAreChecked() throws {
        #expect(try RecentTestRule(settings: .null).testEveryDays == 7)
        for settings: JSONValue in [
            .object(["testEveryDays": .number(0)]), .object(["testEveryDays": .number(2.5)]), .object(["every": .number(3)]), .array([]),
        ] {
            #expect(throws: PluginSettingsError.self) { try RecentTestRule(settings: settings) }
        }
        let rule = try RecentTestRule(settings: .object(["testEveryDays": .number(3)]))
        #expect(BadgeRuleConformance.problems(rule, inputs: [.testing(["fever": .bool(true)], questionnaire: Self.survey)]).isEmpty)
    }
}
