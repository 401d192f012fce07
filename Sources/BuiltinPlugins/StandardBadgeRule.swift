import AttestFoundation
import AttestPlugins
import Foundation

/// The built-in `standard` badge rule: a declarative table per campus, so a campus changes
/// its rules without a new build. Rules are tried in order and the first match wins; when none
/// matches, `default` applies.
///
/// ```json
/// {
///   "rules": [
///     {"when": {"question": "positive_test", "equals": true}, "color": "red",
///      "reason": "Positive test in the last 10 days", "lastsDays": 10},
///     {"when": {"question": "temperature", "gte": 38.0}, "color": "red", "reason": "Temperature of 38 °C or more"},
///     {"when": {"any": [{"question": "fever", "equals": true}, {"question": "cough", "equals": true}]},
///      "color": "yellow", "reason": "Symptoms reported"}
///   ],
///   "default": {"color": "green", "reason": "No symptoms reported"}
/// }
/// ```
///
/// A condition is `{"all": [...]}`, `{"any": [...]}`, or a predicate on one question:
/// `equals`, `in` (a list), `gte`, `lte`. A rule with `lastsDays: N` also matches when the
/// member's answers on any of the previous N-1 days matched it (so "red for 10 days after a
/// positive test" is one rule); N is at most 15, since a rule is given the previous 14 days.
///
/// `health` (optional) is a second table, on the member's health record (DESIGN §11), tried
/// in order after the answers' badge is known, the first match kept:
///
/// ```json
/// "health": [
///   {"when": {"record": "positive-test"}, "color": "red", "reason": "Positive test: stay home"},
///   {"when": {"all": [{"record": "not-exempt"}, {"testOlderThanDays": 7}]}, "color": "yellow",
///    "reason": "Weekly test due: get tested to keep a green badge"}
/// ]
/// ```
///
/// A health condition is `all`/`any` as above, `{"record": R}` with R one of `isolated`,
/// `quarantined`, `exempt`, `not-exempt`, `positive-test`, `no-test`, `vaccinated` (the series
/// completed 14 days or more before), `not-vaccinated` (on the day decided), or
/// `{"testOlderThanDays": N}` (1 to 365: no negative test collected in the last N days). A
/// matching rule's colour is shown when it is worse than the answers' (for a member who has not
/// answered, only a red one is); an isolation or quarantine is red whatever the table says.
///
/// Every rule, health rule and `default` may carry `translations`, its reason in other
/// languages, as a questionnaire's prompts do: `{"es": "No se informaron síntomas"}`. A badge
/// keeps the reason as written; a page in one of those languages shows the translation
/// (`localize`), and a `lastsDays` rule's "(reported …; applies through …)" in Spanish too.
public struct StandardBadgeRule: BadgeRule {
    public static let id = "standard"

    /// One pass over the campus's table with no I/O: microseconds for a table within
    /// `maxConditions` (one past the budget still gives yellow "needs review").
    public var evaluatesInline: Bool { true }

    /// The most conditions a table may hold, counting each `all`/`any`, each predicate and
    /// each value of an `in` list. The rule runs on every submission's own task, so its
    /// size is bounded where it is enabled rather than found out at the door.
    public static let maxConditions = 1_000

    indirect enum Condition: Sendable, Equatable {
        case all([Condition])
        case any([Condition])
        case equals(question: String, value: AnswerValue)
        case among(question: String, values: [AnswerValue])
        case atLeast(question: String, value: Double)
        case atMost(question: String, value: Double)

        /// The questions this condition reads.
        var questions: Set<String> {
            switch self {
            case .all(let conditions), .any(let conditions): conditions.reduce(into: []) { $0.formUnion($1.questions) }
            case .equals(let question, _), .among(let question, _), .atLeast(let question, _), .atMost(let question, _): [question]
            }
        }

        /// How many conditions this is, as `maxConditions` counts them.
        var size: Int {
            switch self {
            case .all(let conditions), .any(let conditions): 1 + conditions.reduce(0) { $0 + $1.size }
            case .among(_, let values): values.count
            case .equals, .atLeast, .atMost: 1
            }
        }
    }

    struct Rule: Sendable, Equatable {
        var when: Condition
        var color: BadgeColor
        var reason: String
        var lastsDays: Int
        var translations: [String: String] = [:]
    }

