import AttestPlugins
import AttestPluginsTesting
import ExamplePlugins
import Foundation
import Testing

@Suite struct TemperatureRuleTests {
    static let survey = Questionnaire.testing(version: 3, .yesNo("fever", "Fever?"), .number("temperature", min: 34, max: 43, unit: "°C"))
    static let endOfDay = Date(timeIntervalSince1970: 1_800_000_000)

    func decide(_ temperature: Double?, settings: JSONValue = .object([:])) throws -> BadgeDecision {
        let rule = try TemperatureRule(settings: settings, questionnaire: Self.survey)
        var answers: SurveyAnswers = ["fever": .bool(true)]
        if let temperature { answers["temperature"] = .number(temperature) }
        return try rule.evaluate(
            BadgeRuleInput(
                answers: answers, questionnaire: Self.survey, date: LocalDate(year: 2026, month: 11, day: 21),
                now: Self.endOfDay.addingTimeInterval(-3600), endOfDay: Self.endOfDay))
    }

    @Test func thresholdsDecideAndNothingElseCounts() throws {
        // A fever answered "yes" does not matter to this rule: only the number does.
        #expect(try decide(36.8).color == .green)
        #expect(try decide(37.4999).color == .green)
        #expect(try decide(37.5).color == .yellow)
        #expect(try decide(37.99).color == .yellow)
        let red = try decide(38.0)
        #expect(red.color == .red)
        #expect(red.reason == "Temperature of 38 °C or more")
        #expect(red.validUntil == Self.endOfDay)
        let missing = try decide(nil)
        #expect(missing.color == .yellow)
        #expect(missing.reason == "No temperature reported")
        // It reads no past, so the platform fetches none for it.
        #expect(try TemperatureRule(settings: .object([:]), questionnaire: Self.survey).historyNeed == .nothing)
    }

    @Test func settingsMoveTheThresholdsAndTheVersion() throws {
        let settings: JSONValue = .object(["yellowAt": .number(37.8), "redAt": .number(38.5)])
        #expect(try decide(38.2, settings: settings).color == .yellow)
        #expect(try decide(38.5, settings: settings).color == .red)
        #expect(try decide(37.7, settings: settings).color == .green)
        let defaults = try TemperatureRule(settings: .object([:]), questionnaire: Self.survey)
        let moved = try TemperatureRule(settings: settings, questionnaire: Self.survey)
        #expect(defaults.version != moved.version)
    }

    @Test func badSettingsAreRefusedWithTheFix() async throws {
        func refusal(_ settings: JSONValue) -> String? {
            do {
                _ = try TemperatureRule(settings: settings, questionnaire: Self.survey)
                return nil
            } catch { return "\(error)" }
        }
        #expect(refusal(.object(["question": .string("pulse")]))?.contains("\"pulse\" is not in survey version 3") == true)
        #expect(refusal(.object(["question": .string("fever")]))?.contains("is a boolean question") == true)
        #expect(refusal(.object(["redAt": .string("hot")]))?.contains("redAt must be a number") == true)
        #expect(refusal(.object(["yellowAt": .number(39), "redAt": .number(38)]))?.contains("must not be above redAt") == true)
        #expect(refusal(.object(["redat": .number(38)]))?.contains("unknown setting \"redat\"") == true)
        #expect(refusal(.array([]))?.contains("must be a JSON object") == true)
    }

    @Test func theRegistryBuildsItByID() throws {
        var registry = PluginRegistry()
        registry.registerExamplePlugins()
        #expect(registry.badgeRuleIDs == ["recent-test", "temperature-only"])
        #expect(registry.sinkIDs == ["email", "sms-gateway", "terminal", "web-push"])  // the platform's member channels too
        #expect(registry.testingLocationProviderIDs == ["csv-file", "static"])
        let rule = try registry.makeBadgeRule(id: "temperature-only", settings: .object([:]), questionnaire: Self.survey)
        #expect(rule is TemperatureRule)
    }

    /// What the platform expects of every rule (the test kit's conformance check), over the
    /// answers that matter to this one.
    @Test func theRuleConformsToWhatThePlatformExpects() throws {
        let rule = try TemperatureRule(settings: .object([:]), questionnaire: Self.survey)
        let inputs = [nil, 35.0, 37.5, 38.0, 42.9].map { temperature -> BadgeRuleInput in
            var answers: SurveyAnswers = ["fever": .bool(false)]
            if let temperature { answers["temperature"] = .number(temperature) }
            return .testing(answers, questionnaire: Self.survey)
        }
        #expect(BadgeRuleConformance.problems(rule, inputs: inputs) == [])
    }
}
