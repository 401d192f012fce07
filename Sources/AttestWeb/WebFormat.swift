import AttestPlugins
import AttestServer
import Foundation
import Surveys
import Tenancy

/// Dates, times and numbers as the pages show them: in the campus's time zone, in the
/// visitor's language.
enum WebFormat {
    static func locale(_ language: String) -> Locale { Locale(identifier: language == "es" ? "es_ES" : "en_US") }

    /// "Mon, Nov 23, 2026" / "lun, 23 nov 2026".
    static func date(_ date: LocalDate, campus: Campus, language: String) -> String {
        var style = Date.FormatStyle(date: .abbreviated, time: .omitted, locale: locale(language), timeZone: campus.zone)
        style = style.weekday(.abbreviated)
        return campus.startOfDay(date).addingTimeInterval(12 * 3600).formatted(style)
    }

    /// "14:05" in the campus's zone.
    static func time(_ instant: Date, campus: Campus, seconds: Bool = false) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = campus.zone
        let parts = calendar.dateComponents([.hour, .minute, .second], from: instant)
        var text = two(parts.hour ?? 0) + ":" + two(parts.minute ?? 0)
        if seconds { text += ":" + two(parts.second ?? 0) }
        return text
    }

    /// "14:05, Mon, Nov 23" in the campus's zone.
    static func dateTime(_ instant: Date, campus: Campus, language: String) -> String {
        time(instant, campus: campus) + ", " + date(campus.localDate(at: instant), campus: campus, language: language)
    }

    /// "2026-11-24T14:05": an instant in the campus's zone as a `datetime-local` input's value.
    static func localDateTime(_ instant: Date, campus: Campus) -> String {
        campus.localDate(at: instant).description + "T" + time(instant, campus: campus)
    }

    /// The instant a `datetime-local` value (`YYYY-MM-DDTHH:MM`, seconds optional) names in the
    /// campus's zone; nil when it is not one.
    static func instant(localDateTime text: String, campus: Campus) -> Date? {
        let parts = text.split(separator: "T", maxSplits: 1)
        guard text.utf8.count <= 32, parts.count == 2, let date = LocalDate(String(parts[0])) else { return nil }
        let clock = parts[1].split(separator: ":", omittingEmptySubsequences: false)
        guard (2...3).contains(clock.count), clock[0].utf8.count == 2, clock[1].utf8.count == 2,
            let hour = Int(clock[0]), let minute = Int(clock[1]), (0...23).contains(hour), (0...59).contains(minute)
        else { return nil }
        var second = 0
        if clock.count == 3 {
            guard let value = Double(clock[2]), value >= 0, value < 60 else { return nil }
            second = Int(value.rounded(.down))  // checked to be 0 ..< 60 above
        }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = campus.zone
        return calendar.date(
            from: DateComponents(year: date.year, month: date.month, day: date.day, hour: hour, minute: minute, second: second))
    }

    /// "2 h 05 min", "45 min" of a span of seconds.
    static func duration(_ seconds: Int) -> String {
        let minutes = max(0, seconds) / 60
        return minutes < 60 ? "\(minutes) min" : "\(minutes / 60) h " + two(minutes % 60) + " min"
    }

    /// "3:04:05" of a span of seconds (never negative).
    static func span(_ seconds: Int) -> String {
        let seconds = max(0, seconds)
        return "\(seconds / 3600):" + two(seconds % 3600 / 60) + ":" + two(seconds % 60)
    }

    /// A percentage with at most one decimal ("12.5").
    static func percent(_ value: Double) -> String {
        guard value.isFinite else { return "–" }
        let rounded = (value * 10).rounded() / 10
        return rounded == rounded.rounded() ? noDecimals(rounded) : oneDecimal(rounded)
    }

    /// "820 KB", "1.2 MB", "12 MB" (of 1,024 and 1,048,576 bytes).
    static func bytes(_ count: Int) -> String {
        if count < 1_048_576 { return "\(max(count, 0) / 1024 + (count % 1024 == 0 ? 0 : 1)) KB" }
        return count % 1_048_576 == 0 ? "\(count / 1_048_576) MB" : String(format: "%.1f MB", Double(count) / 1_048_576)
    }

    /// "10,000" / "10.000": a whole number in the visitor's language.
    static func count(_ value: Int, visit: WebVisit) -> String { value.formatted(.number.locale(locale(visit.language))) }

    static func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }

    /// An option id as words: "on_campus" → "On campus".
    static func words(_ id: String) -> String {
        let text = id.replacingOccurrences(of: "_", with: " ")
        return text.prefix(1).uppercased() + text.dropFirst()
    }
}

/// `value` with one decimal ("12.5", "-0.3"), rounded half to even on its tenths; a value
/// beyond ±10¹⁵ or one that is no number is written as `String(format: "%.1f")` would.
func oneDecimal(_ value: Double) -> String {
    guard abs(value) < 1e15, let tenths = Int(exactly: (value * 10).rounded(.toNearestOrEven)) else { return String(format: "%.1f", value) }
    let magnitude = tenths.magnitude
    return (tenths < 0 ? "-" : "") + String(magnitude / 10) + "." + String(magnitude % 10)
}

/// `value` rounded half to even to a whole number, as `String(format: "%.0f")` writes it.
func noDecimals(_ value: Double) -> String {
    guard abs(value) < 1e15, let whole = Int(exactly: value.rounded(.toNearestOrEven)) else { return String(format: "%.0f", value) }
    return String(whole)
}
