import AttestPlugins
import Foundation
import Tenancy

/// A campus's policy for records (`attest campus set <slug> settings`, members
/// `isolationDays`, `quarantineDays` and `shc-identity`): how long an isolation after a positive
/// result and a quarantine started by hand last, in days after the day they start (collection
/// for a result), and how a SMART Health Card's person is compared with the member.
public struct RecordsPolicy: Sendable, Equatable {
    public var isolationDays: Int
    public var quarantineDays: Int
    /// How a SMART Health Card's person is compared with the member (`shc-identity`).
    public var shcIdentity: SmartHealthCards.IdentityCheck
    /// The FHIR identifier system of the campus's own ids (`memberIdSystem`): a laboratory
    /// names a member by it instead of their email.
    public var memberIDSystem: String?

    public init(isolationDays: Int = 10, quarantineDays: Int = 7, shcIdentity: SmartHealthCards.IdentityCheck = .lenient) {
        (self.isolationDays, self.quarantineDays, self.shcIdentity) = (isolationDays, quarantineDays, shcIdentity)
    }

    /// The days allowed for either: 0 to 60.
    public static let days = 0...60

    /// The campus's policy: its settings' values where they are whole numbers of days 0 to
    /// 60, the defaults (10 and 7) otherwise.
    public init(campus: Campus) {
        self.init()
        guard case .object(let settings) = campus.settings.bytes.withUnsafeBytes({ try? JSONValue(parsing: $0) }) ?? .null else { return }
        func days(_ key: String) -> Int? {
            guard case .number(let value)? = settings[key], let days = Int(exactly: value), Self.days.contains(days) else { return nil }
            return days
        }
        if let days = days("isolationDays") { isolationDays = days }
        if let days = days("quarantineDays") { quarantineDays = days }
        if case .string(let check)? = settings["shc-identity"], let check = SmartHealthCards.IdentityCheck(rawValue: check) {
            shcIdentity = check
        }
        if case .string(let system)? = settings["memberIdSystem"], (1...300).contains(system.utf8.count) { memberIDSystem = system }
    }

    /// Whether kept statuses may change when `setting` is set to `value`: the campus's zone
    /// (the day a positive result was collected on) or `isolationDays` among its settings,
    /// given even unchanged or removed, so that running the command again recomputes them.
    public static func statusesDepend(on setting: CampusSetting, value: String) -> Bool {
        switch setting {
        case .timezone: return true
        case .settings:
            guard case .object(let fields)? = try? JSONValue(parsing: Array(value.utf8)) else { return false }
            return fields["isolationDays"] != nil
        default: return false
        }
    }

    /// The keys of a campus's `settings` the policy reads.
    public static let settingKeys = ["isolationDays", "quarantineDays", "shc-identity", "memberIdSystem"]

    /// What is wrong with the policy's keys among a campus's new `settings`, each as "key: what
    /// it must be" (a key given null is being removed): what `attest campus set … settings`
    /// refuses, where the policy read from the campus would quietly keep the default.
    public static func problems(in settings: [String: JSONValue]) -> [String] {
        var problems: [String] = []
        func check(_ key: String, _ expected: String, _ valid: (JSONValue) -> Bool) {
            guard let value = settings[key], value != .null, !valid(value) else { return }
            problems.append("\(key): \(expected)")
        }
        for key in ["isolationDays", "quarantineDays"] {
            check(key, "a whole number of days from \(days.lowerBound) to \(days.upperBound)") {
                guard case .number(let number) = $0, let whole = Int(exactly: number) else { return false }
                return days.contains(whole)
            }
        }
        check("shc-identity", "off, lenient or strict") {
            guard case .string(let text) = $0 else { return false }
            return SmartHealthCards.IdentityCheck(rawValue: text) != nil
        }
        check("memberIdSystem", "a URI of 1 to 300 characters, such as https://id.example.edu/student") {
            guard case .string(let system) = $0 else { return false }
            return (1...300).contains(system.utf8.count)
        }
        return problems
    }
}