    /// A condition on the member's health record.
    indirect enum HealthCondition: Sendable, Equatable {
        case all([HealthCondition])
        case any([HealthCondition])
        case record(String)
        case testOlderThan(days: Int)

        static let records: Set<String> = [
            "isolated", "quarantined", "exempt", "not-exempt", "positive-test", "no-test", "vaccinated", "not-vaccinated",
        ]

        var size: Int {
            switch self {
            case .all(let conditions), .any(let conditions): 1 + conditions.reduce(0) { $0 + $1.size }
            case .record, .testOlderThan: 1
            }
        }

        func matches(_ input: HealthInput) -> Bool {
            let health = input.health
            switch self {
            case .all(let conditions): return conditions.allSatisfy { $0.matches(input) }
            case .any(let conditions): return conditions.contains { $0.matches(input) }
            case .record("isolated"): return health.restriction(on: input.date)?.kind == .isolation
            case .record("quarantined"): return health.restriction(on: input.date)?.kind == .quarantine
            case .record("exempt"): return health.exemption(on: input.date) != nil
            case .record("not-exempt"): return health.exemption(on: input.date) == nil
            case .record("positive-test"): return health.latestTest?.detected == true
            case .record("no-test"): return health.latestTest == nil
            case .record("vaccinated"): return health.vaccinated(on: input.date)
            case .record("not-vaccinated"): return !health.vaccinated(on: input.date)
            case .record: return false
            case .testOlderThan(let days):
                guard let test = health.latestTest, !test.detected else { return true }
                return LocalDate(test.collected, in: input.timeZone).days(until: input.date) > days
            }
        }
    }

    struct HealthRule: Sendable, Equatable {
        var when: HealthCondition
        var color: BadgeColor
        var reason: String
        var translations: [String: String] = [:]
    }

    let rules: [Rule]
    let healthRules: [HealthRule]
    let fallback: (color: BadgeColor, reason: String, translations: [String: String])
    public let version: String
    /// Only rules with `lastsDays` look back, and only at their own questions over their own
    /// days: the default table reads one answer (positive test) of the previous 9 days, and
    /// a table without `lastsDays` reads no past at all.
    public let historyNeed: HistoryNeed

