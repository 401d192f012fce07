import AttestPlugins
import AttestServer
import Foundation
import Surveys

/// A questionnaire as a form, for the members' survey and the guests': each question's
/// field, its hint and error, and the form's answers read back as the API takes them.
enum SurveyForm {
    /// What was typed, by question id, and the message for each question in error.
    struct Entry {
        var values: [String: String] = [:]
        var errors: [String: String] = [:]
        var notice: String?
    }

    /// The template data of each question (the `questions` partial).
    static func questions(_ questionnaire: Questionnaire, entry: Entry, visit: WebVisit) -> [[String: Any]] {
        let firstError = questionnaire.questions.first { entry.errors[$0.id] != nil }?.id
        return questionnaire.questions.map { question in
            let fieldID = "q-\(question.id)", name = "answers.\(question.id)"
            let value = entry.values[question.id] ?? ""
            var item: [String: Any] = [
                "fieldID": fieldID, "name": name, "prompt": question.prompt, "required": question.required, "value": value,
                "isChoiceLike": question.kind == .boolean || question.kind == .choice, "isNumber": question.kind == .number,
                "isText": question.kind == .text, "hasError": false, "autofocus": false,
            ]
            var described: [String] = []
            if let hint = hint(question, visit: visit) {
                item["hint"] = hint
                described.append(fieldID + "-hint")
            }
            if let error = entry.errors[question.id] {
                item["hasError"] = true
                item["error"] = error
                described.append(fieldID + "-error")
            }
            if !described.isEmpty { item["describedBy"] = described.joined(separator: " ") }
            if firstError == question.id { item["autofocus"] = true }
            if let unit = question.unit { item["unit"] = unit }
            let choices: [(value: String, label: String)] =
                question.kind == .boolean
                ? [("yes", visit["yes"]), ("no", visit["no"])]
                : (question.options ?? []).map { ($0, WebFormat.words($0)) }
            item["options"] = choices.enumerated().map { index, choice -> [String: Any] in
                [
                    "name": name, "value": choice.value, "label": choice.label, "id": index == 0 ? fieldID : "\(fieldID)-\(index)",
                    "checked": value == choice.value, "autofocus": index == 0 && firstError == question.id,
                ]
            }
            return item
        }
    }

    /// Puts the error summary's entries into `data`; returns how many.
    static func errors(_ questionnaire: Questionnaire, entry: Entry, into data: inout [String: Any]) -> Int {
        let errors = questionnaire.questions.compactMap { question in
            entry.errors[question.id].map { ["anchor": "q-\(question.id)", "message": $0] }
        }
        if !errors.isEmpty {
            data["hasErrors"] = true
            data["errors"] = errors
        }
        return errors.count
    }

    static func hint(_ question: Question, visit: WebVisit) -> String? {
        switch question.kind {
        case .number:
            guard let min = question.min, let max = question.max else { return nil }
            return visit.format("numberHint", WebFormat.percent(min), WebFormat.percent(max)) + (question.unit.map { " \($0)" } ?? "")
        case .text: return visit.format("textHint", "\(question.maxLength ?? 500)")
        default: return nil
        }
    }

    /// The person's words for what is wrong with an answer.
    static func message(_ question: Question, value: String, visit: WebVisit) -> String {
        let es = visit.language == "es"
        switch question.kind {
        case .boolean: return es ? "Elija sí o no." : "Choose yes or no."
        case .choice: return es ? "Elija una de las opciones." : "Choose one of the options."
        case .number:
            if value.isEmpty { return es ? "Escriba un número." : "Enter a number." }
            let range = hint(question, visit: visit).map { " (\($0))" } ?? ""
            return (es ? "Escriba un número válido" : "Enter a valid number") + range + "."
        case .text:
            if value.isEmpty { return es ? "Escriba una respuesta." : "Enter an answer." }
            return visit.format("textHint", "\(question.maxLength ?? 500)") + "."
        }
    }

    /// The form's answers (`answers.<id>`) as the API takes them, checked as it checks them:
    /// what was typed, and a message by each question in error.
    static func read(_ form: WebForm, questionnaire: Questionnaire, visit: WebVisit) -> ([String: JSONValue], Entry) {
        var entry = Entry()
        var raw: [String: JSONValue] = [:]
        for question in questionnaire.questions {
            let value = (form["answers.\(question.id)"] ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
            entry.values[question.id] = value
            guard !value.isEmpty else { continue }
            switch question.kind {
            case .boolean: raw[question.id] = value == "yes" ? .bool(true) : value == "no" ? .bool(false) : .string(value)
            case .number:
                let number = Double(value.replacingOccurrences(of: ",", with: "."))
                raw[question.id] = number.map(JSONValue.number) ?? .string(value)
            case .choice, .text: raw[question.id] = .string(value)
            }
        }
        let (_, problems) = QuestionnaireRules.check(raw, against: questionnaire)
        for problem in problems {
            let id = String(problem.field.dropFirst("answers.".count))
            if let question = questionnaire.question(id) {
                entry.errors[id] = message(question, value: entry.values[id] ?? "", visit: visit)
            }
        }
        return (raw, entry)
    }
}
