import AttestPlugins
import AttestPluginsTesting
import BuiltinPlugins
import Foundation
import Testing

@Suite("The standard badge rule")
struct StandardBadgeRuleTests {
    static let questionnaire = Questionnaire(
        version: 3, title: "Daily check",
        questions: [
            Question(id: "fever", kind: .boolean, prompt: "Fever?", symptom: true),
            Question(id: "cough", kind: .boolean, prompt: "Cough?", symptom: true),
            Question(id: "close_contact", kind: .boolean, prompt: "Close contact?"),
            Question(id: "positive_test", kind: .boolean, prompt: "Positive test?"),
            Question(id: "temperature", kind: .number, required: false, prompt: "Temperature", min: 34, max: 43, unit: "°C"),
            Question(id: "mood", kind: .choice, required: false, prompt: "Mood", options: ["good", "tired", "bad"]),
        ])

    static let today = LocalDate("2026-11-21")!
    static let endOfDay = Date(timeIntervalSince1970: 1_800_000_000)

    static func input(_ answers: SurveyAnswers, history: [PastAttestation] = []) -> BadgeRuleInput {
        BadgeRuleInput(answers: answers, questionnaire: questionnaire, history: history, date: today, now: Date(), endOfDay: endOfDay)
    }

    static let healthy: SurveyAnswers = [
        "fever": .bool(false), "cough": .bool(false), "close_contact": .bool(false), "positive_test": .bool(false),
    ]

    static func with(_ changes: SurveyAnswers) -> SurveyAnswers { healthy.merging(changes) { $1 } }

    @Test func theDefaultTableForTheDemoQuestions() throws {
        let rule = try StandardBadgeRule(
            settings: StandardBadgeRule.defaultSettings(for: Self.questionnaire), questionnaire: Self.questionnaire)
        #expect(try rule.evaluate(Self.input(Self.healthy)).color == .green)
        #expect(try rule.evaluate(Self.input(Self.with(["temperature": .number(37.9)]))).color == .green)
        #expect(try rule.evaluate(Self.input(Self.with(["temperature": .number(38.0)]))).color == .red)
        #expect(try rule.evaluate(Self.input(Self.with(["cough": .bool(true)]))).color == .yellow)
        #expect(try rule.evaluate(Self.input(Self.with(["close_contact": .bool(true)]))).color == .yellow)
        let positive = try rule.evaluate(Self.input(Self.with(["positive_test": .bool(true), "cough": .bool(true)])))
        #expect(positive.color == .red)  // first match wins: red before yellow
        #expect(positive.validUntil == Self.endOfDay)
    }

