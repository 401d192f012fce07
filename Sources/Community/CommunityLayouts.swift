import AttestFoundation
import AttestPlugins
import Foundation

/// The layouts `attest community import` reads (`--layout`).
///
/// - `county`: `date,county,state,fips,cases,deaths`, running totals (us-counties.csv).
/// - `state`: `date,state,fips,cases,deaths`, running totals (us-states.csv).
/// - `national`: `date,cases,deaths`, running totals of one nation (us.csv), its region id the
///   nation's ISO 3166-1 alpha-2 code (`US` unless `--region` says another).
/// - `global`: a row per country and day, `date,location,iso_code` and either
///   `new_cases,new_deaths` (daily figures) or `total_cases,total_deaths` (running totals),
///   with `population` when given (as Our World in Data's owid-covid-data.csv has them; other
///   columns are ignored). `iso_code` is ISO 3166-1 alpha-3 (or alpha-2) and becomes the alpha-2
///   region id; `OWID_WRL` is the world, `WORLD`; other `OWID_` aggregates (continents, income
///   groups) are skipped. Numbers may carry a `.0`, as that file writes them.
public enum CommunityLayout: String, Sendable, CaseIterable {
    case county, state, national, global

    /// The region id of the world in the global layout.
    public static let worldID = "WORLD"

    /// Reads `data` in this layout. `region` names the nation of the national layout;
    /// `population` is a CSV with `fips` (or `id`) and `population` columns.
    public func parse(_ data: Data, region: String = "US", population: Data? = nil) throws -> CommunityDataset {
        switch self {
        case .county, .state:
            try requireHeader(data, has: self == .county ? ["county"] : [], lacks: self == .state ? ["county"] : [])
            return try CommunityDataset.parseCumulativeCSV(data, population: population)
        case .national:
            guard let name = Countries.name(alpha2: region) else {
                throw CommunityDataFileError(line: 0, reason: "--region must be an ISO 3166-1 alpha-2 code such as US, got \"\(region)\"")
            }
            return try Self.parseNational(data, region: CommunityRegion(id: region, name: name), population: population)
        case .global:
            return try Self.parseGlobal(data, population: population)
        }
    }

    /// The header a layout's file begins with, as its errors name it.
    public var header: String {
        switch self {
        case .county: "date,county,state,fips,cases,deaths"
        case .state: "date,state,fips,cases,deaths"
        case .national: "date,cases,deaths"
        case .global: "date,location,iso_code,new_cases,new_deaths,population (or total_cases,total_deaths)"
        }
    }

    private func requireHeader(_ data: Data, has wanted: [String], lacks unwanted: [String]) throws {
        var columns: [String] = []
        try? CSV.forEachRecord(in: data) { _, fields in
            columns = fields.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            throw Stop()
        }
        for name in wanted where !columns.contains(name) {
            throw CommunityDataFileError(line: 1, reason: "the \(rawValue) layout's header is \(header): it has no \(name) column")
        }
        for name in unwanted where columns.contains(name) {
            throw CommunityDataFileError(line: 1, reason: "this file has a \(name) column: import it with --layout \(name)")
        }
    }

    private struct Stop: Error {}

    /// A CSV's rows as (line, field by column name), after a header that must name `required`
    /// and is handed to `header` first.
    private static func forEachRow(
        _ data: Data, layout: CommunityLayout, required: [String], _ body: (Int, (String) -> String) throws -> Void,
        header: ([String]) throws -> Void = { _ in }
    ) throws {
        var columns: [String] = []
        try CSV.forEachRecord(in: data) { line, fields in
            if columns.isEmpty {
                columns = fields.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
                for name in required where !columns.contains(name) {
                    throw CommunityDataFileError(line: line, reason: "the header needs a \(name) column (\(layout.header))")
                }
                try header(columns)
                return
            }
            if fields.count == 1 && fields[0].isEmpty { return }
            guard fields.count <= columns.count else {
                throw CommunityDataFileError(line: line, reason: "more fields than the header names")
            }
            try body(line) { name in
                guard let index = columns.firstIndex(of: name), index < fields.count else { return "" }
                return fields[index].trimmingCharacters(in: .whitespaces)
            }
        }
        if columns.isEmpty { throw CommunityDataFileError(line: 1, reason: "the file is empty") }
    }

    private static func date(_ text: String, line: Int) throws -> LocalDate {
        guard let date = LocalDate(text), date.year >= 1900, date.year <= 9999 else {
            throw CommunityDataFileError(line: line, reason: "date must be YYYY-MM-DD, got \"\(text.prefix(20))\"")
        }
        return date
    }

    /// A count as the files write it (`12`, `12.0`); nil when empty. Daily counts may be
    /// negative (a correction), totals not; either within ±2³¹.
    private static func count(_ text: String, name: String, line: Int, negative: Bool) throws -> Int? {
        if text.isEmpty { return nil }
        let whole = text.hasSuffix(".0") ? String(text.dropLast(2)) : text
        guard let value = Int(whole), value >= (negative ? -Int(Int32.max) : 0), value <= Int(Int32.max) else {
            throw CommunityDataFileError(
                line: line,
                reason: "\(name) must be a whole number from \(negative ? "-" : "")0 to \(Int32.max), got \"\(text.prefix(20))\"")
        }
        return value
    }

