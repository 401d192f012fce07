import AttestFoundation
import AttestPlugins
import Foundation

/// One thing wrong with a questionnaire or with answers: where, and what.
public struct FieldProblem: Sendable, Equatable, CustomStringConvertible {
    public var field: String
    public var message: String
    public init(_ field: String, _ message: String) {
        self.field = field
        self.message = message
    }
    public var description: String { "\(field): \(message)" }

    /// How a JSON member is named in a problem: as sent, or `""` for the empty name, which
    /// would otherwise name nothing.
    public static func name(_ key: String) -> String { key.isEmpty ? #""""# : key }
}

/// The checks a questionnaire passes before it is published, and that answers pass before
/// they are stored.
public enum QuestionnaireRules {
    /// What `attest survey publish` reads: a questionnaire without its version.
    public struct Draft: Decodable, Sendable {
        public var title: String
        public var titleTranslations: [String: String]?
        public var questions: [Question]

        public init(title: String, titleTranslations: [String: String]? = nil, questions: [Question]) {
            self.title = title
            self.titleTranslations = titleTranslations
            self.questions = questions
        }
    }

    /// Parses and checks a draft; throws `SurveysError.invalidQuestionnaire` listing every problem.
    public static func parse(_ data: Data) throws -> Draft {
        // The strict parser first: it says where the text stops being JSON, and refuses a key
        // given twice, of which JSONDecoder would silently keep one.
        let value: JSONValue
        do { value = try JSONValue(parsing: data) } catch {
            throw SurveysError.invalidQuestionnaire([FieldProblem("questionnaire", "is not valid JSON: \(error)")])
        }
        // A member the questionnaire does not have is refused, not dropped: "symptoms": true
        // (for "symptom") would leave a question out of every statistic, and no one would know.
        let unknown = unknownMembers(value)
        guard unknown.isEmpty else { throw SurveysError.invalidQuestionnaire(unknown) }
        let draft: Draft
        do {
            draft = try JSONDecoder().decode(Draft.self, from: data)
        } catch let error as DecodingError {
            throw SurveysError.invalidQuestionnaire([FieldProblem(path(of: error), describe(error))])
        }
        let problems = check(draft)
        guard problems.isEmpty else { throw SurveysError.invalidQuestionnaire(problems) }
        return draft
    }

    /// The members a draft may have; `version` is what `GET …/survey` gives back, and is left
    /// to publishing, which numbers the version itself.
    static let draftFields = ["title", "titleTranslations", "questions", "version"]

    /// Each member of the draft or of a question that is none of theirs, by its place (and a
    /// `maxLength` that is no whole number, which the decoder cannot place).
    static func unknownMembers(_ value: JSONValue) -> [FieldProblem] {
        guard case .object(let members) = value else { return [] }
        var problems = members.keys.sorted().filter { !draftFields.contains($0) }.map {
            FieldProblem(FieldProblem.name($0), "is not a member of a questionnaire (\(draftFields.dropLast().joined(separator: ", ")))")
        }
        if case .array(let questions)? = members["questions"] {
            for (index, question) in questions.enumerated() {
                guard case .object(let fields) = question else { continue }
                // JSONDecoder calls 2.5 for an integer "not valid JSON", with no place.
                if case .number(let length)? = fields["maxLength"], length.rounded() != length || abs(length) > 1e9 {
                    problems.append(.init("questions[\(index)].maxLength", "must be a whole number"))
                }
                for key in fields.keys.sorted() where !Question.fieldNames.contains(key) {
                    problems.append(
                        .init(
                            "questions[\(index)].\(FieldProblem.name(key))",
                            "is not a member of a question (\(Question.fieldNames.joined(separator: ", ")))"))
                }
            }
        }
        return problems
    }