    @Test func aPositiveTestKeepsTheBadgeRedForTenDaysOfHistory() throws {
        let rule = try StandardBadgeRule(
            settings: StandardBadgeRule.defaultSettings(for: Self.questionnaire), questionnaire: Self.questionnaire)
        func history(daysAgo: Int, answers: SurveyAnswers?) -> [PastAttestation] {
            [PastAttestation(date: Self.today.adding(days: -daysAgo), color: .red, answers: answers)]
        }
        let positive = Self.with(["positive_test": .bool(true)])
        let nineDays = try rule.evaluate(Self.input(Self.healthy, history: history(daysAgo: 9, answers: positive)))
        #expect(nineDays.color == .red)
        #expect(nineDays.reason.contains("2026-11-12") && nineDays.reason.contains("2026-11-21"))
        #expect(try rule.evaluate(Self.input(Self.healthy, history: history(daysAgo: 10, answers: positive))).color == .green)
        // History only counts for rules that last: an old cough does not make today yellow.
        #expect(
            try rule.evaluate(Self.input(Self.healthy, history: history(daysAgo: 1, answers: Self.with(["cough": .bool(true)])))).color
                == .green)
        // Purged answers cannot be judged again.
        #expect(try rule.evaluate(Self.input(Self.healthy, history: history(daysAgo: 2, answers: nil))).color == .green)
    }

    /// Only rules with `lastsDays` look back, over their own days and questions: that is all
    /// the history a submission reads for this rule.
    @Test func theRuleNamesThePastItReads() throws {
        func need(_ json: String) throws -> HistoryNeed {
            try StandardBadgeRule(
                settings: try JSONDecoder().decode(JSONValue.self, from: Data(json.utf8)), questionnaire: Self.questionnaire
            )
            .historyNeed
        }
        let demo = try StandardBadgeRule(settings: .null, questionnaire: Self.questionnaire).historyNeed
        #expect(demo == HistoryNeed(days: 9, questions: ["positive_test"]))  // red through the 10th day
        #expect(try need(#"{"rules": [{"when": {"question": "cough", "equals": true}, "color": "yellow", "reason": "x"}]}"#) == .nothing)
        let mixed = try need(
            """
            {"rules": [
              {"when": {"question": "fever", "equals": true}, "color": "yellow", "reason": "no past"},
              {"when": {"any": [{"question": "cough", "equals": true}, {"all": [{"question": "mood", "in": ["bad"]},
                                {"question": "temperature", "gte": 38}]}]}, "color": "red", "reason": "x", "lastsDays": 3},
              {"when": {"question": "close_contact", "equals": true}, "color": "yellow", "reason": "y", "lastsDays": 15}
            ]}
            """)
        // The longest rule decides the days: 15 days of red is today and the previous 14.
        #expect(mixed == HistoryNeed(days: 14, questions: ["cough", "mood", "temperature", "close_contact"]))
        // No rule is given more than the previous 14 days, nor fewer than none.
        #expect(HistoryNeed(days: 30, questions: nil) == .everything)
        #expect(HistoryNeed(days: -1, questions: []) == .nothing)
    }

    @Test func predicatesAndCombinators() throws {
        let settings = try JSONDecoder().decode(
            JSONValue.self,
            from: Data(
                """
                {"rules": [
                  {"when": {"all": [{"question": "fever", "equals": true}, {"question": "temperature", "gte": 37.5}]}, "color": "red", "reason": "Fever measured"},
                  {"when": {"question": "mood", "in": ["bad", "tired"]}, "color": "yellow", "reason": "Not feeling well"},
                  {"when": {"question": "temperature", "lte": 35.0}, "color": "yellow", "reason": "Low temperature"}
                ], "default": {"color": "green", "reason": "All clear"}}
                """.utf8))
        let rule = try StandardBadgeRule(settings: settings, questionnaire: Self.questionnaire)
        #expect(try rule.evaluate(Self.input(Self.with(["fever": .bool(true), "temperature": .number(37.5)]))).reason == "Fever measured")
        #expect(try rule.evaluate(Self.input(Self.with(["fever": .bool(true), "temperature": .number(37.4)]))).color == .green)
        #expect(try rule.evaluate(Self.input(Self.with(["mood": .text("tired")]))).reason == "Not feeling well")
        #expect(try rule.evaluate(Self.input(Self.with(["mood": .text("good")]))).reason == "All clear")
        #expect(try rule.evaluate(Self.input(Self.with(["temperature": .number(34.9)]))).reason == "Low temperature")
        // The version follows the table: a different table, a different version.
        let other = try StandardBadgeRule(settings: StandardBadgeRule.defaultSettings(for: Self.questionnaire), questionnaire: nil)
        #expect(rule.version != other.version)
        #expect(try StandardBadgeRule(settings: settings, questionnaire: nil).version == rule.version)
    }

    @Test func badTablesAreRefusedNamingThePlace() throws {
        func refusal(_ json: String) -> String {
            do {
                let settings = try JSONDecoder().decode(JSONValue.self, from: Data(json.utf8))
                _ = try StandardBadgeRule(settings: settings, questionnaire: Self.questionnaire)
                return "accepted"
            } catch { return "\(error)" }
        }
        #expect(refusal(#"{"rules": {}}"#).contains("\"rules\""))
        #expect(
            refusal(#"{"rules": [{"when": {"question": "fever", "equals": true}, "color": "gray", "reason": "x"}]}"#).contains(
                "rules[0].color"))
        #expect(
            refusal(#"{"rules": [{"when": {"question": "shoe_size", "gte": 40}, "color": "red", "reason": "x"}]}"#).contains(
                "\"shoe_size\""))
        #expect(refusal(#"{"rules": [{"when": {"question": "fever"}, "color": "red", "reason": "x"}]}"#).contains("equals, in"))
        #expect(refusal(#"{"rules": [{"when": {"any": []}, "color": "red", "reason": "x"}]}"#).contains("non-empty list"))
        #expect(
            refusal(#"{"rules": [{"when": {"question": "fever", "equals": true}, "color": "red", "reason": "x", "lastsDays": 0}]}"#)
                .contains("lastsDays"))
        // Longer than the past a rule is given would quietly end early: refused, saying why.
        #expect(
            refusal(#"{"rules": [{"when": {"question": "fever", "equals": true}, "color": "red", "reason": "x", "lastsDays": 16}]}"#)
                .contains("rules[0].lastsDays must be a whole number of days from 1 to 15"))
        #expect(refusal(#"[1]"#).contains("JSON object"))
        #expect(
            refusal(#"{"rules": [{"when": {"question": "mood", "in": []}, "color": "red", "reason": "x"}]}"#).contains("rules[0].when.in"))
    }

    /// What the table's parser would pass over without a word is named when the table is
    /// enabled (`attest plugin enable` asks the registry): a misspelt `lastsDays` left a
    /// positive test red for a day instead of ten, and `gte` beside `lte` compared once.
    @Test func membersTheParserWouldPassOverAreNamedWhenATableIsEnabled() throws {
        var registry = PluginRegistry()
        registry.registerBuiltinPlugins()
        func problems(_ json: String, kind: PluginKind = .badgeRule, id: String = StandardBadgeRule.id) throws -> [String] {
            registry.settingsProblems(try JSONDecoder().decode(JSONValue.self, from: Data(json.utf8)), kind: kind, id: id)
        }
        let table = #"""
            {"rules": [
               {"when": {"question": "positive_test", "equals": true}, "color": "red", "reason": "Positive", "lastDays": 10},
               {"when": {"any": [{"question": "temperature", "gte": 38, "lte": 43}, {"all": [{"question": "fever", "equals": true, "not": true}]}]},
                "color": "yellow", "reason": "Warm"},
               {"when": {"question": "cough", "equals": true, "any": [{"question": "fever", "equals": true}]}, "color": "yellow", "reason": "x"}],
             "health": [{"when": {"record": "isolated", "days": 3}, "color": "red", "reason": "Isolated", "lastsDays": 2}],
             "defualt": {"color": "green", "reason": "ok"}}
            """#
        // The parser itself takes this table: only the check sees what it would lose.
        _ = try StandardBadgeRule(settings: try JSONDecoder().decode(JSONValue.self, from: Data(table.utf8)), questionnaire: nil)
        #expect(
            try problems(table) == [
                "defualt is not a setting here (rules, health, default)",
                "rules[0].lastDays is not a setting here (when, color, reason, lastsDays, translations)",
                #"rules[1].when.any[0] gives gte and lte: a condition compares once; for a range, use all: [{"question": …, "gte": …}, {"question": …, "lte": …}]"#,
                "rules[1].when.any[1].all[0].not is not a setting here (question, equals, in, gte, lte)",
                "rules[2].when gives any and question: a condition is one of all, any, question",
                "health[0].lastsDays is not a setting here (when, color, reason, translations)",
                "health[0].when.days is not a setting here (record)",
            ])
        // The default table for a questionnaire, and the settings the README shows, pass.
        let defaults = StandardBadgeRule.defaultSettings(for: Self.questionnaire)
        #expect(registry.settingsProblems(defaults, kind: .badgeRule, id: StandardBadgeRule.id) == [])
        #expect(
            try problems(
                #"{"url": "https://h.example/x", "secret": "0123456789abcdef", "events": ["badge.red"]}"#, kind: .sink, id: "webhook") == []
        )
        #expect(
            try problems(
                #"{"url": "https://h.example/x", "secret": "0123456789abcdef", "evnts": ["badge.red"]}"#, kind: .sink, id: "webhook")
                == ["evnts is not a setting here (url, secret, timeoutSeconds, events)"])
        #expect(try problems(#"{"x": 1}"#, kind: .testingLocations, id: "static") == ["x is not a setting here (none is taken)"])
        #expect(
            try problems(#"{"dataset": "d", "guidance": {}, "riskThresholds": [1, 2, 3, 4]}"#, kind: .communityData, id: "imported") == [])
        // A plugin that registers no check is not checked.
        #expect(try problems(#"{"anything": 1}"#, kind: .sink, id: "somebody-elses") == [])
    }

    /// A reason's translations are shown by a page in that language (`es-MX` takes `es`); the
    /// badge keeps the reason as written. A lasting rule's past match reads in Spanish too.
    @Test func reasonsAreTranslatedForPagesInTheirLanguage() throws {
        let rule = try StandardBadgeRule(
            settings: StandardBadgeRule.defaultSettings(for: Self.questionnaire), questionnaire: Self.questionnaire)
        let green = try rule.evaluate(Self.input(Self.healthy))
        #expect(green.reason == "No symptoms reported", "the badge keeps the words as written")
        #expect(rule.localize(reason: green.reason, language: "es") == "No se informaron síntomas")
        #expect(rule.localize(reason: green.reason, language: "es-MX") == "No se informaron síntomas")
        #expect(rule.localize(reason: green.reason, language: "en") == nil, "no English words: shown as written")
        #expect(rule.localize(reason: green.reason, language: "fr") == nil)
        let yellow = try rule.evaluate(Self.input(Self.with(["cough": .bool(true)])))
        #expect(rule.localize(reason: yellow.reason, language: "es") == "Síntomas o un contacto cercano informados")
        let past = [PastAttestation(date: Self.today.adding(days: -3), color: .red, answers: Self.with(["positive_test": .bool(true)]))]
        let lasting = try rule.evaluate(Self.input(Self.healthy, history: past))
        #expect(lasting.reason == "Positive test in the last 10 days (reported 2026-11-18; applies through 2026-11-27)")
        #expect(
            rule.localize(reason: lasting.reason, language: "es")
                == "Prueba positiva en los últimos 10 días (informado el 2026-11-18; vale hasta el 2026-11-27)")
        #expect(rule.localize(reason: lasting.reason + "!", language: "es") == nil, "not the rule's own words")
        #expect(rule.localize(reason: "Something else", language: "es") == nil)

        // A campus's own table: a rule, a health rule and the default, each with its words.
        let table = try JSONDecoder().decode(
            JSONValue.self,
            from: Data(
                #"""
                {"rules": [{"when": {"question": "fever", "equals": true}, "color": "red", "reason": "Fever",
                            "translations": {"es": "Fiebre", "fr-CA": "Fièvre"}}],
                 "health": [{"when": {"record": "no-test"}, "color": "yellow", "reason": "Get tested",
                             "translations": {"es": "Hágase una prueba"}}],
                 "default": {"color": "green", "reason": "Fine", "translations": {"es": "Bien"}}}
                """#.utf8))
        let own = try StandardBadgeRule(settings: table, questionnaire: Self.questionnaire)
        #expect(own.localize(reason: "Fever", language: "fr-CA") == "Fièvre" && own.localize(reason: "Fever", language: "fr") == nil)
        #expect(own.localize(reason: "Get tested", language: "es") == "Hágase una prueba")
        #expect(own.localize(reason: "Fine", language: "es") == "Bien")
        #expect(own.localize(reason: "No symptoms reported", language: "es") == nil, "another table's words")
        // Translations are part of the table: its version changes with them.
        let plain = try StandardBadgeRule(
            settings: try JSONDecoder().decode(
                JSONValue.self, from: Data(#"{"rules": [], "default": {"color": "green", "reason": "Fine"}}"#.utf8)),
            questionnaire: Self.questionnaire)
        #expect(plain.localize(reason: "Fine", language: "es") == nil && plain.version != own.version)
    }

    @Test func translationsThatCannotBeReadAreRefusedNamingThePlace() throws {
        func refusal(_ translations: String) -> String {
            do {
                let json =
                    #"{"rules": [{"when": {"question": "fever", "equals": true}, "color": "red", "reason": "x", "translations": "#
                    + translations + "}]}"
                _ = try StandardBadgeRule(
                    settings: try JSONDecoder().decode(JSONValue.self, from: Data(json.utf8)), questionnaire: Self.questionnaire)
                return "accepted"
            } catch { return "\(error)" }
        }
        #expect(refusal(#"{"es": "Fiebre"}"#) == "accepted")
        #expect(refusal(#""Fiebre""#).contains("rules[0].translations must be an object"))
        #expect(refusal(#"{"Spanish": "Fiebre"}"#).contains(#"rules[0].translations: "Spanish" is not a language tag"#))
        #expect(refusal(#"{"es": ""}"#).contains("rules[0].translations.es must be a non-empty string"))
        #expect(refusal(#"{"es": 3}"#).contains("rules[0].translations.es"))
        #expect(refusal(#"{"es": "\#(String(repeating: "a", count: 501))"}"#).contains("at most 500 characters"))
        let many = (0..<21).map { #""l\#(String(UnicodeScalar(UInt8(97 + $0))))x": "t""# }.joined(separator: ",")
        #expect(refusal("{\(many)}").contains("at most 20 languages"))
    }

    @Test func aTableIsBoundedInSize() throws {
        // `any` of n predicates is n + 1 conditions; an `in` list counts each of its values.
        func table(rules: Int, each predicates: Int, inValues: Int = 0) -> String {
            let predicate = #"{"question": "fever", "equals": true}"#
            var conditions = Array(repeating: predicate, count: predicates)
            if inValues > 0 {
                conditions.append(
                    #"{"question": "mood", "in": ["# + Array(repeating: #""bad""#, count: inValues).joined(separator: ",") + "]}")
            }
            let rule = #"{"when": {"any": ["# + conditions.joined(separator: ",") + #"]}, "color": "yellow", "reason": "x"}"#
            return #"{"rules": ["# + Array(repeating: rule, count: rules).joined(separator: ",") + "]}"
        }
        func build(_ json: String) throws -> StandardBadgeRule {
            try StandardBadgeRule(
                settings: try JSONDecoder().decode(JSONValue.self, from: Data(json.utf8)), questionnaire: Self.questionnaire)
        }
        #expect(StandardBadgeRule.maxConditions == 1_000)
        _ = try build(table(rules: 100, each: 9))  // exactly 1,000
        #expect(throws: PluginSettingsError.self) { try build(table(rules: 100, each: 9, inValues: 1)) }  // 100 × (1 + 9 + 1) = 1,100
        do {
            _ = try build(table(rules: 1, each: 0, inValues: 1_000))
            Issue.record("a 1,000-value in list under an any is 1,001 conditions and must be refused")
        } catch {
            #expect("\(error)".contains("1001 conditions") && "\(error)".contains("at most 1000"))
        }
        _ = try build(table(rules: 1, each: 0, inValues: 999))
    }

    @Test func theRegistryBuildsRulesByIDAndNamesTheAvailableOnes() throws {
        let registry = PluginRegistry.builtin
        #expect(registry.badgeRuleIDs == ["standard"])
        _ = try registry.makeBadgeRule(
            id: "standard", settings: StandardBadgeRule.defaultSettings(for: Self.questionnaire), questionnaire: nil)
        #expect(throws: PluginSettingsError.self) { try registry.makeBadgeRule(id: "nope", settings: .null, questionnaire: nil) }
    }
}

/// The plugin test kit's conformance check: the built-in rule passes it, and each thing it
/// looks for is found in a rule made to get it wrong.
@Suite("Badge rule conformance")
struct BadgeRuleConformanceTests {
    static let survey = Questionnaire.testing(.yesNo("fever"), .number("temperature", min: 34, max: 43))
    static let inputs: [BadgeRuleInput] = [
        .testing(["fever": .bool(false)], questionnaire: survey), .testing(["fever": .bool(true)], questionnaire: survey),
        .testing(["fever": .bool(false), "temperature": .number(38.5)], questionnaire: survey),
    ]

    struct Faulty: BadgeRule {
        enum Fault { case random, gray, lateExpiry, silent, slow, throwing, unsaid, wavering, pondering }
        let fault: Fault
        var version: String { "faulty" }
        func evaluate(_ input: BadgeRuleInput) throws -> BadgeDecision {
            switch fault {
            case .random: return BadgeDecision(color: Bool.random() ? .green : .red, reason: "coin", validUntil: input.endOfDay)
            case .gray: return BadgeDecision(color: .gray, reason: "none", validUntil: input.endOfDay)
            case .lateExpiry: return BadgeDecision(color: .green, reason: "ok", validUntil: input.endOfDay.addingTimeInterval(1))
            case .silent: return BadgeDecision(color: .green, reason: "", validUntil: input.endOfDay)
            case .slow:
                Thread.sleep(forTimeInterval: 0.15)
                return BadgeDecision(color: .green, reason: "slow", validUntil: input.endOfDay)
            case .throwing: throw PluginSettingsError("broken")
            case .unsaid, .wavering, .pondering: return BadgeDecision(color: .green, reason: "fine", validUntil: input.endOfDay)
            }
        }
        func localize(reason: String, language: String) -> String? {
            switch fault {
            case .unsaid: ""
            case .wavering: Bool.random() ? "bien" : "bueno"
            case .pondering:
                {
                    Thread.sleep(forTimeInterval: 0.15)
                    return "bien"
                }()
            default: nil
            }
        }
    }

    @Test func theStandardRuleConforms() throws {
        let rule = try StandardBadgeRule(settings: .null, questionnaire: Self.survey)
        #expect(BadgeRuleConformance.problems(rule, inputs: Self.inputs) == [])
    }

    @Test func eachFaultIsFound() {
        func problems(_ fault: Faulty.Fault) -> String {
            BadgeRuleConformance.problems(Faulty(fault: fault), inputs: Self.inputs).joined(separator: " | ")
        }
        // A coin flip agrees with itself now and then: over three inputs, twice each, it is caught
        // unless all six flips land alike, one time in 32.
        var caught = false
        for _ in 0..<5 where !caught { caught = problems(.random).contains("deterministic") }
        #expect(caught)
        #expect(problems(.gray).contains("answered gray"))
        #expect(problems(.lateExpiry).contains("valid past the end of the day"))
        #expect(problems(.silent).contains("gave no reason"))
        #expect(problems(.slow).contains("over the"))
        #expect(problems(.throwing).contains("threw"))
        #expect(problems(.unsaid).contains("its reason in en is empty"))
        var wavered = false
        for _ in 0..<5 where !wavered { wavered = problems(.wavering).contains("localize must be deterministic") }
        #expect(wavered)
        #expect(problems(.pondering).contains("its reason in es took over the"))
    }
}

extension StandardBadgeRuleTests {
    // MARK: The health table

    static let weekly: JSONValue = .object([
        "rules": .array([]),
        "health": .array([
            .object(["when": .object(["record": .string("positive-test")]), "color": .string("red"), "reason": .string("Positive test")]),
            .object([
                "when": .object(["all": .array([.object(["record": .string("not-exempt")]), .object(["testOlderThanDays": .number(7)])])]),
                "color": .string("yellow"), "reason": .string("Weekly test due"),
            ]),
        ]),
    ])

    static func health(_ answered: BadgeColor?, _ status: HealthStatus) -> HealthInput {
        HealthInput(
            answered: answered.map { BadgeDecision(color: $0, reason: "answers", validUntil: endOfDay) }, health: status, date: today,
            endOfDay: endOfDay, timeZone: .gmt)
    }

    static func tested(daysAgo: Int, detected: Bool = false) -> HealthStatus.Test {
        let collected = today.adding(days: -daysAgo).start(in: .gmt).addingTimeInterval(3600)
        return .init(code: "94500-6", detected: detected, collected: collected, resulted: collected)
    }

    @Test func theHealthTableWorsensTheAnswersBadgeAndNeverImprovesIt() throws {
        let rule = try StandardBadgeRule(settings: Self.weekly, questionnaire: Self.questionnaire)
        let recent = HealthStatus(latestTest: Self.tested(daysAgo: 7))
        let old = HealthStatus(latestTest: Self.tested(daysAgo: 8))
        #expect(rule.decide(Self.health(.green, recent))?.reason == "answers", "a negative test 7 days ago is recent enough")
        #expect(rule.decide(Self.health(.green, old))?.reason == "Weekly test due")
        #expect(rule.decide(Self.health(.green, .none))?.color == .yellow, "no test at all is overdue")
        #expect(rule.decide(Self.health(.red, old))?.reason == "answers", "a worse answer stays")
        #expect(rule.decide(Self.health(nil, old)) == nil, "not answered: gray, unless the record is red")
        let positive = HealthStatus(latestTest: Self.tested(daysAgo: 1, detected: true))
        #expect(rule.decide(Self.health(nil, positive))?.reason == "Positive test")
        // Exempt until today: no weekly test asked; from tomorrow it is.
        var exempt = old
        exempt.exemption = .init(kind: .medical, expires: Self.today)
        #expect(rule.decide(Self.health(.green, exempt))?.color == .green)
        // An isolation is red whatever the table says.
        let isolated = HealthStatus(latestTest: Self.tested(daysAgo: 1), restriction: .init(kind: .isolation, until: Self.today))
        #expect(rule.decide(Self.health(.green, isolated))?.reason == "Isolation until 21 Nov")
        // Without a health table, only the platform's default applies.
        let plain = try StandardBadgeRule(settings: .null, questionnaire: Self.questionnaire)
        #expect(plain.decide(Self.health(.green, old))?.reason == "answers")
        #expect(plain.decide(Self.health(nil, isolated))?.color == .red)
        #expect(try StandardBadgeRule(settings: Self.weekly, questionnaire: Self.questionnaire).version != plain.version)
    }

    /// A campus that asks the unvaccinated and unexempt for a weekly test: vaccinated means the
    /// series completed 14 days or more before the day decided.
    @Test func theVaccinatedAreSparedTheWeeklyTestFromTheFourteenthDayAfterTheirLastDose() throws {
        let settings: JSONValue = .object([
            "rules": .array([]),
            "health": .array([
                .object([
                    "when": .object([
                        "all": .array([
                            .object(["record": .string("not-vaccinated")]), .object(["record": .string("not-exempt")]),
                            .object(["testOlderThanDays": .number(7)]),
                        ])
                    ]),
                    "color": .string("yellow"), "reason": .string("Weekly test due"),
                ]),
                .object(["when": .object(["record": .string("vaccinated")]), "color": .string("green"), "reason": .string("never worse")]),
            ]),
        ])
        let rule = try StandardBadgeRule(settings: settings, questionnaire: Self.questionnaire)
        func status(completedDaysAgo: Int?) -> HealthStatus {
            guard let days = completedDaysAgo else { return HealthStatus(latestTest: Self.tested(daysAgo: 10)) }
            let day = Self.today.adding(days: -days)
            return HealthStatus(latestTest: Self.tested(daysAgo: 10), vaccination: .init(doses: 2, lastDose: day, completed: day))
        }
        #expect(rule.decide(Self.health(.green, status(completedDaysAgo: nil)))?.reason == "Weekly test due")
        #expect(rule.decide(Self.health(.green, status(completedDaysAgo: 13)))?.reason == "Weekly test due", "not yet protected")
        #expect(rule.decide(Self.health(.green, status(completedDaysAgo: 14)))?.reason == "answers")
        var incomplete = status(completedDaysAgo: 30)
        incomplete.vaccination?.completed = nil
        #expect(rule.decide(Self.health(.green, incomplete))?.reason == "Weekly test due", "one dose of two")
    }

    @Test func aHealthTableThatCannotBeReadIsRefusedNamingThePlace() throws {
        let cases: [(JSONValue, String)] = [
            (.string("weekly"), "health must be a list"),
            (.array([.object(["color": .string("red"), "reason": .string("r")])]), "health[0].when is missing"),
            (
                .array([.object(["when": .object(["record": .string("sad")]), "color": .string("red"), "reason": .string("r")])]),
                "health[0].when.record must be one of"
            ),
            (
                .array([.object(["when": .object(["testOlderThanDays": .number(0)]), "color": .string("red"), "reason": .string("r")])]),
                "testOlderThanDays must be a whole number"
            ),
            (
                .array([.object(["when": .object(["record": .string("exempt")]), "color": .string("gray"), "reason": .string("r")])]),
                "health[0].color"
            ),
            (
                .array([.object(["when": .object(["any": .array([])]), "color": .string("red"), "reason": .string("r")])]),
                "health[0].when needs a non-empty list"
            ),
        ]
        for (health, message) in cases {
            let settings: JSONValue = .object(["rules": .array([]), "health": health])
            #expect {
                try StandardBadgeRule(settings: settings, questionnaire: Self.questionnaire)
            } throws: { error in
                (error as? PluginSettingsError)?.message.contains(message) == true
            }
        }
    }
}
