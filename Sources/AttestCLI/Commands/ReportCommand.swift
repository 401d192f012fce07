import ArgumentParser
import AttestFoundation
import AttestPlugins
import AttestPostgres
import Foundation
import Surveys
import Tenancy

struct ReportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report",
        abstract: "Export a date range: daily aggregates, or with --identifiable every attestation with who (audited).",
        discussion: """
            Aggregates (the default) have one row per campus-local day: active members, submitted, on time, \
            late, missing, each colour, compliance, then one column per answer counted (question:answer). \
            --identifiable lists each attestation with the member's email and name, colour, reason and \
            times (never answers) and writes an audit entry with the range.
            """)

    enum Format: String, ExpressibleByArgument, CaseIterable { case csv, json }

    @Argument var campus: String
    @Option(help: "First campus-local date, YYYY-MM-DD.") var from: String
    @Option(help: "Last campus-local date, YYYY-MM-DD (at most 366 days in all).") var to: String
    @Option(help: "csv or json.") var format: Format = .csv
    @Option(help: "Write to FILE instead of standard output.") var out: String?
    @Flag(help: "List attestations with who they are (an audited read of identifiable data).") var identifiable = false
    @Option(help: .hidden) var pageSize = 5_000  // rows read at a time for --identifiable (tests use small pages)
    @OptionGroup var database: DatabaseOptions
    @OptionGroup var logging: LoggingOptions

    func run() async throws {
        let range: DateRange
        do { range = try DateRange.parse(from: from, to: to, name: { "--\($0)" }) } catch .invalidRange(let problems) {
            throw CLIError(problems.map { "--\($0.field) \($0.message)" }.joined(separator: "; "))
        } catch {
            throw error
        }
        guard pageSize > 0 else { throw CLIError("--page-size must be at least 1") }
        let output = try ReportOutput(path: out, ownerOnly: identifiable)
        do {
            try await TenantContext.run(database: database, logging: logging) { context in
                let found = try await context.campuses.require(slug: campus)
                let statistics = StatisticsStore(client: context.client)
                guard identifiable else {
                    return try output.write(Self.render(days: try await statistics.days(campus: found.id, range: range), format: format))
                }
                // A page at a time, as the rows are read: any range in bounded memory.
                try output.write(format == .csv ? "date,email,name,color,reason,on_time,submitted_at\n" : #"{"attestations":["#)
                var first = true
                _ = try await statistics.exportIdentified(campus: found.id, range: range, actor: TenantContext.actor, pageSize: pageSize) {
                    page in
                    try output.write(Self.render(identified: page, format: format, first: first))
                    first = false
                }
                try output.write(format == .csv ? "" : "]}\n")
            }
            try output.finish()
        } catch {
            output.abandon()
            throw error
        }
    }

    static func render(days: [DayFigures], format: Format) -> String {
        switch format {
        case .csv:
            return AggregateReport.csv(days)
        case .json:
            let objects: [[String: Any]] = days.map { day in
                [
                    "date": day.date.description, "activeMembers": day.active, "submitted": day.submitted, "onTime": day.onTime,
                    "late": day.late, "missing": day.missing, "colors": ["green": day.green, "yellow": day.yellow, "red": day.red],
                    "answers": day.answers, "complianceRate": day.complianceRate.map { $0 as Any } ?? NSNull(),
                ]
            }
            return jsonText(["days": objects])
        }
    }

    /// One page of an identifiable report: CSV lines, or JSON objects continuing the
    /// `attestations` list (`first` says whether the list is still empty).
    static func render(identified rows: [StatisticsStore.IdentifiedAttestation], format: Format, first: Bool) -> String {
        var text = ""
        for (index, row) in rows.enumerated() {
            let submittedAt = row.submittedAt.ISO8601Format()
            switch format {
            case .csv:
                text += [row.date.description, row.email, row.name, row.color.rawValue, row.reason, "\(row.onTime)", submittedAt]
                    .map(CSV.escape).joined(separator: ",")
                text += "\n"
            case .json:
                // The keys in sorted order, as the aggregate report writes them.
                if !(first && index == 0) { text += "," }
                text += #"{"color":"#
                JSONText.appendString(row.color.rawValue, to: &text)
                text += #","date":"#
                JSONText.appendString(row.date.description, to: &text)
                text += #","email":"#
                JSONText.appendString(row.email, to: &text)
                text += #","name":"#
                JSONText.appendString(row.name, to: &text)
                text += #","onTime":\#(row.onTime),"reason":"#
                JSONText.appendString(row.reason, to: &text)
                text += #","submittedAt":"#
                JSONText.appendString(submittedAt, to: &text)
                text += "}"
            }
        }
        return text
    }

    static func jsonText(_ value: Any) -> String {
        guard let data = try? JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .withoutEscapingSlashes]) else {
            return "{}\n"
        }
        return String(decoding: data, as: UTF8.self) + "\n"
    }
}

/// Where a report goes: standard output as it is made, or `--out FILE` through `FILE.partial`,
/// renamed to `FILE` only when the report is complete (so a failed export leaves no file that
/// looks whole, and an older `FILE` stays until the new one replaces it). An identifiable
/// report's file is readable by its owner only (0600).
final class ReportOutput {
    private let path: String?
    private let handle: FileHandle
    /// Where the report is written until it is complete.
    private var partial: String? { path.map { $0 + ".partial" } }

    init(path: String?, ownerOnly: Bool) throws {
        self.path = path
        guard let path else {
            handle = .standardOutput
            return
        }
        // A directory is refused before anything is written (its `.partial` would land beside it).
        var status = stat()
        if stat(path, &status) == 0, status.st_mode & S_IFMT == S_IFDIR {
            throw CLIError(
                "--out \(path) is a directory: give the path of a file, such as \(path.hasSuffix("/") ? path : path + "/")report.csv")
        }
        let partial = path + ".partial"
        let descriptor = open(partial, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, ownerOnly ? 0o600 : 0o644)
        // An identifiable report's file is its owner's alone, even where a `.partial` was left before.
        guard descriptor >= 0, !ownerOnly || fchmod(descriptor, 0o600) == 0 else {
            let reason = String(cString: strerror(errno))
            if descriptor >= 0 { close(descriptor) }
            throw CLIError("cannot write \(partial): \(reason); check the directory exists and is writable")
        }
        handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
    }

    func write(_ text: String) throws {
        guard !text.isEmpty else { return }
        do { try handle.write(contentsOf: Data(text.utf8)) } catch {
            throw CLIError("cannot write \(partial ?? "to standard output"): \(error.localizedDescription); check there is space left")
        }
    }

    /// Renames `FILE.partial` to `FILE` and says so on standard error.
    func finish() throws {
        guard let path, let partial else { return }
        try? handle.close()
        guard rename(partial, path) == 0 else {
            throw CLIError("cannot move \(partial) to \(path): \(String(cString: strerror(errno))); the report is complete in \(partial)")
        }
        FileHandle.standardError.write(Data("Wrote \(path).\n".utf8))
    }

    /// Removes `FILE.partial` after a failure.
    func abandon() {
        guard let partial else { return }
        try? handle.close()
        try? FileManager.default.removeItem(atPath: partial)
    }
}
