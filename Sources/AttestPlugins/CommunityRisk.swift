import Foundation

/// How risky it is to be out in a region, from its 7-day average of new cases per 100,000
/// people (the levels and default thresholds of Covid Act Now's community levels).
public enum CommunityRiskLevel: String, Sendable, CaseIterable, Codable {
    case low, medium, high
    case veryHigh = "very-high"
    case severe
}

/// Whether new cases rise or fall: this week's total against the week before.
public enum CommunityTrend: String, Sendable, Codable {
    case rising, falling, flat
}

/// What a campus chose beside its community-data provider, read by the platform from the
/// provider's settings: `riskThresholds` (four ascending numbers, cases per 100,000 a day
/// where medium, high, very high and severe begin; default `[1, 10, 25, 75]`) and `guidance`
/// (per level a text, or texts by language: `{"high": {"en": "…", "es": "…"}}`, each at most
/// 500 characters), and which of the provider's regions are the campus's nation and the world
/// (`nationRegion`, default `US`; `worldRegion`, default `WORLD`), listed beside the home
/// region when the provider knows them.
public struct CommunityRiskSettings: Sendable, Equatable {
    public static let defaultThresholds: [Double] = [1, 10, 25, 75]
    /// The settings the platform reads: a provider's own settings are the others.
    public static let names: Set<String> = ["riskThresholds", "guidance", "nationRegion", "worldRegion"]

    public var thresholds: [Double]
    /// Level → language → text. A text given without a language is English (`en`).
    public var guidance: [CommunityRiskLevel: [String: String]]
    /// The region ids of the campus's nation and of the world.
    public var nation = "US"
    public var world = "WORLD"

    public init(thresholds: [Double] = defaultThresholds, guidance: [CommunityRiskLevel: [String: String]] = [:]) {
        self.thresholds = thresholds
        self.guidance = guidance
    }

    /// Reads `riskThresholds`, `guidance`, `nationRegion` and `worldRegion` from a provider's
    /// settings (other members are the provider's). Throws `PluginSettingsError` saying what
    /// is wrong.
    public init(settings: JSONValue) throws {
        self.init()
        for (name, fallback) in [("nationRegion", nation), ("worldRegion", world)] {
            guard let value = settings[name] else { continue }
            guard case .string(let id) = value, CommunityRegion.isValidID(id) else {
                throw PluginSettingsError("\(name) must be a region id of 1 to 64 letters, digits or ._:-, such as \"\(fallback)\"")
            }
            if name == "nationRegion" { nation = id } else { world = id }
        }
        if let value = settings["riskThresholds"] {
            guard case .array(let items) = value, items.count == 4 else {
                throw PluginSettingsError(
                    "riskThresholds must be a list of four numbers (cases per 100,000 a day where medium, high, very high and severe begin), such as [1, 10, 25, 75]"
                )
            }
            var numbers: [Double] = []
            for item in items {
                guard case .number(let number) = item, number.isFinite, number >= 0, number <= 100_000 else {
                    throw PluginSettingsError("riskThresholds must hold numbers from 0 to 100000, got \(PluginRegistry.describe(item))")
                }
                numbers.append(number)
            }
            guard zip(numbers, numbers.dropFirst()).allSatisfy({ $0 < $1 }) else {
                throw PluginSettingsError("riskThresholds must go up, such as [1, 10, 25, 75]")
            }
            thresholds = numbers
        }
        guard let value = settings["guidance"] else { return }
        guard case .object(let levels) = value else {
            throw PluginSettingsError("guidance must be an object of risk levels, such as {\"high\": \"Wear a mask indoors.\"}")
        }
        let names = CommunityRiskLevel.allCases.map(\.rawValue).joined(separator: ", ")
        for (name, text) in levels {
            guard let level = CommunityRiskLevel(rawValue: name) else {
                throw PluginSettingsError("guidance: unknown risk level \"\(name)\"; use \(names)")
            }
            var texts: [String: String] = [:]
            switch text {
            case .string(let english): texts["en"] = english
            case .object(let translations):
                for (language, translation) in translations {
                    guard Self.isLanguageTag(language), case .string(let words) = translation else {
                        throw PluginSettingsError("guidance.\(name): give texts by language code, such as {\"en\": \"…\", \"es\": \"…\"}")
                    }
                    texts[language.lowercased()] = words
                }
            default:
                throw PluginSettingsError("guidance.\(name) must be a text or texts by language, such as {\"en\": \"…\"}")
            }
            for (language, words) in texts where words.isEmpty || words.count > 500 {
                throw PluginSettingsError("guidance.\(name) (\(language)) must be 1 to 500 characters")
            }
            guidance[level] = texts
        }
    }

