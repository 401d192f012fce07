import AttestPlugins
import Foundation

extension Question {
    /// A yes/no question (a symptom by default, as most are).
    public static func yesNo(_ id: String, _ prompt: String? = nil, symptom: Bool = true, required: Bool = true) -> Question {
        Question(id: id, kind: .boolean, required: required, prompt: prompt ?? id, symptom: symptom)
    }

    /// A number question with its range and unit.
    public static func number(
        _ id: String, _ prompt: String? = nil, min: Double? = nil, max: Double? = nil, unit: String? = nil, required: Bool = false
    ) -> Question {
        Question(id: id, kind: .number, required: required, prompt: prompt ?? id, min: min, max: max, unit: unit)
    }

    /// A question with one of `options` for an answer.
    public static func choice(_ id: String, _ prompt: String? = nil, options: [String], required: Bool = true) -> Question {
        Question(id: id, kind: .choice, required: required, prompt: prompt ?? id, options: options)
    }
}

extension Questionnaire {
    /// A questionnaire for tests: version 1 unless told, the title "Daily check".
    public static func testing(version: Int = 1, _ questions: Question...) -> Questionnaire {
        Questionnaire(version: version, title: "Daily check", questions: questions)
    }
}

extension BadgeRuleInput {
    /// What the platform hands a rule, for tests: `answers` to `questionnaire` on
    /// 2026-11-20 at 09:00 UTC, the day ending at midnight UTC, no history unless given.
    public static func testing(
        _ answers: SurveyAnswers, questionnaire: Questionnaire, history: [PastAttestation] = [],
        campusSettings: JSONValue = .object([:]), date: LocalDate = LocalDate(year: 2026, month: 11, day: 20)
    ) -> BadgeRuleInput {
        let start = date.start(in: TimeZone(identifier: "UTC") ?? .gmt)
        return BadgeRuleInput(
            answers: answers, questionnaire: questionnaire, campusSettings: campusSettings, history: history, date: date,
            now: start.addingTimeInterval(9 * 3600), endOfDay: start.addingTimeInterval(86_400))
    }
}