    /// Running totals by date → daily figures: each date's total less the one before (a total
    /// that goes down is a negative day, a correction); an empty total is the one before.
    private static func daily(_ totals: [(date: LocalDate, cases: Int?, deaths: Int?)]) -> [CommunityDay] {
        var last = (cases: 0, deaths: 0)
        return totals.enumerated().sorted { ($0.element.date, $0.offset) < ($1.element.date, $1.offset) }.map { _, row in
            let cases = row.cases ?? last.cases, deaths = row.deaths ?? last.deaths
            defer { last = (cases, deaths) }
            return CommunityDay(date: row.date, newCases: cases - last.cases, newDeaths: deaths - last.deaths)
        }
    }

    static func parseNational(_ data: Data, region: CommunityRegion, population: Data?) throws -> CommunityDataset {
        var totals: [(date: LocalDate, cases: Int?, deaths: Int?)] = []
        try forEachRow(data, layout: .national, required: ["date", "cases"]) { line, field in
            totals.append(
                (
                    try date(field("date"), line: line), try count(field("cases"), name: "cases", line: line, negative: false),
                    try count(field("deaths"), name: "deaths", line: line, negative: false)
                ))
        }
        var region = region
        region.population = try population.map(CommunityDataset.parsePopulation)?[region.id]
        return CommunityDataset(series: [CommunitySeries(region: region, days: daily(totals))])
    }

    static func parseGlobal(_ data: Data, population: Data?) throws -> CommunityDataset {
        struct Country {
            var region: CommunityRegion
            var rows: [(date: LocalDate, cases: Int?, deaths: Int?)] = []
        }
        var countries: [String: Country] = [:]
        var cumulative = false
        try forEachRow(data, layout: .global, required: ["date", "iso_code"]) { line, field in
            let code = field("iso_code").uppercased()
            let id: String
            if code == "OWID_WRL" {
                id = worldID
            } else if code.hasPrefix("OWID_") || code.isEmpty {
                return  // a continent, an income group, a place without an ISO code
            } else if let alpha2 = Countries.alpha2(code) {
                id = alpha2
            } else {
                throw CommunityDataFileError(
                    line: line, reason: "iso_code must be an ISO 3166-1 code such as USA or US, got \"\(code.prefix(20))\"")
            }
            let day = try date(field("date"), line: line)
            let (casesName, deathsName) = cumulative ? ("total_cases", "total_deaths") : ("new_cases", "new_deaths")
            let row = (
                day, try count(field(casesName), name: casesName, line: line, negative: !cumulative),
                try count(field(deathsName), name: deathsName, line: line, negative: !cumulative)
            )
            if countries[id] == nil {
                let location = field("location")
                let name =
                    id == worldID ? "World" : (location.isEmpty || location.count > 200 ? Countries.name(alpha2: id) ?? id : location)
                countries[id] = Country(region: CommunityRegion(id: id, name: name))
            }
            countries[id]?.rows.append(row)
            let people = field("population")
            if !people.isEmpty {
                let whole = people.hasSuffix(".0") ? String(people.dropLast(2)) : people
                guard let count = Int(whole), count > 0, count <= 20_000_000_000 else {
                    throw CommunityDataFileError(
                        line: line, reason: "population must be a whole number above 0, got \"\(people.prefix(20))\"")
                }
                countries[id]?.region.population = count
            }
        } header: { columns in
            cumulative = !columns.contains("new_cases")
            if cumulative && !columns.contains("total_cases") {
                throw CommunityDataFileError(
                    line: 1, reason: "the header needs new_cases (or total_cases) (\(CommunityLayout.global.header))")
            }
        }
        let people = try population.map(CommunityDataset.parsePopulation) ?? [:]
        return CommunityDataset(
            series: countries.values.map { country in
                var region = country.region
                if let count = people[region.id] { region.population = count }
                let days =
                    cumulative
                    ? daily(country.rows)
                    : country.rows.map { CommunityDay(date: $0.date, newCases: $0.cases ?? 0, newDeaths: $0.deaths ?? 0) }
                return CommunitySeries(region: region, days: days)
            })
    }
}

/// ISO 3166-1 codes and English short names (`Resources/countries.tsv`, from Debian's
/// iso-codes).
public enum Countries {
    private static let table: (byAlpha3: [String: String], names: [String: String]) = {
        var byAlpha3: [String: String] = [:], names: [String: String] = [:]
        for line in (embeddedWebFiles["countries.tsv"] ?? "").split(separator: "\n") where !line.hasPrefix("#") {
            let parts = line.split(separator: "\t", omittingEmptySubsequences: false)
            guard parts.count == 3 else { continue }
            byAlpha3[String(parts[0])] = String(parts[1])
            names[String(parts[1])] = String(parts[2])
        }
        return (byAlpha3, names)
    }()

    /// The alpha-2 code of an alpha-3 or alpha-2 code (upper case), or nil.
    public static func alpha2(_ code: String) -> String? {
        if code.utf8.count == 2 { return table.names[code] == nil ? nil : code }
        return table.byAlpha3[code]
    }

    /// The English short name of an alpha-2 code, or nil.
    public static func name(alpha2 code: String) -> String? { table.names[code] }
}
