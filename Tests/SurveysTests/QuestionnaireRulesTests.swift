import AttestPlugins
import Foundation
import Surveys
import Testing

@Suite("Questionnaire checks")
struct QuestionnaireRulesTests {
    func problems(_ json: String) -> [String] {
        do {
            _ = try QuestionnaireRules.parse(Data(json.utf8))
            return []
        } catch SurveysError.invalidQuestionnaire(let problems) {
            return problems.map(\.description)
        } catch {
            return ["\(error)"]
        }
    }

    @Test func theDemoQuestionnairePasses() {
        #expect(QuestionnaireRules.check(DemoQuestionnaire.draft).isEmpty)
        #expect(DemoQuestionnaire.draft.questions.count == 14)
    }

    @Test func everyProblemIsNamedByItsPlace() {
        let found = problems(
            """
            {"title": "", "questions": [
              {"id": "Fever", "kind": "boolean", "prompt": "Fever?"},
              {"id": "cough", "kind": "boolean", "prompt": "Cough?", "options": ["a"]},
              {"id": "cough", "kind": "boolean", "prompt": "Again?"},
              {"id": "temp", "kind": "number", "prompt": "Temp", "min": 43, "max": 34},
              {"id": "mood", "kind": "choice", "prompt": "Mood", "options": ["good", "good", "Bad!"]},
              {"id": "notes", "kind": "text", "prompt": "Notes", "maxLength": 0, "symptom": true},
              {"id": "lang", "kind": "boolean", "prompt": "x", "translations": {"not a tag": "y"}}
            ]}
            """)
        for expected in [
            "title: must be 1 to 200", "questions[0].id: must be 1 to 40", "questions[1].options: is for choice",
            "questions[2].id: \"cough\" is used twice", "questions[3].min: is greater than max",
            "questions[4].options: lists an option twice",
            "questions[4].options: \"Bad!\"", "questions[5].maxLength: must be from 1 to 2000", "questions[5].symptom",
            "questions[6].translations: \"not a tag\"",
        ] {
            #expect(found.contains { $0.hasPrefix(expected) || $0.contains(expected) }, "\(expected) not in \(found)")
        }
        #expect(
            problems(#"{"title": "x", "questions": [{"id": "a", "kind": "slider", "prompt": "?"}]}"#).first?.contains(
                "boolean, number, choice, text") == true)
        #expect(problems(#"{"title": "x"}"#).first?.hasPrefix("questions: is required") == true)
        #expect(problems("not json").count == 1)
        // Where the text stops being JSON, and a key given twice (JSONDecoder keeps one silently).
        #expect(problems(#"{"title": "x", "questions": ["#) == ["questionnaire: is not valid JSON: unexpected end of text at byte 29"])
        #expect(problems(#"{"title": "x", "title": "y", "questions": []}"#).first?.contains(#"the key "title" repeated"#) == true)
    }

    /// A member the questionnaire does not have is named, not dropped (a misspelt `symptom`
    /// left a question out of every statistic); places are written as the other problems
    /// write them, and types as JSON has them; a prompt of spaces is no prompt.
    @Test func unknownMembersWrongTypesAndBlankTextAreNamed() {
        #expect(
            problems(
                #"{"title": "x", "description": "d", "questions": [{"id": "a", "kind": "boolean", "prompt": "A?", "symptoms": true}, 1]}"#
            ) == [
                "description: is not a member of a questionnaire (title, titleTranslations, questions)",
                "questions[0].symptoms: is not a member of a question (id, kind, required, prompt, translations, symptom, min, max, unit, options, maxLength)",
            ])
        // What GET …/survey gives back may be published again: its version is left to publishing.
        #expect(problems(#"{"version": 3, "title": "x", "questions": [{"id": "a", "kind": "boolean", "prompt": "A?"}]}"#) == [])
        #expect(
            problems(#"{"title": "x", "questions": [{"id": "n", "kind": "number", "prompt": "N", "min": "NaN"}]}"#) == [
                "questions[0].min: must be a number"
            ])
        #expect(problems(#"{"title": "x", "questions": {"id": "n"}}"#) == ["questions: must be a list [ … ]"])
        #expect(
            problems(#"{"title": "x", "questions": [{"id": "n", "kind": "boolean", "prompt": "N", "translations": []}]}"#) == [
                "questions[0].translations: must be an object { … }"
            ])
        #expect(
            problems(#"{"title": "x", "questions": [{"id": "n", "kind": "text", "prompt": "N", "maxLength": 2.5}]}"#) == [
                "questions[0].maxLength: must be a whole number"
            ])
        #expect(
            problems(#"{"title": " ", "questions": [{"id": "n", "kind": "boolean", "prompt": " \t "}]}"#) == [
                "title: must be 1 to 200 characters, not only spaces", "questions[0].prompt: must be 1 to 500 characters, not only spaces",
            ])
    }

    @Test func answersAreCheckedAgainstTheirVersion() throws {
        let questionnaire = Questionnaire(
            version: 7, title: "t",
            questions: [
                Question(id: "fever", kind: .boolean, prompt: "?", symptom: true),
                Question(id: "temperature", kind: .number, required: false, prompt: "?", min: 34, max: 43, unit: "°C"),
                Question(id: "mood", kind: .choice, required: false, prompt: "?", options: ["good", "bad"]),
                Question(id: "notes", kind: .text, required: false, prompt: "?", maxLength: 5),
            ])
        func check(_ json: String) throws -> (SurveyAnswers, [String]) {
            let raw = try JSONDecoder().decode([String: JSONValue].self, from: Data(json.utf8))
            let (answers, problems) = QuestionnaireRules.check(raw, against: questionnaire)
            return (answers, problems.map(\.description))
        }
        let (good, none) = try check(#"{"fever": false, "temperature": 36.6, "mood": "good", "notes": "fine"}"#)
        #expect(none.isEmpty)
        #expect(good == ["fever": .bool(false), "temperature": .number(36.6), "mood": .text("good"), "notes": .text("fine")])
        let (_, bad) = try check(#"{"fever": "yes", "temperature": 50, "mood": "meh", "notes": "too long", "shoe": 42}"#)
        #expect(
            bad == [
                "answers.shoe: is not a question of questionnaire version 7",
                "answers.fever: must be true or false",
                "answers.temperature: must be at most 43 °C",
                "answers.mood: must be one of good, bad",
                "answers.notes: must be at most 5 characters (this has 8)",
            ])
        #expect(try check(#"{}"#).1 == ["answers.fever: is required"])
        #expect(try check(#"{"fever": 1}"#).1 == ["answers.fever: must be true or false"])
        #expect(try check(#"{"fever": true, "temperature": true}"#).1 == ["answers.temperature: must be a number"])
        #expect(try check(#"{"fever": true, "temperature": 20}"#).1 == ["answers.temperature: must be at least 34 °C"])
        #expect(try check(#"{"fever": true, "notes": "a\u0000b"}"#).1 == ["answers.notes: must not contain NUL characters"])
        #expect(try check(#"{"fever": null}"#).1 == ["answers.fever: is required"])
        // An empty question id is named, not left to read as `answers` itself.
        #expect(try check(#"{"fever": true, "": 1}"#).1 == [#"answers."": is not a question of questionnaire version 7"#])
    }

    @Test func acceptLanguagePicksTheBestTranslation() {
        let questionnaire = Questionnaire(
            version: 1, title: "Check", titleTranslations: ["es": "Control", "pt-BR": "Verificação"],
            questions: [Question(id: "fever", kind: .boolean, prompt: "Fever?", translations: ["es": "¿Fiebre?", "pt-BR": "Febre?"])])
        #expect(questionnaire.localized(acceptLanguage: "es-MX,es;q=0.9,en;q=0.8").language == "es")
        #expect(questionnaire.localized(acceptLanguage: "es-MX").questionnaire.questions[0].prompt == "¿Fiebre?")
        #expect(questionnaire.localized(acceptLanguage: "fr, pt-br;q=0.5").language == "pt-BR")
        #expect(questionnaire.localized(acceptLanguage: "en-US,en;q=0.9").language == nil)
        #expect(questionnaire.localized(acceptLanguage: "es;q=0, fr").language == nil)
        #expect(questionnaire.localized(acceptLanguage: nil).questionnaire == questionnaire)
    }
}

extension QuestionnaireRulesTests {
    /// A bound past Int's range once trapped the process when an answer fell outside it
    /// (`Int(Double)` while writing the message); now the bound is written as JSON writes it.
    @Test func boundsOfAnyMagnitudeAreNamedInTheMessage() throws {
        let questionnaire = Questionnaire(
            version: 1, title: "t",
            questions: [
                Question(id: "low", kind: .number, prompt: "?", min: 9.3e18, max: 1e300),
                Question(id: "high", kind: .number, prompt: "?", min: -1e300, max: -9.3e18),
                Question(id: "whole", kind: .number, prompt: "?", min: 1, max: 9_007_199_254_740_991),
            ])
        let raw: [String: JSONValue] = ["low": .number(1), "high": .number(0), "whole": .number(1e300)]
        let (answers, problems) = QuestionnaireRules.check(raw, against: questionnaire)
        #expect(answers.isEmpty)
        #expect(
            problems.map(\.description) == [
                "answers.low: must be at least 9.3e+18", "answers.high: must be at most -9.3e+18",
                "answers.whole: must be at most 9007199254740991",
            ])
    }
}
