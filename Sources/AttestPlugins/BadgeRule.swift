import Foundation

/// What a badge rule is given to decide a member's badge for today.
public struct BadgeRuleInput: Sendable {
    /// Today's answers, already checked against `questionnaire`.
    public var answers: SurveyAnswers
    public var questionnaire: Questionnaire
    /// The campus's free-form settings (`attest campus set <slug> settings …`).
    public var campusSettings: JSONValue
    /// The member's attestations of the previous campus-local days, newest first: as many
    /// days, and only the past answers, that the rule's `historyNeed` names (by default the
    /// last 14 days with every answer).
    public var history: [PastAttestation]
    /// Today, campus-local.
    public var date: LocalDate
    /// When the answers were submitted.
    public var now: Date
    /// The end of today, campus-local: the default `validUntil`.
    public var endOfDay: Date

    public init(
        answers: SurveyAnswers, questionnaire: Questionnaire, campusSettings: JSONValue = .object([:]),
        history: [PastAttestation] = [], date: LocalDate, now: Date, endOfDay: Date
    ) {
        self.answers = answers
        self.questionnaire = questionnaire
        self.campusSettings = campusSettings
        self.history = history
        self.date = date
        self.now = now
        self.endOfDay = endOfDay
    }
}

/// What of a member's past a rule reads: the platform fetches that much and no more before
/// every decision, so a rule that reads less costs less per submission, and answers about
/// health that no rule looks at are not read.
public struct HistoryNeed: Sendable, Hashable {
    /// The most days a rule is given: the previous 14 campus-local days.
    public static let maxDays = 14

    /// How many previous campus-local days, 0 to `maxDays` (the initialiser clamps).
    public let days: Int
    /// The questions whose past answers the rule reads, nil for every answer. Past
    /// attestations hold only these answers (those given that day); their dates and colours
    /// come whatever this is.
    public let questions: Set<String>?

    public init(days: Int, questions: Set<String>?) {
        self.days = min(max(days, 0), Self.maxDays)
        self.questions = questions
    }

    /// The previous 14 days with every answer: what a rule gets unless it says otherwise.
    public static let everything = HistoryNeed(days: maxDays, questions: nil)
    /// No past at all: the decision rests on today's answers alone.
    public static let nothing = HistoryNeed(days: 0, questions: [])
}

/// An earlier attestation of the same member.
public struct PastAttestation: Sendable, Equatable {
    public var date: LocalDate
    public var color: BadgeColor
    /// nil once the retention purge removed them; otherwise the answers the rule's
    /// `historyNeed` asks for.
    public var answers: SurveyAnswers?

    public init(date: LocalDate, color: BadgeColor, answers: SurveyAnswers?) {
        self.date = date
        self.color = color
        self.answers = answers
    }
}

/// A rule's verdict.
public struct BadgeDecision: Sendable, Equatable {
    /// green, yellow or red (gray is only for "nothing submitted").
    public var color: BadgeColor
    /// Why, in words a member understands ("Temperature of 38 °C or more").
    public var reason: String
    /// When the badge stops being valid; at most the end of today.
    public var validUntil: Date

    public init(color: BadgeColor, reason: String, validUntil: Date) {
        self.color = color
        self.reason = reason
        self.validUntil = validUntil
    }
}

/// Turns a member's answers into a badge.
///
/// Implementation requirements:
/// - `evaluate` is a pure function of its input: no I/O, no global state, quick (the
///   platform gives it a time budget of about 100 ms and answers yellow "needs review" when it
///   overruns or throws, logging the error; it never becomes a 500).
/// - It returns green, yellow or red, never gray, and a `validUntil` no later than
///   `input.endOfDay` (later values are cut to it; one that is no time, NaN, infinite or
///   before 4714 BC, counts as a failure: "needs review").
/// - `version` names the logic and settings in force; it is stored with every attestation so
///   a badge can be explained later. Change it whenever the outcome for the same input could.
/// - `evaluatesInline` (default false) may be true only for a rule whose every evaluation
///   finishes in microseconds, as the built-in `standard` does. See its documentation.
/// - `historyNeed` (default `.everything`: 14 days, every answer) says what of the member's
///   past `evaluate` reads; `input.history` then holds that and no more. Name less when
///   the rule reads less: each submission then reads less from the database.
public protocol BadgeRule: Sendable {
    /// The version stored with each attestation decided by this rule.
    var version: String { get }
    /// Whether the platform may run `evaluate` on the submission's own task instead of a
    /// thread of the platform's pool for rules that may block, with a timer. That saves a
    /// hand-off and a timer on every submission, but a
    /// slow evaluation then holds its submission until it returns. It is still over budget,
    /// so the badge is still yellow "needs review", but the answer comes when the rule
    /// returns, not when the budget ends. Leave it false (the default) unless `evaluate`
    /// cannot block or loop long for any input or settings.
    var evaluatesInline: Bool { get }
    /// What of the member's past `evaluate` reads; fixed for the rule's lifetime.
    var historyNeed: HistoryNeed { get }
    /// Decides today's badge.
    func evaluate(_ input: BadgeRuleInput) throws -> BadgeDecision
    /// Weighs the member's health record (tests, isolation, quarantine) against what
    /// `evaluate` gave for today's answers: the badge shown, or nil for the gray "not
    /// submitted" one. Asked whenever a badge is shown, so it must be pure and quick like
    /// `evaluate`, and change `version` with it. The default, `input.standardDecision`, is red
    /// while an isolation or quarantine lasts and the answers' badge otherwise.
    func decide(_ input: HealthInput) -> BadgeDecision?
    /// A reason this rule gave (a badge's, a past attestation's) in `language` (a page's: `es`,
    /// `es-MX` …), or nil to show it as given. Asked whenever a page shows a reason, so it must
    /// be pure and quick like `decide`. The default, nil: reasons are shown in the words the
    /// rule gave them.
    func localize(reason: String, language: String) -> String?
}

extension BadgeRule {
    public var evaluatesInline: Bool { false }
    public var historyNeed: HistoryNeed { .everything }
    public func decide(_ input: HealthInput) -> BadgeDecision? { input.standardDecision }
    public func localize(reason: String, language: String) -> String? { nil }
}

/// Why a plugin's settings were refused; the message names the setting and the fix.
public struct PluginSettingsError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
