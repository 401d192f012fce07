internal import AttestFoundation
import Foundation

/// A place public-health figures are reported for: a US county or state by its FIPS code, or
/// whatever a provider's source knows.
public struct CommunityRegion: Sendable, Equatable, Codable {
    /// Stable within its provider: 1 to 64 characters of letters, digits and `._:-`.
    public var id: String
    public var name: String
    /// People living there, when known; the per-100,000 figures and the risk level need it.
    public var population: Int?

    public init(id: String, name: String, population: Int? = nil) {
        self.id = id
        self.name = name
        self.population = population
    }

    /// Whether `id` can name a region: 1–64 of `A-Z a-z 0-9 . _ : -`.
    public static func isValidID(_ id: String) -> Bool {
        !id.isEmpty && id.utf8.count <= 64
            && id.utf8.allSatisfy {
                (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x2E || $0 == 0x5F
                    || $0 == 0x3A || $0 == 0x2D
            }
    }
}

/// One reported day of a region.
public struct CommunityDay: Sendable, Equatable {
    public var date: LocalDate
    /// New cases reported that day; negative when the source corrected earlier counts down.
    public var newCases: Int
    /// New deaths reported that day; negative for a correction.
    public var newDeaths: Int
    /// Tests reported that day, when the source has them.
    public var tests: Int?
    /// Hospital admissions that day, when the source has them.
    public var admissions: Int?

    public init(date: LocalDate, newCases: Int, newDeaths: Int, tests: Int? = nil, admissions: Int? = nil) {
        self.date = date
        self.newCases = newCases
        self.newDeaths = newDeaths
        self.tests = tests
        self.admissions = admissions
    }
}

/// What a provider answers for a region: its days, oldest first, one per date (a date the
/// source did not report is missing), and whether this is an older copy kept because the
/// source could not be reached.
public struct CommunitySeries: Sendable, Equatable {
    public var region: CommunityRegion
    public var days: [CommunityDay]
    public var stale: Bool

    public init(region: CommunityRegion, days: [CommunityDay], stale: Bool = false) {
        self.region = region
        self.days = days
        self.stale = stale
    }
}

/// Public-health figures of the region around a campus (the fourth plugin point).
///
/// Implementation requirements: answer quickly (the platform waits about 2 s, then answers
/// 503 naming the provider); throw when there is nothing to answer; when the source is down
/// or answers nonsense but an earlier answer is kept, return it with `stale: true` and log
/// why. Days come oldest first, one per date. A provider is built once per set of settings
/// (campuses with the same settings share it) and kept while they stand, so it may keep a
/// copy of its source in memory.
public protocol CommunityDataProvider: Sendable {
    /// The daily series of region `id`, or nil when the source has no such region.
    func series(region id: String, context: PluginContext) async throws -> CommunitySeries?

    /// Regions whose name contains `search` (ignoring case and accents), by name, at most
    /// `limit`; the first `limit` by name when `search` is empty.
    func regions(matching search: String, limit: Int, context: PluginContext) async throws -> [CommunityRegion]

    /// Who published the figures, as pages and the API credit them ("The New York Times,
    /// us-counties.csv"). Default nil: the provider's id is shown.
    var attribution: String? { get }
}

extension CommunityDataProvider {
    public var attribution: String? { nil }
}

/// A line of a community data file that cannot be used; the whole file is refused.
public typealias CommunityDataFileError = DataFileError

/// A line of a data file (community figures, testing locations) that cannot be used; the
/// whole file is refused.
public struct DataFileError: Error, Sendable, Equatable, CustomStringConvertible {
    public let line: Int
    public let reason: String
    public init(line: Int, reason: String) {
        self.line = line
        self.reason = reason
    }
    public var description: String { "line \(line): \(reason); nothing was imported" }
}

/// Every region of a cumulative time-series file, kept compactly (three 32-bit numbers a
/// reported day), with search by name. Built from the widely used layout
/// `date,county,state,fips,cases,deaths` (US counties) or `date,state,fips,cases,deaths`
/// (US states) by `parseCumulativeCSV`, which turns running totals into daily figures.
public struct CommunityDataset: Sendable {
    struct Stored: Sendable {
        var region: CommunityRegion
        var days: [Int32]  // days since 1970-01-01, ascending
        var cases: [Int32]
        var deaths: [Int32]
        /// Tests and admissions a day, `Int32.min` where not reported; empty when never.
        var tests: [Int32] = []
        var admissions: [Int32] = []
    }

    var stored: [String: Stored]
    /// (name folded for search, id), sorted by name.
    let index: [(folded: String, id: String)]

    init(stored: [String: Stored]) {
        self.stored = stored
        index = stored.values.map { (Self.fold($0.region.name), $0.region.id) }.sorted { ($0.folded, $0.id) < ($1.folded, $1.id) }
    }

