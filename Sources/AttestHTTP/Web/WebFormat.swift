import AttestPlugins
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

    /// "3:04:05" of a span of seconds (never negative).
    static func span(_ seconds: Int) -> String {
        let seconds = max(0, seconds)
        return "\(seconds / 3600):" + two(seconds % 3600 / 60) + ":" + two(seconds % 60)
    }

    /// A percentage with at most one decimal ("12.5").
    static func percent(_ value: Double) -> String {
        guard value.isFinite else { return "–" }
        let rounded = (value * 10).rounded() / 10
        return rounded == rounded.rounded() ? String(format: "%.0f", rounded) : String(format: "%.1f", rounded)
    }

    static func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }

    /// An option id as words: "on_campus" → "On campus".
    static func words(_ id: String) -> String {
        let text = id.replacingOccurrences(of: "_", with: " ")
        return text.prefix(1).uppercased() + text.dropFirst()
    }
}