    /// `settings` null means the default table for `questionnaire` (see `defaultSettings`).
    public init(settings given: JSONValue, questionnaire: Questionnaire?) throws {
        let settings = given == .null ? questionnaire.map(Self.defaultSettings(for:)) ?? given : given
        guard case .object(let object) = settings else { throw PluginSettingsError("the standard rule's settings must be a JSON object") }
        guard case .array(let list)? = object["rules"] else {
            throw PluginSettingsError("the standard rule's settings need \"rules\": a list of {when, color, reason}")
        }
        rules = try list.enumerated().map { index, item in try Self.rule(item, at: "rules[\(index)]", questionnaire) }
        if let health = object["health"] {
            guard case .array(let items) = health else {
                throw PluginSettingsError("health must be a list of {when, color, reason} on the member's health record")
            }
            healthRules = try items.enumerated().map { index, item in try Self.healthRule(item, at: "health[\(index)]") }
        } else {
            healthRules = []
        }
        let size = rules.reduce(0) { $0 + $1.when.size } + healthRules.reduce(0) { $0 + $1.when.size }
        guard size <= Self.maxConditions else {
            throw PluginSettingsError(
                "the table has \(size) conditions (each all/any, predicate and value of an in list counts); the standard rule "
                    + "takes at most \(Self.maxConditions): merge rules that give the same colour, or shorten the in lists")
        }
        let lasting = rules.filter { $0.lastsDays > 1 }
        historyNeed = HistoryNeed(
            days: lasting.map { $0.lastsDays - 1 }.max() ?? 0, questions: lasting.reduce(into: []) { $0.formUnion($1.when.questions) })
        if let fallback = object["default"] {
            let color = try Self.color(fallback["color"], at: "default.color")
            guard case .string(let reason)? = fallback["reason"] else { throw PluginSettingsError("default.reason must be a string") }
            self.fallback = (color, reason, try Self.translations(fallback["translations"], at: "default.translations"))
        } else {
            fallback = (.green, "No symptoms reported", Self.defaultTranslations["No symptoms reported"] ?? [:])
        }
        // The version changes whenever the table does: a stable digest of the settings.
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let canonical = (try? encoder.encode(settings)) ?? Data()
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325  // FNV-1a
        for byte in canonical { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        version = "1." + String(hash, radix: 16)
    }

    /// A table for a questionnaire that follows the demo's ids: positive test → red for 10
    /// days, temperature ≥ 38 → red, any symptom or close contact → yellow, else green.
    public static func defaultSettings(for questionnaire: Questionnaire) -> JSONValue {
        var rules: [JSONValue] = []
        if let test = questionnaire.question("positive_test"), test.kind == .boolean {
            rules.append(
                .object([
                    "when": .object(["question": .string(test.id), "equals": .bool(true)]), "color": .string("red"),
                    "reason": .string("Positive test in the last 10 days"), "lastsDays": .number(10),
                    "translations": translated("Positive test in the last 10 days"),
                ]))
        }
        if let temperature = questionnaire.question("temperature"), temperature.kind == .number {
            rules.append(
                .object([
                    "when": .object(["question": .string(temperature.id), "gte": .number(38.0)]), "color": .string("red"),
                    "reason": .string("Temperature of 38 °C or more"), "translations": translated("Temperature of 38 °C or more"),
                ]))
        }
        let flagged = questionnaire.questions.filter {
            $0.kind == .boolean && ($0.symptom || $0.id == "close_contact") && $0.id != "positive_test"
        }
        if !flagged.isEmpty {
            rules.append(
                .object([
                    "when": .object(["any": .array(flagged.map { .object(["question": .string($0.id), "equals": .bool(true)]) })]),
                    "color": .string("yellow"), "reason": .string("Symptoms or a close contact reported"),
                    "translations": translated("Symptoms or a close contact reported"),
                ]))
        }
        return .object([
            "rules": .array(rules),
            "default": .object([
                "color": .string("green"), "reason": .string("No symptoms reported"), "translations": translated("No symptoms reported"),
            ]),
        ])
    }

    /// The default table's reasons in the languages the pages speak.
    static let defaultTranslations: [String: [String: String]] = [
        "Positive test in the last 10 days": ["es": "Prueba positiva en los últimos 10 días"],
        "Temperature of 38 °C or more": ["es": "Temperatura de 38 °C o más"],
        "Symptoms or a close contact reported": ["es": "Síntomas o un contacto cercano informados"],
        "No symptoms reported": ["es": "No se informaron síntomas"],
    ]

    private static func translated(_ reason: String) -> JSONValue {
        .object((defaultTranslations[reason] ?? [:]).mapValues { .string($0) })
    }

    /// How a `lastsDays` rule's reason reads when a past day's answers matched it, per
    /// language (`evaluate` writes the English).
    static let lastingWords = ["es": "{reason} (informado el {reported}; vale hasta el {until})"]

    /// The reason in `language` (its primary subtag too: `es-MX` takes `es`) when the table
    /// has words for it; nil otherwise (a reason of an older table, a language it lacks).
    public func localize(reason: String, language: String) -> String? {
        let primary = language.split(separator: "-").first.map { $0.lowercased() } ?? language
        func words(_ translations: [String: String]) -> String? { translations[language] ?? translations[primary] }
        for rule in rules {
            if rule.reason == reason { return words(rule.translations) }
            // "<reason> (reported 2026-11-20; applies through 2026-11-29)"
            guard rule.lastsDays > 1, reason.hasPrefix(rule.reason), let local = words(rule.translations),
                let template = Self.lastingWords[primary],
                let match = reason.dropFirst(rule.reason.count).wholeMatch(
                    of: /\ \(reported (\d{4}-\d{2}-\d{2}); applies through (\d{4}-\d{2}-\d{2})\)/)
            else { continue }
            return template.filled(["reason": local, "reported": String(match.1), "until": String(match.2)])
        }
        if let rule = healthRules.first(where: { $0.reason == reason }) { return words(rule.translations) }
        return fallback.reason == reason ? words(fallback.translations) : nil
    }

    public func evaluate(_ input: BadgeRuleInput) throws -> BadgeDecision {
        for rule in rules {
            if Self.matches(rule.when, input.answers) {
                return BadgeDecision(color: rule.color, reason: rule.reason, validUntil: input.endOfDay)
            }
            guard rule.lastsDays > 1 else { continue }
            for past in input.history {
                let age = past.date.days(until: input.date)
                guard age > 0, age < rule.lastsDays, let answers = past.answers, Self.matches(rule.when, answers) else { continue }
                let until = past.date.adding(days: rule.lastsDays - 1)
                return BadgeDecision(
                    color: rule.color, reason: "\(rule.reason) (reported \(past.date); applies through \(until))",
                    validUntil: input.endOfDay)
            }
        }
        return BadgeDecision(color: fallback.color, reason: fallback.reason, validUntil: input.endOfDay)
    }

    /// The platform's default (an isolation or quarantine is red), then the `health` table's
    /// first match where it is worse than that.
    public func decide(_ input: HealthInput) -> BadgeDecision? {
        let standard = input.standardDecision
        guard let rule = healthRules.first(where: { $0.when.matches(input) }) else { return standard }
        let candidate = BadgeDecision(color: rule.color, reason: rule.reason, validUntil: input.endOfDay)
        guard let standard else { return rule.color == .red ? candidate : nil }
        return rule.color > standard.color ? candidate : standard
    }

    static func matches(_ condition: Condition, _ answers: SurveyAnswers) -> Bool {
        switch condition {
        case .all(let conditions): return conditions.allSatisfy { matches($0, answers) }
        case .any(let conditions): return conditions.contains { matches($0, answers) }
        case .equals(let question, let value): return answers[question].map { same($0, value) } ?? false
        case .among(let question, let values): return answers[question].map { answer in values.contains { same(answer, $0) } } ?? false
        case .atLeast(let question, let bound):
            if case .number(let number)? = answers[question] { return number >= bound }
            return false
        case .atMost(let question, let bound):
            if case .number(let number)? = answers[question] { return number <= bound }
            return false
        }
    }

    private static func same(_ lhs: AnswerValue, _ rhs: AnswerValue) -> Bool {
        switch (lhs, rhs) {
        case (.number(let a), .number(let b)): a == b
        default: lhs == rhs
        }
    }

    // MARK: Parsing the table

    /// The members of a table that the parser would pass over, and conditions that give more
    /// than one form (`gte` and `lte` together: only one was compared), each by its place.
    @Sendable static func unknownMembers(_ settings: JSONValue) -> [String] {
        var problems = PluginRegistry.unknownMembers(of: settings, allowed: ["rules", "health", "default"])
        for (list, health) in [("rules", false), ("health", true)] {
            guard case .array(let items)? = settings[list] else { continue }
            for (index, item) in items.enumerated() {
                let path = "\(list)[\(index)]"
                let allowed =
                    health ? ["when", "color", "reason", "translations"] : ["when", "color", "reason", "lastsDays", "translations"]
                problems += PluginRegistry.unknownMembers(of: item, allowed: allowed, at: path)
                if let when = item["when"] { problems += conditionMembers(when, at: "\(path).when", health: health) }
            }
        }
        problems += PluginRegistry.unknownMembers(of: settings["default"], allowed: ["color", "reason", "translations"], at: "default")
        return problems
    }

    static func conditionMembers(_ value: JSONValue, at path: String, health: Bool) -> [String] {
        guard case .object(let object) = value else { return [] }
        let forms = health ? ["all", "any", "record", "testOlderThanDays"] : ["all", "any", "question"]
        let given = forms.filter { object[$0] != nil }
        if given.count > 1 {
            return ["\(path) gives \(given.joined(separator: " and ")): a condition is one of \(forms.joined(separator: ", "))"]
        }
        switch given.first {
        case "all"?, "any"?:
            let key = given[0]
            var problems = PluginRegistry.unknownMembers(of: value, allowed: [key], at: path)
            if case .array(let items)? = object[key] {
                for (index, item) in items.enumerated() {
                    problems += conditionMembers(item, at: "\(path).\(key)[\(index)]", health: health)
                }
            }
            return problems
        case "question"?:
            let comparisons = ["equals", "in", "gte", "lte"].filter { object[$0] != nil }
            if comparisons.count > 1 {
                return [
                    "\(path) gives \(comparisons.joined(separator: " and ")): a condition compares once; for a range, "
                        + "use all: [{\"question\": …, \"gte\": …}, {\"question\": …, \"lte\": …}]"
                ]
            }
            return PluginRegistry.unknownMembers(of: value, allowed: ["question", "equals", "in", "gte", "lte"], at: path)
        case let form?:  // a health record's `record` or `testOlderThanDays`
            return PluginRegistry.unknownMembers(of: value, allowed: [form], at: path)
        case nil:
            return []  // no form at all: the parser says what a condition needs
        }
    }

    static func rule(_ value: JSONValue, at path: String, _ questionnaire: Questionnaire?) throws -> Rule {
        guard let when = value["when"] else { throw PluginSettingsError("\(path).when is missing") }
        let color = try Self.color(value["color"], at: "\(path).color")
        guard case .string(let reason)? = value["reason"], !reason.isEmpty else {
            throw PluginSettingsError("\(path).reason must be a non-empty string")
        }
        var lastsDays = 1
        if let days = value["lastsDays"] {
            // Today and the previous 14 days: a rule is given no longer a past.
            let most = Double(HistoryNeed.maxDays + 1)
            guard case .number(let number) = days, number >= 1, number <= most, number == number.rounded() else {
                throw PluginSettingsError(
                    "\(path).lastsDays must be a whole number of days from 1 to \(Int(most)) (a rule sees today and the previous \(HistoryNeed.maxDays) days)"
                )
            }
            lastsDays = Int(number)
        }
        return Rule(
            when: try condition(when, at: "\(path).when", questionnaire), color: color, reason: reason, lastsDays: lastsDays,
            translations: try translations(value["translations"], at: "\(path).translations"))
    }

    static func healthRule(_ value: JSONValue, at path: String) throws -> HealthRule {
        guard let when = value["when"] else { throw PluginSettingsError("\(path).when is missing") }
        let color = try Self.color(value["color"], at: "\(path).color")
        guard case .string(let reason)? = value["reason"], !reason.isEmpty else {
            throw PluginSettingsError("\(path).reason must be a non-empty string")
        }
        return HealthRule(
            when: try healthCondition(when, at: "\(path).when"), color: color, reason: reason,
            translations: try translations(value["translations"], at: "\(path).translations"))
    }

    /// A reason's `translations`: an object of language tags (`es`, `fr-CA`; at most 20) to
    /// non-empty strings of at most 500 characters.
    static func translations(_ value: JSONValue?, at path: String) throws -> [String: String] {
        guard let value else { return [:] }
        guard case .object(let object) = value, object.count <= 20 else {
            throw PluginSettingsError("\(path) must be an object of at most 20 languages, each a translation of the reason")
        }
        var translations: [String: String] = [:]
        for (language, text) in object {
            guard language.wholeMatch(of: /[a-z]{2,3}(-[A-Za-z0-9]{2,8}){0,2}/) != nil else {
                throw PluginSettingsError("\(path): \"\(language.prefix(40))\" is not a language tag (en, es, fr-CA …)")
            }
            guard case .string(let words) = text, !words.isEmpty, words.count <= 500 else {
                throw PluginSettingsError("\(path).\(language) must be a non-empty string of at most 500 characters")
            }
            translations[language] = words
        }
        return translations
    }

    static func healthCondition(_ value: JSONValue, at path: String) throws -> HealthCondition {
        guard case .object(let object) = value else { throw PluginSettingsError("\(path) must be an object") }
        if let list = object["all"] ?? object["any"] {
            guard case .array(let items) = list, !items.isEmpty else { throw PluginSettingsError("\(path) needs a non-empty list") }
            let key = object["all"] != nil ? "all" : "any"
            let conditions = try items.enumerated().map { try healthCondition($1, at: "\(path).\(key)[\($0)]") }
            return key == "all" ? .all(conditions) : .any(conditions)
        }
        if case .string(let record)? = object["record"] {
            guard HealthCondition.records.contains(record) else {
                throw PluginSettingsError("\(path).record must be one of \(HealthCondition.records.sorted().joined(separator: ", "))")
            }
            return .record(record)
        }
        if let days = object["testOlderThanDays"] {
            guard case .number(let number) = days, number >= 1, number <= 365, number == number.rounded(), let whole = Int(exactly: number)
            else { throw PluginSettingsError("\(path).testOlderThanDays must be a whole number of days from 1 to 365") }
            return .testOlderThan(days: whole)
        }
        throw PluginSettingsError("\(path) needs \"all\", \"any\", \"record\" or \"testOlderThanDays\"")
    }

    static func color(_ value: JSONValue?, at path: String) throws -> BadgeColor {
        guard case .string(let text)? = value, let color = BadgeColor(rawValue: text), color != .gray else {
            throw PluginSettingsError("\(path) must be \"green\", \"yellow\" or \"red\"")
        }
        return color
    }

    static func condition(_ value: JSONValue, at path: String, _ questionnaire: Questionnaire?) throws -> Condition {
        guard case .object(let object) = value else { throw PluginSettingsError("\(path) must be an object") }
        if let list = object["all"] ?? object["any"] {
            guard case .array(let items) = list, !items.isEmpty else { throw PluginSettingsError("\(path) needs a non-empty list") }
            let key = object["all"] != nil ? "all" : "any"
            let conditions = try items.enumerated().map { try condition($1, at: "\(path).\(key)[\($0)]", questionnaire) }
            return key == "all" ? .all(conditions) : .any(conditions)
        }
        guard case .string(let question)? = object["question"] else {
            throw PluginSettingsError("\(path) needs \"all\", \"any\", or \"question\" with equals/in/gte/lte")
        }
        if let questionnaire, questionnaire.question(question) == nil {
            throw PluginSettingsError(
                "\(path) refers to question \"\(question)\", which the active questionnaire (version \(questionnaire.version)) does not have"
            )
        }
        if let value = object["equals"] { return .equals(question: question, value: try answer(value, at: "\(path).equals")) }
        if case .array(let values)? = object["in"] {
            guard !values.isEmpty else { throw PluginSettingsError("\(path).in needs a non-empty list of answers") }
            return .among(question: question, values: try values.map { try answer($0, at: "\(path).in") })
        }
        if case .number(let bound)? = object["gte"] { return .atLeast(question: question, value: bound) }
        if case .number(let bound)? = object["lte"] { return .atMost(question: question, value: bound) }
        throw PluginSettingsError("\(path) needs one of equals, in (a list), gte or lte (numbers)")
    }

    static func answer(_ value: JSONValue, at path: String) throws -> AnswerValue {
        guard let answer = AnswerValue(value) else { throw PluginSettingsError("\(path) must be a boolean, number or string") }
        return answer
    }
}

extension PluginRegistry {
    /// The plugins that ship with Campus Attest.
    public mutating func registerBuiltinPlugins() {
        registerBadgeRule(id: StandardBadgeRule.id) { settings, questionnaire in
            try StandardBadgeRule(settings: settings, questionnaire: questionnaire)
        }
        registerSink(id: LogSink.id) { _ in LogSink() }
        registerSink(id: WebhookSink.id) { settings in try WebhookSink(settings: settings) }
        registerTestingLocationProvider(id: JSONFeedProvider.id) { settings in try JSONFeedProvider(settings: settings) }
        registerCommunityDataProvider(id: CSVTimeseriesProvider.id) { settings in try CSVTimeseriesProvider(settings: settings) }
        registerCommunityDataProvider(id: CommunityJSONFeedProvider.id) { settings in try CommunityJSONFeedProvider(settings: settings) }
        registerContextProvider(id: ContextFeedProvider.id) { settings in try ContextFeedProvider(settings: settings) }
        // A webhook's signing key, and URLs that may carry an API key in their query.
        declareSecretSettings(["secret", "url"], kind: .sink, id: WebhookSink.id)
        declareSecretSettings(["url"], kind: .testingLocations, id: JSONFeedProvider.id)
        declareSecretSettings(["url"], kind: .communityData, id: CSVTimeseriesProvider.id)
        declareSecretSettings(["url"], kind: .communityData, id: CommunityJSONFeedProvider.id)
        declareSecretSettings(["url"], kind: .context, id: ContextFeedProvider.id)
        // The members each takes (with those the platform reads itself: a sink's events, a
        // community-data provider's risk settings), so that a misspelt one is refused by name.
        func members(_ kind: PluginKind, _ id: String, _ allowed: [String]) {
            registerSettingsCheck(kind: kind, id: id) { PluginRegistry.unknownMembers(of: $0, allowed: allowed) }
        }
        registerSettingsCheck(kind: .badgeRule, id: StandardBadgeRule.id, StandardBadgeRule.unknownMembers)
        members(.sink, LogSink.id, ["events"])
        members(.sink, WebhookSink.id, ["url", "secret", "timeoutSeconds", "events"])
        members(.testingLocations, PluginRegistry.staticProviderID, [])
        members(.testingLocations, JSONFeedProvider.id, ["url", "ttlSeconds"])
        let risk = CommunityRiskSettings.names.sorted()
        members(.communityData, PluginRegistry.importedProviderID, ["dataset"] + risk)
        members(
            .communityData, CSVTimeseriesProvider.id,
            ["url", "file", "populationUrl", "populationFile", "ttlSeconds", "attribution"] + risk)
        members(.communityData, CommunityJSONFeedProvider.id, ["url", "ttlSeconds", "attribution"] + risk)
        members(.context, PluginRegistry.noContextProviderID, [])
        members(.context, ContextFeedProvider.id, ["url", "timeoutSeconds"])
    }

    /// A registry holding the built-in plugins.
    public static var builtin: PluginRegistry {
        var registry = PluginRegistry()
        registry.registerBuiltinPlugins()
        return registry
    }
}