    public static func check(_ draft: Draft) -> [FieldProblem] {
        var problems: [FieldProblem] = []
        if draft.title.isEmpty || draft.title.count > 200 || draft.title.allSatisfy(\.isWhitespace) {
            problems.append(.init("title", "must be 1 to 200 characters, not only spaces"))
        }
        problems += checkTranslations(draft.titleTranslations ?? [:], at: "titleTranslations")
        if draft.questions.isEmpty || draft.questions.count > 100 {
            problems.append(.init("questions", "must hold 1 to 100 questions"))
        }
        var seen: Set<String> = []
        for (index, question) in draft.questions.enumerated() {
            let at = "questions[\(index)]"
            if !isIdentifier(question.id) { problems.append(.init("\(at).id", "must be 1 to 40 characters of a-z, 0-9 and _")) }
            if !seen.insert(question.id).inserted { problems.append(.init("\(at).id", "\"\(question.id)\" is used twice")) }
            if question.prompt.isEmpty || question.prompt.count > 500 || question.prompt.allSatisfy(\.isWhitespace) {
                problems.append(.init("\(at).prompt", "must be 1 to 500 characters, not only spaces"))
            }
            problems += checkTranslations(question.translations, at: "\(at).translations")
            let isNumber = question.kind == .number, isChoice = question.kind == .choice, isText = question.kind == .text
            if !isNumber, question.min != nil || question.max != nil || question.unit != nil {
                problems.append(.init(at, "min, max and unit are for number questions only"))
            }
            if !isChoice, question.options != nil { problems.append(.init("\(at).options", "is for choice questions only")) }
            if !isText, question.maxLength != nil { problems.append(.init("\(at).maxLength", "is for text questions only")) }
            if question.symptom, question.kind != .boolean {
                problems.append(.init("\(at).symptom", "only yes/no questions count as symptoms"))
            }
            if let min = question.min, let max = question.max, min > max { problems.append(.init("\(at).min", "is greater than max")) }
            if [question.min, question.max].contains(where: { $0.map { !$0.isFinite } ?? false }) {
                problems.append(.init(at, "min and max must be finite numbers"))
            }
            if isChoice {
                let options = question.options ?? []
                if options.isEmpty || options.count > 50 { problems.append(.init("\(at).options", "must list 1 to 50 options")) }
                if Set(options).count != options.count { problems.append(.init("\(at).options", "lists an option twice")) }
                for option in options where !isIdentifier(option) {
                    problems.append(.init("\(at).options", "\"\(option)\" must be 1 to 40 characters of a-z, 0-9 and _"))
                }
            }
            if isText, let maxLength = question.maxLength, !(1...2000).contains(maxLength) {
                problems.append(.init("\(at).maxLength", "must be from 1 to 2000"))
            }
        }
        return problems
    }

    /// Checks answers against a questionnaire; returns every problem, by `answers.<id>`.
    /// Every submission passes here: nothing is sorted or formatted unless there is a problem.
    public static func check(_ raw: [String: JSONValue], against questionnaire: Questionnaire) -> (SurveyAnswers, [FieldProblem]) {
        var answers = SurveyAnswers(minimumCapacity: questionnaire.questions.count)
        var problems: [FieldProblem] = []
        var asked = 0
        for question in questionnaire.questions {
            let given = raw[question.id]
            if given != nil { asked += 1 }
            var field: String { "answers.\(question.id)" }
            guard let value = given, value != .null else {
                if question.required { problems.append(.init(field, "is required")) }
                continue
            }
            switch (question.kind, value) {
            case (.boolean, .bool(let flag)):
                answers[question.id] = .bool(flag)
            case (.boolean, _):
                problems.append(.init(field, "must be true or false"))
            case (.number, .number(let number)) where number.isFinite:
                if let min = question.min, number < min {
                    problems.append(.init(field, "must be at least \(format(min))\(unitSuffix(question))"))
                } else if let max = question.max, number > max {
                    problems.append(.init(field, "must be at most \(format(max))\(unitSuffix(question))"))
                } else {
                    answers[question.id] = .number(number)
                }
            case (.number, _):
                problems.append(.init(field, "must be a number"))
            case (.choice, .string(let choice)) where (question.options ?? []).contains(choice):
                answers[question.id] = .text(choice)
            case (.choice, _):
                problems.append(.init(field, "must be one of \((question.options ?? []).joined(separator: ", "))"))
            case (.text, .string(let text)):
                let limit = question.maxLength ?? 500
                if let problem = TextLimit.problem(text, characters: limit, bytes: 4 * limit) {
                    problems.append(.init(field, problem))
                } else if text.unicodeScalars.contains(where: { $0.value == 0 }) {
                    problems.append(.init(field, "must not contain NUL characters"))
                } else {
                    answers[question.id] = .text(text)
                }
            case (.text, _):
                problems.append(.init(field, "must be text"))
            }
        }
        // Keys that are no question come first, in order (a questionnaire's ids are unique, so
        // every key was asked for exactly when as many were found as were given).
        if asked < raw.count {
            let unknown = raw.keys.sorted().filter { questionnaire.question($0) == nil }.map {
                FieldProblem("answers.\(FieldProblem.name($0))", "is not a question of questionnaire version \(questionnaire.version)")
            }
            problems = unknown + problems
        }
        return (answers, problems)
    }

