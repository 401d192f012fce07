import AttestFoundation
import AttestPlugins
import Foundation

/// What the platform expects of every badge rule, checked over the inputs a test gives: the
/// same input gives the same decision (a rule is a function of its input), the colour is
/// never gray (gray means "not submitted"), the reason is not empty, the badge is valid no
/// longer than the day, the decision comes within the platform's budget (100 ms), the rule
/// reads no more of the past than its `historyNeed` names, and its reason in the pages'
/// languages (`localize`) comes within the budget, is the same each time and is never empty. Returns every problem found,
/// each naming its input; none for a conforming rule.
public enum BadgeRuleConformance {
    public static let budget: Duration = .milliseconds(100)

    public static func problems(_ rule: some BadgeRule, inputs: [BadgeRuleInput]) -> [String] {
        var problems: [String] = []
        let need = rule.historyNeed
        for (index, input) in inputs.enumerated() {
            let name = "input \(index + 1)"
            if input.history.contains(where: { input.date.days(until: $0.date) < -need.days }) {
                problems.append("\(name): the test gave more history than the rule's historyNeed (\(need.days) days)")
            }
            let started = ContinuousClock.now
            let first: BadgeDecision, second: BadgeDecision
            do {
                first = try rule.evaluate(input)
                second = try rule.evaluate(input)
            } catch {
                problems.append("\(name): threw \(error) (the platform makes that yellow \"needs review\")")
                continue
            }
            let elapsed = (ContinuousClock.now - started) / 2
            if elapsed > budget { problems.append("\(name): took \(elapsed), over the \(budget) budget") }
            if first.color != second.color || first.reason != second.reason || first.validUntil != second.validUntil {
                problems.append("\(name): two evaluations disagree (\(first.color) and \(second.color)): a rule must be deterministic")
            }
            if first.color == .gray { problems.append("\(name): answered gray, which means \"not submitted\"") }
            if first.reason.isEmpty { problems.append("\(name): gave no reason") }
            if first.validUntil > input.endOfDay { problems.append("\(name): valid past the end of the day (\(first.validUntil))") }
            for language in WrittenLanguages.all {
                let asked = ContinuousClock.now
                let once = rule.localize(reason: first.reason, language: language)
                if ContinuousClock.now - asked > budget {
                    problems.append("\(name): its reason in \(language) took over the \(budget) budget")
                }
                if once != rule.localize(reason: first.reason, language: language) {
                    problems.append("\(name): two of its reason's words in \(language) disagree: localize must be deterministic")
                }
                if once?.isEmpty == true { problems.append("\(name): its reason in \(language) is empty (nil shows it as given)") }
            }
        }
        return problems
    }
}