/// A member's status from their whole record, and nothing else: the same record gives the
/// same status whatever order it arrived in.
public enum HealthStatusComputation {
    /// A result as the record keeps it.
    public struct Result: Sendable, Equatable {
        public var specimenID: String
        public var code: String
        public var detected: Bool
        public var collectedAt: Date
        public var resultedAt: Date
        /// A health officer ended its isolation early.
        public var released: Bool

        public init(specimenID: String, code: String, detected: Bool, collectedAt: Date, resultedAt: Date, released: Bool) {
            (self.specimenID, self.code, self.detected, self.collectedAt, self.resultedAt, self.released) = (
                specimenID, code, detected, collectedAt, resultedAt, released
            )
        }
    }

    /// An isolation or quarantine started by hand and not released.
    public struct Isolation: Sendable, Equatable {
        public var kind: HealthStatus.RestrictionKind
        public var until: LocalDate

        public init(kind: HealthStatus.RestrictionKind, until: LocalDate) { (self.kind, self.until) = (kind, until) }
    }

    /// The last day of the isolation a positive result collected at `collected` starts.
    public static func isolationEnd(collected: Date, policy: RecordsPolicy, zone: TimeZone) -> LocalDate {
        LocalDate(collected, in: zone).adding(days: policy.isolationDays)
    }

    /// nil when there is no record at all (no result, no isolation, no approved exemption, no dose).
    public static func status(
        results: [Result], isolations: [Isolation], exemptions: [HealthStatus.Exemption] = [], doses: [SmartHealthCards.Dose] = [],
        policy: RecordsPolicy, zone: TimeZone
    ) -> HealthStatus? {
        guard !results.isEmpty || !isolations.isEmpty || !exemptions.isEmpty || !doses.isEmpty else { return nil }
        var status = HealthStatus()
        status.vaccination = vaccination(doses)
        let latest = results.max { a, b in
            (a.collectedAt, a.resultedAt, a.specimenID) < (b.collectedAt, b.resultedAt, b.specimenID)
        }
        status.latestTest = latest.map {
            HealthStatus.Test(code: $0.code, detected: $0.detected, collected: $0.collectedAt, resulted: $0.resultedAt)
        }
        var restrictions = isolations.map { HealthStatus.Restriction(kind: $0.kind, until: $0.until) }
        for result in results where result.detected && !result.released {
            restrictions.append(.init(kind: .isolation, until: isolationEnd(collected: result.collectedAt, policy: policy, zone: zone)))
        }
        // The one ending last; an isolation before a quarantine ending the same day.
        status.restriction = restrictions.max { a, b in
            (a.until, a.kind == .isolation ? 1 : 0) < (b.until, b.kind == .isolation ? 1 : 0)
        }
        status.exemption = exemptions.max { a, b in (a.expires, a.kind.rawValue) < (b.expires, b.kind.rawValue) }
        return status
    }

    /// The vaccination `doses` give: doses counted by day (two codes given the same day are
    /// one dose), the series complete on the day of a single-dose vaccine's dose
    /// (`SmartHealthCards.singleDose`) or of the second dose, whichever comes first.
    public static func vaccination(_ doses: [SmartHealthCards.Dose]) -> HealthStatus.Vaccination? {
        let sorted = doses.sorted { ($0.date, $0.cvx) < ($1.date, $1.cvx) }
        guard let last = sorted.last else { return nil }
        var days: [LocalDate] = []
        var completed: LocalDate?
        for dose in sorted {
            if days.last != dose.date { days.append(dose.date) }
            if completed == nil, SmartHealthCards.singleDose.contains(dose.cvx) || days.count >= 2 { completed = dose.date }
        }
        return HealthStatus.Vaccination(doses: days.count, lastDose: last.date, completed: completed)
    }
}