    /// A dataset of series given whole (a feed that reports daily figures). Each series's
    /// days are sorted by date, the last of a date kept; figures beyond ±2³¹ are clamped.
    public init(series: [CommunitySeries]) {
        var stored: [String: Stored] = [:]
        for item in series {
            var entry = Stored(region: item.region, days: [], cases: [], deaths: [])
            let days = item.days.enumerated().sorted { ($0.element.date, $0.offset) < ($1.element.date, $1.offset) }.map(\.element)
            let hasTests = days.contains { $0.tests != nil }, hasAdmissions = days.contains { $0.admissions != nil }
            for (position, day) in days.enumerated() {
                if position + 1 < days.count, days[position + 1].date == day.date { continue }
                entry.days.append(Int32(clamping: day.date.daysSince1970))
                entry.cases.append(Int32(clamping: day.newCases))
                entry.deaths.append(Int32(clamping: day.newDeaths))
                if hasTests { entry.tests.append(day.tests.map { Int32(clamping: $0) } ?? Int32.min) }
                if hasAdmissions { entry.admissions.append(day.admissions.map { Int32(clamping: $0) } ?? Int32.min) }
            }
            stored[item.region.id] = entry
        }
        self.init(stored: stored)
    }

    /// How many regions it holds.
    public var regionCount: Int { stored.count }

    /// How many reported days it holds over all regions.
    public var dayCount: Int { stored.values.reduce(0) { $0 + $1.days.count } }

    /// The latest reported date over all regions.
    public var latestDate: LocalDate? {
        stored.values.compactMap(\.days.last).max().map { LocalDate(daysSince1970: Int($0)) }
    }

    /// Region `id`'s series, or nil when the file has no such region.
    public func series(region id: String) -> CommunitySeries? {
        guard let entry = stored[id] else { return nil }
        var days: [CommunityDay] = []
        days.reserveCapacity(entry.days.count)
        for index in entry.days.indices {
            func optional(_ values: [Int32]) -> Int? {
                index < values.count && values[index] != Int32.min ? Int(values[index]) : nil
            }
            days.append(
                CommunityDay(
                    date: LocalDate(daysSince1970: Int(entry.days[index])), newCases: Int(entry.cases[index]),
                    newDeaths: Int(entry.deaths[index]), tests: optional(entry.tests), admissions: optional(entry.admissions)))
        }
        return CommunitySeries(region: entry.region, days: days)
    }

    /// Calls `body` with each region (by id) and its reported days (days since 1970-01-01,
    /// ascending), new cases and new deaths: for storing a dataset compactly.
    public func forEachRegion(_ body: (CommunityRegion, _ days: [Int32], _ newCases: [Int32], _ newDeaths: [Int32]) throws -> Void) rethrows
    {
        for id in stored.keys.sorted() {
            guard let entry = stored[id] else { continue }
            try body(entry.region, entry.days, entry.cases, entry.deaths)
        }
    }

    /// Every region, by name.
    public var regions: [CommunityRegion] { index.compactMap { stored[$0.id]?.region } }

    /// Regions whose name contains `search` (ignoring case and accents), by name, at most `limit`.
    public func regions(matching search: String, limit: Int) -> [CommunityRegion] {
        let wanted = Self.fold(search)
        var found: [CommunityRegion] = []
        for (folded, id) in index where found.count < limit && (wanted.isEmpty || folded.contains(wanted)) {
            if let region = stored[id]?.region { found.append(region) }
        }
        return found
    }

    /// Text as compared in searches: lower case, no accents, runs of spaces as one.
    public static func fold(_ text: String) -> String {
        text.folding(options: [.caseInsensitive, .diacriticInsensitive, .widthInsensitive], locale: nil)
            .split(whereSeparator: \.isWhitespace).joined(separator: " ")
    }

