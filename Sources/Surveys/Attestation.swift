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
}

extension UUID {
    /// A version 7 UUID (RFC 9562): the Unix time of `instant` in milliseconds, then 74
    /// random bits. Ids made one after another sort one after another, so a primary-key
    /// index takes each new row on its rightmost pages instead of a random page.
    public static func timeOrdered(at instant: Date) -> UUID {
        let milliseconds = UInt64(max(0, instant.timeIntervalSince1970 * 1000))
        var random = SystemRandomNumberGenerator()
        let high = random.next() as UInt64, low = random.next() as UInt64
        func byte(_ value: UInt64, _ shift: UInt64) -> UInt8 { UInt8(truncatingIfNeeded: value >> shift) }
        return UUID(uuid: (
            byte(milliseconds, 40), byte(milliseconds, 32), byte(milliseconds, 24), byte(milliseconds, 16),
            byte(milliseconds, 8), byte(milliseconds, 0),
            0x70 | (byte(high, 0) & 0x0F), byte(high, 8),  // version 7, then 12 random bits
            0x80 | (byte(high, 16) & 0x3F), byte(high, 24),  // variant 10, then 62 random bits
            byte(high, 32), byte(high, 40), byte(low, 0), byte(low, 8), byte(low, 16), byte(low, 24)))
    }
}

extension Campus {
    /// Whether `instant` is before the campus's daily deadline, local time (09:59:59 is on
    /// time for a 10:00 deadline; 10:00:00 is late).
    public func isOnTime(_ instant: Date) -> Bool {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let parts = calendar.dateComponents([.hour, .minute, .second], from: instant)
        let seconds = (parts.hour ?? 0) * 3600 + (parts.minute ?? 0) * 60 + (parts.second ?? 0)
        return seconds < deadlineMinute * 60
    }

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
