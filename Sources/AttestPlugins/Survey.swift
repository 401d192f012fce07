import Foundation

/// A calendar date in a campus's time zone ("today" at that campus).
public struct LocalDate: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    public var year: Int
    public var month: Int
    public var day: Int

    public init(year: Int, month: Int, day: Int) {
        self.year = year
        self.month = month
        self.day = day
    }

    /// Parses `YYYY-MM-DD` (a real calendar day only).
    public init?(_ text: String) {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].utf8.count == 4, parts[1].utf8.count == 2, parts[2].utf8.count == 2,
            parts.allSatisfy({ $0.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } }),
            let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2])
        else { return nil }
        self.init(calendarYear: year, month: month, day: day)
    }

    /// The date `year`-`month`-`day` when it is a real calendar day (no 31 April, no 29
    /// February but in a leap year).
    public init?(calendarYear year: Int, month: Int, day: Int) {
        guard (1...12).contains(month), day >= 1, day <= LocalDate.days(inMonth: month, year: year) else { return nil }
        self.init(year: year, month: month, day: day)
    }

    /// The date in `zone` at `instant`: the instant moved by the zone's offset at that instant
    /// (DST-correct), then counted in whole days. Arithmetic, not `Calendar`: every submission
    /// and badge read asks.
    public init(_ instant: Date, in zone: TimeZone) {
        let (days, remainder) = Self.wallClockSeconds(instant, in: zone).quotientAndRemainder(dividingBy: 86_400)
        self.init(daysSince1970: remainder < 0 ? days - 1 : days)
    }

    /// The wall-clock time in `zone` at `instant`, in whole seconds since its local midnight
    /// (0 ..< 86,400; the hour, minute and second `Calendar` gives, without a `Calendar`).
    public static func secondOfDay(at instant: Date, in zone: TimeZone) -> Int {
        let remainder = wallClockSeconds(instant, in: zone) % 86_400
        return remainder < 0 ? remainder + 86_400 : remainder
    }

    /// Seconds from 1970-01-01 00:00 to `instant`'s wall-clock time in `zone`: the instant
    /// moved by the zone's offset at that instant, rounded down to a whole second.
    static func wallClockSeconds(_ instant: Date, in zone: TimeZone) -> Int {
        // An instant past ±10¹² s (31,000 years; NaN too) is taken at that bound, not trapped on.
        let bound = 1_000_000_000_000.0, interval = instant.timeIntervalSince1970
        let clamped = interval.isNaN ? 0 : min(max(interval, -bound), bound)
        return (Int(exactly: clamped.rounded(.down)) ?? 0) + zone.secondsFromGMT(for: Date(timeIntervalSince1970: clamped))
    }

    /// The proleptic Gregorian date `days` days after 1970-01-01 (H. Hinnant's `civil_from_days`).
    init(daysSince1970 days: Int) {
        let shifted = days + 719_468  // from 0000-03-01, so a leap day ends its year
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153  // March is 0
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        self.init(year: yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month: month, day: dayOfYear - (153 * shiftedMonth + 2) / 5 + 1)
    }

    /// Days from 1970-01-01 to this date (`days_from_civil`).
    var daysSince1970: Int {
        let shiftedYear = month <= 2 ? year - 1 : year
        let era = (shiftedYear >= 0 ? shiftedYear : shiftedYear - 399) / 400
        let yearOfEra = shiftedYear - era * 400
        let dayOfYear = (153 * ((month + 9) % 12) + 2) / 5 + day - 1
        return era * 146_097 + yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear - 719_468
    }

    /// The first instant of this date in `zone` (DST-correct).
    public func start(in zone: TimeZone) -> Date {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        // Foundation answers nil only for dates it cannot represent; midnight UTC shifted by
        // the zone's offset is the same instant everywhere but on a DST change at midnight.
        return calendar.date(from: DateComponents(year: year, month: month, day: day))
            ?? Date(timeIntervalSince1970: Double(daysSince1970) * 86_400 - Double(zone.secondsFromGMT()))
    }

    /// The date `count` days later (earlier when negative).
    public func adding(days count: Int) -> LocalDate { LocalDate(daysSince1970: daysSince1970 + count) }

    /// Whole days from `self` to `other` (positive when `other` is later).
    public func days(until other: LocalDate) -> Int { other.daysSince1970 - daysSince1970 }

    public static func < (lhs: LocalDate, rhs: LocalDate) -> Bool { (lhs.year, lhs.month, lhs.day) < (rhs.year, rhs.month, rhs.day) }

    /// `YYYY-MM-DD`, the year padded to four digits as `init?(_:)` reads it.
    public var description: String {
        guard (0...9999).contains(year), (1...12).contains(month), (1...31).contains(day) else {
            let year = String(self.year)
            let month = self.month < 10 ? "0\(self.month)" : "\(self.month)"
            let day = self.day < 10 ? "0\(self.day)" : "\(self.day)"
            return String(repeating: "0", count: max(0, 4 - year.count)) + year + "-\(month)-\(day)"
        }
        // Every submission and badge writes a date or two: the digits straight into the string.
        return String(unsafeUninitializedCapacity: 10) { text in
            Self.writeDigits(year, width: 4, into: text, at: 0)
            text[4] = UInt8(ascii: "-")
            Self.writeDigits(month, width: 2, into: text, at: 5)
            text[7] = UInt8(ascii: "-")
            Self.writeDigits(day, width: 2, into: text, at: 8)
            return 10
        }
    }

    /// The last `width` decimal digits of `value`'s magnitude at `offset`, zero-padded.
    static func writeDigits(_ value: Int, width: Int, into text: UnsafeMutableBufferPointer<UInt8>, at offset: Int) {
        var rest = value.magnitude
        for position in (offset..<offset + width).reversed() {
            text[position] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: rest % 10)
            rest /= 10
        }
    }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let date = LocalDate(text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not a YYYY-MM-DD date"))
        }
        self = date
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }

    static func days(inMonth month: Int, year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }
}