    /// Reads a cumulative file. A row's region is its `fips` when it has one; a row without one
    /// (New York City in the counties file) gets `<state>:<county>` in lower case with spaces
    /// as `-` (`new-york:new-york-city`); rows whose county is `Unknown` are not a place and are
    /// skipped. Daily figures are each reported date's total minus the region's previous
    /// reported total (the first date's figure is its total); a total that goes down is a
    /// correction, kept as a negative day. An empty `cases` or `deaths` is the previous total.
    /// A date given twice for one region keeps its last row. `population` is a CSV with a
    /// header naming `fips` (or `id`) and `population`. Every row is checked: a bad one throws
    /// `CommunityDataFileError` naming its line.
    public static func parseCumulativeCSV(_ data: Data, population: Data? = nil) throws -> CommunityDataset {
        var columns: [String] = []
        var rows: [String: (region: CommunityRegion, rows: [(day: Int32, cases: Int64?, deaths: Int64?)])] = [:]
        try CSV.forEachRecord(in: data) { line, fields in
            if columns.isEmpty {
                columns = fields.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
                for required in ["date", "state", "cases"] where !columns.contains(required) {
                    throw CommunityDataFileError(
                        line: line,
                        reason:
                            "the header needs a \(required) column (date,county,state,fips,cases,deaths, or date,state,fips,cases,deaths)")
                }
                return
            }
            if fields.count == 1 && fields[0].isEmpty { return }
            guard fields.count <= columns.count else {
                throw CommunityDataFileError(line: line, reason: "more fields than the header names")
            }
            func field(_ name: String) -> String {
                guard let index = columns.firstIndex(of: name), index < fields.count else { return "" }
                return fields[index].trimmingCharacters(in: .whitespaces)
            }
            let dateText = field("date")
            guard let date = LocalDate(dateText) else {
                throw CommunityDataFileError(line: line, reason: "date must be YYYY-MM-DD, got \"\(dateText)\"")
            }
            func total(_ name: String) throws -> Int64? {
                let text = field(name)
                if text.isEmpty { return nil }
                guard let value = Int64(text), value >= 0, value <= Int64(Int32.max) else {
                    throw CommunityDataFileError(
                        line: line, reason: "\(name) must be a whole number from 0 to \(Int32.max), got \"\(text)\"")
                }
                return value
            }
            let cases = try total("cases"), deaths = try total("deaths")
            let state = field("state"), county = field("county"), fips = field("fips")
            guard !state.isEmpty, state.count <= 100, county.count <= 100 else {
                throw CommunityDataFileError(line: line, reason: "state must be 1 to 100 characters and county at most 100")
            }
            if county.caseInsensitiveCompare("Unknown") == .orderedSame { return }
            let id = fips.isEmpty ? Self.slug(state) + (county.isEmpty ? "" : ":" + Self.slug(county)) : fips
            guard CommunityRegion.isValidID(id) else {
                throw CommunityDataFileError(line: line, reason: "fips must be 1 to 64 letters and digits, got \"\(fips)\"")
            }
            guard date.year >= 1900, date.year <= 9999 else {
                throw CommunityDataFileError(line: line, reason: "date \(dateText) is out of range")
            }
            let day = Int32(date.daysSince1970)
            let name = county.isEmpty ? state : "\(county), \(state)"
            rows[id, default: (CommunityRegion(id: id, name: name), [])].rows.append((day, cases, deaths))
        }
        if columns.isEmpty { throw CommunityDataFileError(line: 1, reason: "the file is empty") }
        let people = try population.map(parsePopulation) ?? [:]
        var stored: [String: Stored] = [:]
        stored.reserveCapacity(rows.count)
        for (id, entry) in rows {
            // Stable: of two rows for one date, the later in the file is last and wins.
            let sorted = entry.rows.enumerated().sorted { ($0.element.day, $0.offset) < ($1.element.day, $1.offset) }.map(\.element)
            var result = Stored(region: entry.region, days: [], cases: [], deaths: [])
            result.region.population = people[id]
            var lastCases: Int64 = 0, lastDeaths: Int64 = 0
            for (position, row) in sorted.enumerated() {
                if position + 1 < sorted.count, sorted[position + 1].day == row.day { continue }
                let cases = row.cases ?? lastCases, deaths = row.deaths ?? lastDeaths
                result.days.append(row.day)
                // Both totals lie in 0...Int32.max, so a difference fits in Int32.
                result.cases.append(Int32(truncatingIfNeeded: cases - lastCases))
                result.deaths.append(Int32(truncatingIfNeeded: deaths - lastDeaths))
                (lastCases, lastDeaths) = (cases, deaths)
            }
            stored[id] = result
        }
        return CommunityDataset(stored: stored)
    }

    /// A population file: a header naming `fips` (or `id`) and `population`, then a row a region.
    public static func parsePopulation(_ data: Data) throws -> [String: Int] {
        var columns: [String] = []
        var people: [String: Int] = [:]
        try CSV.forEachRecord(in: data) { line, fields in
            if columns.isEmpty {
                columns = fields.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
                guard columns.contains("population"), columns.contains("fips") || columns.contains("id") else {
                    throw CommunityDataFileError(
                        line: line, reason: "the population file's header needs fips (or id) and population columns")
                }
                return
            }
            if fields.count == 1 && fields[0].isEmpty { return }
            func field(_ name: String) -> String {
                guard let index = columns.firstIndex(of: name), index < fields.count else { return "" }
                return fields[index].trimmingCharacters(in: .whitespaces)
            }
            let id = columns.contains("fips") ? field("fips") : field("id")
            guard CommunityRegion.isValidID(id) else {
                throw CommunityDataFileError(line: line, reason: "a region id (fips) is missing or not valid")
            }
            guard let value = Int(field("population")), value > 0, value <= 20_000_000_000 else {
                throw CommunityDataFileError(
                    line: line, reason: "population must be a whole number above 0, got \"\(field("population"))\"")
            }
            people[id] = value
        }
        return people
    }

    /// `New York City` → `new-york-city`.
    static func slug(_ text: String) -> String {
        let folded = fold(text)
        var result = ""
        for scalar in folded.unicodeScalars {
            if CharacterSet.alphanumerics.contains(scalar), scalar.isASCII {
                result.unicodeScalars.append(scalar)
            } else if result.last != "-" {
                result.append("-")
            }
        }
        return String(result.trimmingCharacters(in: CharacterSet(charactersIn: "-")).prefix(30))
    }
}
