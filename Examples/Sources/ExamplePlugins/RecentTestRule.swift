import AttestPlugins
import Foundation

/// A badge rule for a campus that asks for a negative test every few days (Oakland
/// University's weekly tests for the exempt, Safer Illinois's "test overdue"): the day's
/// answers decide as usual (a symptom answered yes is yellow), and the member's health record
/// decides the rest through `decide(_:)`.
///
/// Settings (optional): `{"testEveryDays": 7}`, 1 to 60. A member whose latest test is
/// negative and collected no more than that many days before today keeps the answers' badge;
/// one whose test is older, positive or missing is yellow "Test due"; an isolation or
/// quarantine is red as the platform's default says.
public struct RecentTestRule: BadgeRule {
    public static let id = "recent-test"

    public let testEveryDays: Int
    public var version: String { "recent-test/1 every \(testEveryDays) days" }
    public var historyNeed: HistoryNeed { .nothing }
    public var evaluatesInline: Bool { true }

    public init(settings: JSONValue) throws {
        switch settings {
        case .null:
            testEveryDays = 7
        case .object(let fields):
            for key in fields.keys where key != "testEveryDays" {
                throw PluginSettingsError("unknown setting \"\(key)\": the only one is testEveryDays")
            }
            guard let value = fields["testEveryDays"] else {
                testEveryDays = 7
                return
            }
            guard case .number(let days) = value, days.rounded() == days, (1...60).contains(days), let whole = Int(exactly: days) else {
                throw PluginSettingsError("testEveryDays must be a whole number of days from 1 to 60, such as 7")
            }
            testEveryDays = whole
        default:
            throw PluginSettingsError("settings must be a JSON object such as {\"testEveryDays\": 7}")
        }
    }

    /// Yellow when any symptom question is answered yes, green otherwise.
    public func evaluate(_ input: BadgeRuleInput) throws -> BadgeDecision {
        let symptoms = input.questionnaire.questions.filter { $0.symptom && input.answers[$0.id] == .bool(true) }
        if let first = symptoms.first {
            return BadgeDecision(color: .yellow, reason: "Symptom reported: \(first.prompt)", validUntil: input.endOfDay)
        }
        return BadgeDecision(color: .green, reason: "No symptoms reported", validUntil: input.endOfDay)
    }

    /// The platform's default first (an isolation is red); then a green badge needs a recent
    /// negative test.
    public func decide(_ input: HealthInput) -> BadgeDecision? {
        guard let decided = input.standardDecision else { return nil }
        guard decided.color == .green else { return decided }
        let due = "Test due: get tested to keep a green badge (one every \(testEveryDays) days)"
        guard let test = input.health.latestTest, !test.detected else {
            return BadgeDecision(color: .yellow, reason: due, validUntil: input.endOfDay)
        }
        // Days counted on the campus's dates: the test's collection day against today's.
        let collected = LocalDate(test.collected, in: input.timeZone)
        guard collected.days(until: input.date) <= testEveryDays else {
            return BadgeDecision(color: .yellow, reason: due, validUntil: input.endOfDay)
        }
        return decided
    }
}