/// The colour of a badge. `gray` means nothing was submitted today.
public enum BadgeColor: String, Sendable, Codable, CaseIterable, Comparable {
    case green, yellow, red, gray

    /// Severity order: gray < green < yellow < red.
    public static func < (lhs: BadgeColor, rhs: BadgeColor) -> Bool { lhs.severity < rhs.severity }

    private var severity: Int {
        switch self {
        case .gray: 0
        case .green: 1
        case .yellow: 2
        case .red: 3
        }
    }
}

/// One answer: a yes/no, a number, the id of a chosen option, or text.
public enum AnswerValue: Sendable, Hashable, Codable, CustomStringConvertible {
    case bool(Bool)
    case number(Double)
    /// The chosen option of a choice question, or free text (the question's kind says which).
    case text(String)

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let flag = try? container.decode(Bool.self) {
            self = .bool(flag)
        } else if let number = try? container.decode(Double.self) {
            self = .number(number)
        } else {
            self = .text(try container.decode(String.self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .bool(let flag): try container.encode(flag)
        case .number(let number): try container.encode(number)
        case .text(let text): try container.encode(text)
        }
    }

    public var description: String {
        switch self {
        case .bool(let flag): String(flag)
        case .number(let number): String(number)
        case .text(let text): text
        }
    }
}

extension AnswerValue {
    /// The answer a JSON value holds: a boolean, number or string; nil for null, arrays and objects.
    public init?(_ json: JSONValue) {
        switch json {
        case .bool(let flag): self = .bool(flag)
        case .number(let number): self = .number(number)
        case .string(let text): self = .text(text)
        case .null, .array, .object: return nil
        }
    }
}

/// A member's answers, by question id. Only questions of the questionnaire appear.
public typealias SurveyAnswers = [String: AnswerValue]
