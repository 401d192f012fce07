import AttestPlugins
import Foundation
import Tenancy

/// A member's attestation for one campus-local day, with the badge it earned.
public struct Attestation: Sendable, Equatable {
    public var id: UUID
    public var date: LocalDate
    public var submittedAt: Date
    public var onTime: Bool
    public var surveyVersion: Int
    public var color: BadgeColor
    public var reason: String
    public var validUntil: Date
    public var ruleID: String
    public var ruleVersion: String
    public var idempotencyKey: String?
    /// The SHA-256 of the questionnaire version and answers the key came with.
    public var idempotencyDigest: Data? = nil
}

extension Campus {
    /// Whether `instant` is before the campus's daily deadline, local time (09:59:59 is on
    /// time for a 10:00 deadline; 10:00:00 is late). Minutes compared, whole ones: no product
    /// of a deadline that could overflow.
    public func isOnTime(_ instant: Date) -> Bool { LocalDate.secondOfDay(at: instant, in: zone) / 60 < deadlineMinute }

    /// When the next attestation window opens after `instant`: the next local midnight.
    public func nextWindow(after instant: Date) -> Date { localDate(at: instant).adding(days: 1).start(in: zone) }

    /// "00:00 America/New_York, in 5 h 12 min": when the next window opens, for people.
    public func describeNextWindow(after instant: Date) -> String {
        let seconds = max(0, Int(nextWindow(after: instant).timeIntervalSince(instant)))
        let hours = seconds / 3600, minutes = (seconds % 3600 + 59) / 60
        let wait = hours > 0 ? "\(hours) h \(minutes) min" : "\(max(minutes, 1)) min"
        return "00:00 \(timeZone), in \(wait)"
    }
}
