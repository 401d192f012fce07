import Foundation

/// What the campus knows of a member's health beyond the day's answers (DESIGN §11): the
/// latest test and its result, and the isolation or quarantine in force, as recomputed from
/// the member's whole record on every change to it. A member with no record has `.none`.
///
/// It does not depend on the time it is read at: an isolation keeps its last day, and a rule
/// compares that with the day it decides for.
public struct HealthStatus: Sendable, Hashable, Codable {
    /// A laboratory's SARS-CoV-2 test.
    public struct Test: Sendable, Hashable, Codable {
        /// The LOINC code of the test.
        public var code: String
        /// Whether the virus was detected.
        public var detected: Bool
        /// When the specimen was collected.
        public var collected: Date
        /// When the laboratory resulted it.
        public var resulted: Date

        public init(code: String, detected: Bool, collected: Date, resulted: Date) {
            (self.code, self.detected, self.collected, self.resulted) = (code, detected, collected, resulted)
        }
    }

    /// Isolation (the member tested positive) or quarantine (a close contact).
    public enum RestrictionKind: String, Sendable, Hashable, Codable {
        case isolation
        case quarantine
    }

    /// An isolation or quarantine not released: the member stays away until `until`, inclusive
    /// (campus-local).
    public struct Restriction: Sendable, Hashable, Codable {
        public var kind: RestrictionKind
        public var until: LocalDate

        public init(kind: RestrictionKind, until: LocalDate) { (self.kind, self.until) = (kind, until) }
    }

    /// Why a member is exempt.
    public enum ExemptionKind: String, Sendable, Hashable, Codable, CaseIterable {
        case medical
        case religious
        case other
    }

    /// An exemption a health officer approved, until `expires`, inclusive (campus-local).
    public struct Exemption: Sendable, Hashable, Codable {
        public var kind: ExemptionKind
        public var expires: LocalDate

        public init(kind: ExemptionKind, expires: LocalDate) { (self.kind, self.expires) = (kind, expires) }
    }

    /// A member's COVID-19 vaccination as their verified SMART Health Cards give it.
    public struct Vaccination: Sendable, Hashable, Codable {
        /// Doses, counted by the day they were given.
        public var doses: Int
        public var lastDose: LocalDate
        /// The day of the dose that completed the primary series (a single-dose vaccine, or a
        /// second dose); nil while incomplete.
        public var completed: LocalDate?

        public init(doses: Int, lastDose: LocalDate, completed: LocalDate?) {
            (self.doses, self.lastDose, self.completed) = (doses, lastDose, completed)
        }

        /// Days after the completing dose before a member counts as fully vaccinated.
        public static let protectionDays = 14
    }

    /// The most recently collected test (the latest resulted of those collected the same day).
    public var latestTest: Test?
    /// Of the isolations and quarantines not released, the one that ends last (an isolation
    /// before a quarantine ending the same day).
    public var restriction: Restriction?
    /// Of the approved exemptions, the one that expires last.
    public var exemption: Exemption?
    /// Nil when no card gave a dose.
    public var vaccination: Vaccination?

    public init(latestTest: Test? = nil, restriction: Restriction? = nil, exemption: Exemption? = nil, vaccination: Vaccination? = nil) {
        (self.latestTest, self.restriction, self.exemption, self.vaccination) = (latestTest, restriction, exemption, vaccination)
    }

    /// Fully vaccinated on `date`: the series completed at least `protectionDays` before.
    public func vaccinated(on date: LocalDate) -> Bool {
        guard let completed = vaccination?.completed else { return false }
        return completed.adding(days: Vaccination.protectionDays) <= date
    }

    /// The exemption in force on `date`, if any.
    public func exemption(on date: LocalDate) -> Exemption? {
        guard let exemption, date <= exemption.expires else { return nil }
        return exemption
    }

    /// No record at all.
    public static let none = HealthStatus()

    /// The restriction in force on `date`, if any.
    public func restriction(on date: LocalDate) -> Restriction? {
        guard let restriction, date <= restriction.until else { return nil }
        return restriction
    }
}

/// What a badge rule is given to weigh the member's health record against the day's answers.
public struct HealthInput: Sendable {
    /// What `evaluate` decided from today's answers; nil when the member has not answered today.
    public var answered: BadgeDecision?
    public var health: HealthStatus
    /// Today, campus-local.
    public var date: LocalDate
    /// The campus's free-form settings.
    public var campusSettings: JSONValue
    /// The end of today, campus-local.
    public var endOfDay: Date
    /// The campus's time zone: a test's collection day is `LocalDate(test.collected, in: timeZone)`.
    public var timeZone: TimeZone

    public init(
        answered: BadgeDecision?, health: HealthStatus, date: LocalDate, campusSettings: JSONValue = .object([:]), endOfDay: Date,
        timeZone: TimeZone = .gmt
    ) {
        (self.answered, self.health, self.date, self.campusSettings, self.endOfDay, self.timeZone) = (
            answered, health, date, campusSettings, endOfDay, timeZone
        )
    }

    /// What the platform decides when a rule does not say otherwise: an isolation or
    /// quarantine in force is red whatever was answered ("Isolation until 2 Dec"), answered
    /// or not; otherwise the answers' own badge (none when not answered).
    public var standardDecision: BadgeDecision? {
        if let restriction = health.restriction(on: date) {
            return BadgeDecision(color: .red, reason: Self.describe(restriction), validUntil: endOfDay)
        }
        return answered
    }

    static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// "Isolation until 2 Dec": the record behind a badge, for the member and the door.
    public static func describe(_ restriction: HealthStatus.Restriction) -> String {
        let month = months[max(0, min(11, restriction.until.month - 1))]
        let kind = restriction.kind == .isolation ? "Isolation" : "Quarantine"
        return "\(kind) until \(restriction.until.day) \(month)"
    }

    /// What `describe` put into words, read back ("Isolation until 2 Dec": isolation, day 2,
    /// month 12), for a page to say it in its own language; nil for any other reason.
    public static func described(_ reason: String) -> (kind: HealthStatus.RestrictionKind, day: Int, month: Int)? {
        let words = reason.split(separator: " ", omittingEmptySubsequences: false)
        guard words.count == 4, words[1] == "until", let day = Int(words[2]), (1...31).contains(day),
            let month = months.firstIndex(where: { $0 == words[3] })
        else { return nil }
        switch words[0] {
        case "Isolation": return (.isolation, day, month + 1)
        case "Quarantine": return (.quarantine, day, month + 1)
        default: return nil
        }
    }
}