    static func isIdentifier(_ text: String) -> Bool {
        (1...40).contains(text.utf8.count)
            && text.utf8.allSatisfy { (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x5F }
    }

    static func isLocale(_ text: String) -> Bool {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard let first = parts.first, (2...3).contains(first.count), first.allSatisfy({ $0.isASCII && $0.isLetter }) else { return false }
        return parts.dropFirst().allSatisfy { (2...8).contains($0.count) && $0.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) } }
    }

    static func checkTranslations(_ translations: [String: String], at path: String) -> [FieldProblem] {
        translations.keys.sorted().compactMap { locale in
            if !isLocale(locale) { return FieldProblem(path, "\"\(locale)\" is not a language tag such as es or pt-BR") }
            if let text = translations[locale], text.isEmpty || text.count > 500 {
                return FieldProblem("\(path).\(locale)", "must be 1 to 500 characters")
            }
            return nil
        }
    }

    /// A bound as a person reads it: whole numbers without ".0", whatever their magnitude.
    static func format(_ number: Double) -> String {
        var text = ""
        JSONText.appendNumber(number, to: &text)
        return text
    }

    static func unitSuffix(_ question: Question) -> String { question.unit.map { " \($0)" } ?? "" }

    static func path(of error: DecodingError) -> String {
        let context: DecodingError.Context
        switch error {
        case .keyNotFound(let key, let c): return joined(c.codingPath + [key])
        case .typeMismatch(_, let c), .valueNotFound(_, let c), .dataCorrupted(let c): context = c
        @unknown default: return "questionnaire"
        }
        let path = joined(context.codingPath)
        return path.isEmpty ? "questionnaire" : path
    }

    /// What a value of `type` is, as a person writes one in JSON.
    static func expected(_ type: Any.Type) -> String {
        if type == String.self { return "a string" }
        if type == Bool.self { return "true or false" }
        if type == Double.self { return "a number" }
        if type == Int.self { return "a whole number" }
        let name = String(describing: type)
        if name.hasPrefix("Array") { return "a list [ … ]" }
        if name.hasPrefix("Dictionary") { return "an object { … }" }
        return "a \(name)"
    }

    /// A coding path as the other problems name places: `questions[0].min`.
    static func joined(_ path: [any CodingKey]) -> String {
        path.reduce(into: "") { text, key in
            if let index = key.intValue {
                text += "[\(index)]"
            } else {
                text += (text.isEmpty ? "" : ".") + key.stringValue
            }
        }
    }

    static func describe(_ error: DecodingError) -> String {
        switch error {
        case .keyNotFound: "is required"
        case .typeMismatch(let type, _): "must be \(expected(type))"
        case .valueNotFound: "must not be null"
        case .dataCorrupted(let context):
            context.codingPath.last?.stringValue == "kind"
                ? "must be one of \(Question.Kind.allCases.map(\.rawValue).joined(separator: ", "))"
                : "is not valid JSON here (\(context.debugDescription))"
        @unknown default: "is not valid"
        }
    }
}
