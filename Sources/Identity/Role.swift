/// What a user may do at one campus. Everyone is a member; the others are granted with
/// `attest role grant` and recorded in the audit log.
public enum Role: String, Sendable, Codable, CaseIterable, Comparable {
    /// Attests daily, sees their own badge and history.
    case member
    /// Verifies badges at building doors.
    case screener
    /// Sees the identifiable follow-up list.
    case healthOfficer = "health_officer"
    /// Manages campus settings and sees statistics.
    case admin

    public static func < (lhs: Role, rhs: Role) -> Bool { lhs.rank < rhs.rank }

    private var rank: Int {
        switch self {
        case .member: 0
        case .screener: 1
        case .healthOfficer: 2
        case .admin: 3
        }
    }

    /// Parses `health_officer` and the friendlier `health-officer`.
    public init?(parsing text: String) {
        self.init(rawValue: text.lowercased().replacingOccurrences(of: "-", with: "_"))
    }
}
