import AttestPlugins
import Foundation
import Synchronization

/// Community figures from a health department that publishes weekly totals, not daily ones:
/// a CSV on the server with the header `week_ending,region,name,population,cases,deaths`
/// (one row a region and week). Each week's cases and deaths are spread over its seven days
/// (equal shares, the remainder on the week's last day), so the platform's 7-day average of a
/// week is that week's total over 7, as the department reports it.
///
/// Settings: `{"path": "/var/lib/attest/weekly.csv"}` (absolute). The file is read again when
/// its modification time changes; when it disappears or a new version does not parse, the
/// last good copy is served, marked stale, and the problem is logged.
public final class WeeklyReportProvider: CommunityDataProvider {
    public static let id = "weekly-report"

    public let path: String
    public var attribution: String? { "Weekly report (\(URL(fileURLWithPath: path).lastPathComponent))" }

    private struct Loaded {
        var modified: Date
        var dataset: CommunityDataset
    }
    private let loaded = Mutex<Loaded?>(nil)

    public init(settings: JSONValue) throws {
        guard case .string(let path)? = settings["path"], path.hasPrefix("/") else {
            throw PluginSettingsError("path is required: the absolute path of the weekly CSV, such as \"/var/lib/attest/weekly.csv\"")
        }
        self.path = path
    }

    public func series(region id: String, context: PluginContext) async throws -> CommunitySeries? {
        let (dataset, stale) = try load(context: context)
        guard var series = dataset.series(region: id) else { return nil }
        series.stale = stale
        return series
    }

    public func regions(matching search: String, limit: Int, context: PluginContext) async throws -> [CommunityRegion] {
        try load(context: context).dataset.regions(matching: search, limit: limit)
    }

    /// Reads the weekly file: each row's week spread over its seven days.
    public static func parse(_ data: Data) throws -> CommunityDataset {
        var columns: [String] = []
        var regions: [String: CommunitySeries] = [:]
        for (line, fields) in try Self.records(in: data) {
            if columns.isEmpty {
                columns = fields.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
                for required in ["week_ending", "region", "name", "cases"] where !columns.contains(required) {
                    throw WeeklyReportError(message: "line \(line): the header needs week_ending,region,name,population,cases,deaths")
                }
                continue
            }
            if fields == [""] { continue }
            func field(_ name: String) -> String {
                guard let index = columns.firstIndex(of: name), index < fields.count else { return "" }
                return fields[index].trimmingCharacters(in: .whitespaces)
            }
            guard let end = LocalDate(field("week_ending")), CommunityRegion.isValidID(field("region")), !field("name").isEmpty,
                let cases = Int(field("cases")), (0...10_000_000).contains(cases)
            else {
                throw WeeklyReportError(
                    message: "line \(line): needs a week_ending date (YYYY-MM-DD), a region id, a name and cases from 0 to 10000000")
            }
            let deaths = Int(field("deaths")).map { min(max($0, 0), 10_000_000) } ?? 0
            let population = Int(field("population")).flatMap { $0 > 0 ? $0 : nil }
            let id = field("region")
            var series =
                regions[id] ?? CommunitySeries(region: CommunityRegion(id: id, name: field("name"), population: population), days: [])
            for offset in 0..<7 {
                let last = offset == 6
                series.days.append(
                    CommunityDay(
                        date: end.adding(days: offset - 6), newCases: cases / 7 + (last ? cases % 7 : 0),
                        newDeaths: deaths / 7 + (last ? deaths % 7 : 0)))
            }
            regions[id] = series
        }
        return CommunityDataset(series: Array(regions.values))
    }

    /// RFC 4180 records with the line each starts on: fields split at commas, a field in double
    /// quotes may hold commas, line breaks and `""` (a quote). Read on Unicode scalars, never on
    /// `Character`s, where `"\r\n"` is one. The platform's own CSV reader is not part of the
    /// plugin API: a plugin reads its files as it likes.
    public static func records(in data: Data) throws -> [(line: Int, fields: [String])] {
        var records: [(line: Int, fields: [String])] = []
        var fields: [String] = [], field = String.UnicodeScalarView(), quoted = false, line = 1, start = 1
        var scalars = String(decoding: data, as: UTF8.self).unicodeScalars.makeIterator()
        var pending = scalars.next()
        while let scalar = pending {
            pending = scalars.next()
            if quoted {
                if scalar == "\"" {
                    if pending == "\"" {
                        field.append("\"")
                        pending = scalars.next()
                    } else {
                        quoted = false
                    }
                } else {
                    if scalar == "\n" { line += 1 }
                    field.append(scalar)
                }
                continue
            }
            switch scalar {
            case "\"" where field.isEmpty: quoted = true
            case ",":
                fields.append(String(field))
                field = String.UnicodeScalarView()
            case "\r" where pending == "\n": continue
            case "\n", "\r":
                fields.append(String(field))
                records.append((start, fields))
                (fields, field) = ([], String.UnicodeScalarView())
                line += 1
                start = line
            default: field.append(scalar)
            }
        }
        if quoted { throw WeeklyReportError(message: "line \(start): a quoted field is never closed") }
        if !field.isEmpty || !fields.isEmpty {
            fields.append(String(field))
            records.append((start, fields))
        }
        return records
    }

    private func load(context: PluginContext) throws -> (dataset: CommunityDataset, stale: Bool) {
        let last = loaded.withLock { $0 }
        do {
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            let modified = attributes[.modificationDate] as? Date ?? .distantPast
            if let last, last.modified == modified { return (last.dataset, false) }
            let dataset = try Self.parse(try Data(contentsOf: URL(fileURLWithPath: path)))
            loaded.withLock { $0 = Loaded(modified: modified, dataset: dataset) }
            return (dataset, false)
        } catch {
            guard let last else { throw error }
            context.logger.warning("serving the last good copy of the weekly report", metadata: ["problem": "\(error)"])
            return (last.dataset, true)
        }
    }
}

/// The weekly file cannot be used and there is no earlier copy.
public struct WeeklyReportError: Error, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}
