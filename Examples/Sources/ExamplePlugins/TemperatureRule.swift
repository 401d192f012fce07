import AttestPlugins
import Foundation

/// A badge rule that looks only at the temperature a member reports.
///
/// Settings (all optional): `{"question": "temperature", "yellowAt": 37.5, "redAt": 38.0}`.
/// At or above `redAt` the badge is red, at or above `yellowAt` yellow, below it green; no
/// temperature reported is yellow, so a screener asks. The question must be a number question
/// of the campus's active survey, and thresholds are in that question's unit.
public struct TemperatureRule: BadgeRule {
    public static let id = "temperature-only"

    public let question: String
    public let yellowAt: Double
    public let redAt: Double
    let unit: String

    /// Checks `settings` (and, when there is one, that `questionnaire` has the question).
    public init(settings: JSONValue, questionnaire: Questionnaire?) throws {
        guard case .object(let fields) = settings else {
            throw PluginSettingsError("settings must be a JSON object such as {\"question\": \"temperature\", \"redAt\": 38.0}")
        }
        for key in fields.keys where !["question", "yellowAt", "redAt"].contains(key) {
            throw PluginSettingsError("unknown setting \"\(key)\": use question, yellowAt or redAt")
        }
        func number(_ key: String, default value: Double) throws -> Double {
            guard let setting = fields[key] else { return value }
            guard case .number(let number) = setting, number.isFinite else {
                throw PluginSettingsError("\(key) must be a number, such as \(value)")
            }
            return number
        }
        var question = "temperature"
        if let setting = fields["question"] {
            guard case .string(let id) = setting, !id.isEmpty else {
                throw PluginSettingsError("question must be the id of a number question, such as \"temperature\"")
            }
            question = id
        }
        let yellowAt = try number("yellowAt", default: 37.5)
        let redAt = try number("redAt", default: 38.0)
        guard yellowAt <= redAt else {
            throw PluginSettingsError("yellowAt (\(yellowAt)) must not be above redAt (\(redAt))")
        }
        var unit = ""
        if let questionnaire {
            guard let found = questionnaire.question(question) else {
                throw PluginSettingsError(
                    "question \"\(question)\" is not in survey version \(questionnaire.version); name one of its number questions")
            }
            guard found.kind == .number else {
                throw PluginSettingsError("question \"\(question)\" is a \(found.kind.rawValue) question; the rule needs a number question")
            }
            unit = found.unit ?? ""
        }
        self.question = question
        self.yellowAt = yellowAt
        self.redAt = redAt
        self.unit = unit
    }

    /// Today's temperature is all it reads, so no submission fetches the member's past for it.
    public var historyNeed: HistoryNeed { .nothing }

    /// Names the logic and the thresholds: a change of either changes the version stored.
    public var version: String { "1;\(question);yellow>=\(yellowAt);red>=\(redAt)" }

    public func evaluate(_ input: BadgeRuleInput) throws -> BadgeDecision {
        let unit = self.unit.isEmpty ? "" : " \(self.unit)"
        guard case .number(let temperature)? = input.answers[question] else {
            return BadgeDecision(color: .yellow, reason: "No temperature reported", validUntil: input.endOfDay)
        }
        if temperature >= redAt {
            return BadgeDecision(color: .red, reason: "Temperature of \(redAt.formatted())\(unit) or more", validUntil: input.endOfDay)
        }
        if temperature >= yellowAt {
            return BadgeDecision(
                color: .yellow, reason: "Temperature of \(yellowAt.formatted())\(unit) or more", validUntil: input.endOfDay)
        }
        return BadgeDecision(color: .green, reason: "Temperature below \(yellowAt.formatted())\(unit)", validUntil: input.endOfDay)
    }
}
