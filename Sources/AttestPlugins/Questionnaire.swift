/// A versioned symptom questionnaire of one campus.
public struct Questionnaire: Sendable, Codable, Equatable {
    /// Set by the platform when the version is published.
    public var version: Int
    public var title: String
    /// Title translations by locale (`es`, `fr-CA` …).
    public var titleTranslations: [String: String]
    public var questions: [Question]

    public init(version: Int, title: String, titleTranslations: [String: String] = [:], questions: [Question]) {
        self.version = version
        self.title = title
        self.titleTranslations = titleTranslations
        self.questions = questions
    }

    public func question(_ id: String) -> Question? { questions.first { $0.id == id } }
}

/// One question.
public struct Question: Sendable, Codable, Equatable {
    public enum Kind: String, Sendable, Codable, CaseIterable {
        case boolean, number, choice, text
    }

    /// `[a-z0-9_]+`, unique in its questionnaire.
    public var id: String
    public var kind: Kind
    public var required: Bool
    public var prompt: String
    /// Prompt translations by locale.
    public var translations: [String: String]
    /// Whether a `true` answer counts as a symptom in statistics (boolean questions).
    public var symptom: Bool
    /// number: inclusive bounds and unit.
    public var min: Double?
    public var max: Double?
    public var unit: String?
    /// choice: the allowed option ids.
    public var options: [String]?
    /// text: the longest answer, in characters.
    public var maxLength: Int?

    public init(
        id: String, kind: Kind, required: Bool = true, prompt: String, translations: [String: String] = [:],
        symptom: Bool = false, min: Double? = nil, max: Double? = nil, unit: String? = nil, options: [String]? = nil,
        maxLength: Int? = nil
    ) {
        self.id = id
        self.kind = kind
        self.required = required
        self.prompt = prompt
        self.translations = translations
        self.symptom = symptom
        self.min = min
        self.max = max
        self.unit = unit
        self.options = options
        self.maxLength = maxLength
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case id, kind, required, prompt, translations, symptom, min, max, unit, options, maxLength
    }

    /// The members a question's JSON may have.
    public static let fieldNames: [String] = CodingKeys.allCases.map(\.rawValue)

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        kind = try container.decode(Kind.self, forKey: .kind)
        required = try container.decodeIfPresent(Bool.self, forKey: .required) ?? true
        prompt = try container.decode(String.self, forKey: .prompt)
        translations = try container.decodeIfPresent([String: String].self, forKey: .translations) ?? [:]
        symptom = try container.decodeIfPresent(Bool.self, forKey: .symptom) ?? false
        min = try container.decodeIfPresent(Double.self, forKey: .min)
        max = try container.decodeIfPresent(Double.self, forKey: .max)
        unit = try container.decodeIfPresent(String.self, forKey: .unit)
        options = try container.decodeIfPresent([String].self, forKey: .options)
        maxLength = try container.decodeIfPresent(Int.self, forKey: .maxLength)
    }
}

/// Limits on text from outside, counted two ways: in characters, as people count them, and in
/// UTF-8 bytes, which is what memory and storage pay for. One character can carry hundreds of
/// bytes (a letter with combining marks after it), so a character limit alone bounds nothing.
/// The bytes are checked first: counting characters walks the text, its bytes do not.
public enum TextLimit {
    /// What is wrong with `text` for at most `characters` characters and `bytes` UTF-8
    /// bytes, or nil.
    public static func problem(_ text: String, characters: Int, bytes: Int) -> String? {
        let size = text.utf8.count
        if size > bytes { return "must be at most \(characters) characters and \(bytes) bytes of UTF-8 (this has \(size) bytes)" }
        let count = text.count
        if count > characters { return "must be at most \(characters) characters (this has \(count))" }
        return nil
    }
}
