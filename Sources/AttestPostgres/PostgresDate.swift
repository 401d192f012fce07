import Foundation

/// A calendar date without a time or zone: PostgreSQL's `date`.
public struct PostgresDate: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var year: Int
    public var month: Int
    public var day: Int

    /// Returns nil when the fields do not name a real day (month 13, 30 February).
    public init?(year: Int, month: Int, day: Int) {
        guard (1...12).contains(month), day >= 1, day <= Self.daysIn(month: month, year: year) else { return nil }
        self.year = year
        self.month = month
        self.day = day
    }

    /// Parses `YYYY-MM-DD`; nil for anything else.
    public init?(iso8601 text: some StringProtocol) {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
            parts.allSatisfy({ $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) }),
            let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2])
        else { return nil }
        self.init(year: year, month: month, day: day)
    }

    /// Days since 1970-01-01 (negative before).
    public var daysSinceUnixEpoch: Int {
        // Howard Hinnant's days_from_civil.
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146097 + doe - 719468
    }

    public init(daysSinceUnixEpoch days: Int) {
        let z = days + 719468
        let era = (z >= 0 ? z : z - 146096) / 146097
        let doe = z - era * 146097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        self.year = yoe + era * 400 + (month <= 2 ? 1 : 0)
        self.month = month
        self.day = day
    }

    public static func < (lhs: PostgresDate, rhs: PostgresDate) -> Bool {
        (lhs.year, lhs.month, lhs.day) < (rhs.year, rhs.month, rhs.day)
    }

    /// `YYYY-MM-DD`.
    public var description: String {
        func pad(_ value: Int, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))"
    }

    static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }
}

extension PostgresDate {
    /// An instant as ISO 8601 in UTC to the second, `2026-11-20T16:00:00Z`: what
    /// `Date.ISO8601Format()` gives (from 1583 on: this is the proleptic Gregorian calendar,
    /// Foundation switches to the Julian before), without its calendar machinery.
    public static func timestamp(_ date: Date) -> String {
        // Kept within PostgreSQL's range, whatever the date (NaN or infinite ones too): no trap.
        let interval = date.timeIntervalSince1970
        let unbounded = Int(exactly: interval.rounded(.down)) ?? (interval > 0 ? Self.latestSecond : Self.earliestSecond)
        let seconds = min(max(unbounded, Self.earliestSecond), Self.latestSecond)
        let second = ((seconds % 86_400) + 86_400) % 86_400
        let day = PostgresDate(daysSinceUnixEpoch: (seconds - second) / 86_400)
        guard (0...9999).contains(day.year) else {
            func pad(_ value: Int) -> String { value < 10 ? "0\(value)" : String(value) }
            return "\(day)T\(pad(second / 3600)):\(pad(second / 60 % 60)):\(pad(second % 60))Z"
        }
        // Every submission's answer holds two: the digits straight into the string.
        return String(unsafeUninitializedCapacity: 20) { text in
            var at = 0
            func put(_ value: Int, _ width: Int, then separator: UInt8?) {
                var rest = value.magnitude
                for position in (at..<at + width).reversed() {
                    text[position] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: rest % 10)
                    rest /= 10
                }
                at += width
                if let separator {
                    text[at] = separator
                    at += 1
                }
            }
            put(day.year, 4, then: UInt8(ascii: "-"))
            put(day.month, 2, then: UInt8(ascii: "-"))
            put(day.day, 2, then: UInt8(ascii: "T"))
            put(second / 3600, 2, then: UInt8(ascii: ":"))
            put(second / 60 % 60, 2, then: UInt8(ascii: ":"))
            put(second % 60, 2, then: UInt8(ascii: "Z"))
            return at
        }
    }

    /// Whether `date` lies within PostgreSQL's timestamps (so it can be stored); false for
    /// NaN and infinities.
    public static func holds(_ date: Date) -> Bool {
        (Double(earliestSecond)...Double(latestSecond)).contains(date.timeIntervalSince1970)
    }

    /// PostgreSQL's first and last timestamps (4714-11-24 BC, 294276-12-31 23:59:59), in
    /// seconds since 1970.
    static let earliestSecond = -210_866_803_200
    static let latestSecond = 9_224_318_015_999
}