    /// A language tag as Accept-Language gives one (`en`, `es-MX`).
    static func isLanguageTag(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 35
            && text.utf8.allSatisfy { (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) || $0 == 0x2D }
    }

    /// The level of `per100k` (cases a day per 100,000): below the first threshold low, from
    /// each threshold up to the next the level it begins.
    public func level(per100k: Double) -> CommunityRiskLevel {
        let levels = CommunityRiskLevel.allCases
        var result = levels[0]
        for (index, threshold) in thresholds.enumerated() where index + 1 < levels.count && per100k >= threshold {
            result = levels[index + 1]
        }
        return result
    }

    /// The guidance for `level` in the first of `languages` it has (each tried whole, then
    /// its primary part: `es-MX`, then `es`), else English, else any; nil when none was set.
    public func guidance(for level: CommunityRiskLevel, languages: [String]) -> String? {
        guard let texts = guidance[level], !texts.isEmpty else { return nil }
        for language in languages {
            let lowered = language.lowercased()
            if let text = texts[lowered] { return text }
            if let primary = lowered.split(separator: "-").first, let text = texts[String(primary)] { return text }
        }
        return texts["en"] ?? texts.sorted { $0.key < $1.key }.first?.value
    }
}

/// The figures shown for a region, by rules the README documents:
/// - `asOf`: the latest reported date.
/// - `newCases7DayAverage`: new cases reported on the 7 dates ending `asOf` (a date not
///   reported counts 0: the next report carries its cases), over 7, not below 0 (corrections).
///   Nil unless reports reach back 7 days.
/// - `per100k`: that average per 100,000 people; nil without a population.
/// - `trend`: this week's total against the 7 days before: rising when at least 10% higher,
///   falling when at least 10% lower, else flat. Nil unless reports reach back 14 days.
/// - `risk`: the level of `per100k` under the campus's thresholds.
public struct CommunityFigures: Sendable, Equatable {
    public var asOf: LocalDate?
    public var newCases7DayAverage: Double?
    public var per100k: Double?
    public var trend: CommunityTrend?
    public var risk: CommunityRiskLevel?

    public init(series: CommunitySeries, settings: CommunityRiskSettings) {
        guard let last = series.days.last, let first = series.days.first else { return }
        asOf = last.date
        let thisWeek = Self.total(series.days, from: last.date.adding(days: -6), through: last.date)
        let weekBefore = Self.total(series.days, from: last.date.adding(days: -13), through: last.date.adding(days: -7))
        let span = first.date.days(until: last.date)
        if span >= 6 {
            let average = Double(thisWeek) / 7
            newCases7DayAverage = average
            if let population = series.region.population, population > 0 {
                let per100k = average * 100_000 / Double(population)
                self.per100k = per100k
                risk = settings.level(per100k: per100k)
            }
        }
        if span >= 13 {
            // Integers: 10 × this ≥ 11 × before is "at least 10% higher", exactly at the edge.
            if thisWeek > weekBefore, 10 * thisWeek >= 11 * weekBefore {
                trend = .rising
            } else if thisWeek < weekBefore, 10 * thisWeek <= 9 * weekBefore {
                trend = .falling
            } else {
                trend = .flat
            }
        }
    }

    /// New cases reported from `start` through `end`, from 0 to 2⁴⁸ (a provider's nonsense
    /// saturates rather than traps).
    static func total(_ days: [CommunityDay], from start: LocalDate, through end: LocalDate) -> Int {
        let most = 1 << 48
        var sum = 0
        for day in days.reversed() {
            if day.date < start { break }
            if day.date <= end { sum = min(max(sum + min(max(day.newCases, -most), most), -most), most) }
        }
        return min(max(0, sum), most)
    }

    /// The 7-day averages of new cases (per 100,000 when the population is known) for each
    /// date from `start` through `end`, for charts; a date before reports reach back 7 days is nil.
    public static func rollingAverages(
        _ series: CommunitySeries, from start: LocalDate, through end: LocalDate
    ) -> [(date: LocalDate, value: Double?)] {
        guard let first = series.days.first?.date, start <= end, start.days(until: end) <= 3_660 else { return [] }
        let scale = series.region.population.map { $0 > 0 ? 100_000 / Double($0) : 1 } ?? 1
        var result: [(LocalDate, Double?)] = []
        var date = start
        while date <= end {
            if first.days(until: date) >= 6 {
                result.append((date, Double(total(series.days, from: date.adding(days: -6), through: date)) / 7 * scale))
            } else {
                result.append((date, nil))
            }
            date = date.adding(days: 1)
        }
        return result
    }
}
