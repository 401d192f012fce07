import AttestPlugins
import Foundation

/// A member's journal entries and episodes of a date range, as JSON, CSV or PDF: what
/// `GET …/me/export` and a clinician's shared view answer. Times are campus-local.
public struct MemberExport: Sendable {
    public enum Format: String, Sendable, CaseIterable {
        case pdf, csv, json

        public var contentType: String {
            switch self {
            case .pdf: "application/pdf"
            case .csv: "text/csv; charset=utf-8"
            case .json: "application/json"
            }
        }
    }

    public var campusName: String
    /// Who the export is of, as the member's campus knows them.
    public var member: String
    public var from: LocalDate
    public var to: LocalDate
    public var zone: TimeZone
    public var generatedAt: Date
    public var entries: [JournalEntry]
    public var episodes: [Episode]

    public init(
        campusName: String, member: String, from: LocalDate, to: LocalDate, zone: TimeZone, generatedAt: Date, entries: [JournalEntry],
        episodes: [Episode]
    ) {
        self.campusName = campusName
        self.member = member
        self.from = from
        self.to = to
        self.zone = zone
        self.generatedAt = generatedAt
        self.entries = entries
        self.episodes = episodes
    }

    public func data(_ format: Format) -> Data {
        switch format {
        case .pdf: pdf()
        case .csv: Data(csv().utf8)
        case .json: json()
        }
    }

    /// `2026-11-20 14:05` in the campus's zone.
    func local(_ instant: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute], from: instant)
        return String(
            format: "%04d-%02d-%02d %02d:%02d", parts.year ?? 0, parts.month ?? 0, parts.day ?? 0, parts.hour ?? 0, parts.minute ?? 0)
    }

    static func duration(_ seconds: Int?) -> String {
        guard let seconds else { return "open" }
        let minutes = seconds / 60
        return minutes < 60 ? "\(minutes) min" : "\(minutes / 60) h \(minutes % 60) min"
    }

    static func number(_ value: Double) -> String {
        value.rounded() == value && abs(value) < 1e15 ? String(format: "%.0f", value) : String(format: "%.1f", value)
    }

    static func weather(_ factors: EnvironmentFactors?) -> String {
        guard let factors else { return "" }
        return factors.values.compactMap { item in item.value.map { "\(number($0)) \(item.unit)" } }.joined(separator: ", ")
    }

    // MARK: JSON

    public func json() -> Data {
        func factors(_ value: EnvironmentFactors?) -> Any {
            guard let value else { return NSNull() }
            return value.values.compactMap { item in item.value.map { ["factor": item.name, "value": $0, "unit": item.unit] as [String: Any] } }
        }
        let object: [String: Any] = [
            "campus": campusName, "member": member, "from": from.description, "to": to.description,
            "generatedAt": generatedAt.ISO8601Format(),
            "journal": entries.map { entry -> [String: Any] in
                [
                    "id": entry.id.lowercasedText, "date": entry.date.description, "title": entry.title, "text": entry.text,
                    "tags": entry.tags.map(\.rawValue),
                    "audio": entry.audio.map { ["type": $0.type.rawValue, "size": $0.size] as [String: Any] } ?? NSNull(),
                ]
            },
            "episodes": episodes.map { episode -> [String: Any] in
                [
                    "id": episode.id.lowercasedText, "kind": episode.kind, "severity": episode.severity, "notes": episode.notes,
                    "startedAt": episode.startedAt.ISO8601Format(), "stoppedAt": episode.stoppedAt?.ISO8601Format() ?? NSNull(),
                    "durationMinutes": episode.durationSeconds.map { $0 / 60 } ?? NSNull(), "autoClosed": episode.autoClosed,
                    "context": factors(episode.context), "baseline": factors(episode.baseline),
                ]
            },
        ]
        return (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data("{}".utf8)
    }

    // MARK: CSV

    public static let csvColumns = [
        "record", "date", "title", "text", "tags", "audio", "kind", "severity", "started_at", "stopped_at", "duration_minutes", "auto_closed",
        "notes", "temperature_c", "uv_index", "humidity_pct", "wind_m_s", "air_quality",
    ]

    /// One row an entry or episode: `record` says which; an entry's row leaves the episode's
    /// columns empty and the other way round.
    public func csv() -> String {
        var lines = [Self.csvColumns.joined(separator: ",")]
        for entry in entries {
            let audio = entry.audio.map { "\($0.type.rawValue) \($0.size) bytes" } ?? ""
            let cells = ["journal", entry.date.description, entry.title, entry.text, entry.tags.map(\.rawValue).joined(separator: " "), audio]
                + Array(repeating: "", count: 12)
            lines.append(cells.map(CSV.escape).joined(separator: ","))
        }
        for episode in episodes {
            let factors = (episode.context ?? EnvironmentFactors()).values.map { $0.value.map(Self.number) ?? "" }
            let cells = [
                "episode", LocalDate(episode.startedAt, in: zone).description, "", "", "", "", episode.kind, "\(episode.severity)",
                local(episode.startedAt), episode.stoppedAt.map(local) ?? "", episode.durationSeconds.map { "\($0 / 60)" } ?? "",
                episode.autoClosed ? "true" : "false", episode.notes,
            ] + factors
            lines.append(cells.map(CSV.escape).joined(separator: ","))
        }
        return lines.joined(separator: "\r\n") + "\r\n"
    }

    // MARK: PDF

    public func pdf() -> Data {
        var pdf = PDFWriter()
        pdf.paragraph("Health journal and episodes", size: 16, bold: true, after: 2)
        pdf.paragraph("\(member) · \(campusName)", size: 10)
        pdf.paragraph("From \(from) to \(to) · made \(local(generatedAt)) (\(zone.identifier))", size: 9, after: 2)
        pdf.rule()
        pdf.paragraph("Journal: \(entries.count) \(entries.count == 1 ? "entry" : "entries")", size: 12, bold: true, after: 6)
        if entries.isEmpty { pdf.paragraph("No entries in this range.", size: 10, after: 8) }
        for entry in entries {
            pdf.need(40)
            pdf.paragraph("\(entry.date) — \(entry.title)", size: 10.5, bold: true, after: 1)
            var about: [String] = []
            if !entry.tags.isEmpty { about.append("Tags: " + entry.tags.map(\.rawValue).joined(separator: ", ")) }
            if let audio = entry.audio { about.append("Recording: \(audio.type.rawValue), \(max(1, audio.size / 1024)) KB (not in this document)") }
            if !about.isEmpty { pdf.paragraph(about.joined(separator: " · "), size: 8.5, after: 1) }
            if !entry.text.isEmpty { pdf.paragraph(entry.text, size: 10, after: 8) } else { pdf.paragraph("", size: 4, after: 4) }
        }
        pdf.rule()
        let closed = episodes.compactMap(\.durationSeconds)
        var heading = "Episodes: \(episodes.count)"
        if !closed.isEmpty {
            let total = closed.reduce(0) { $0 + min($1, 366 * 86_400) }
            heading += " · total \(Self.duration(total)) · average \(Self.duration(total / closed.count))"
        }
        pdf.paragraph(heading, size: 12, bold: true, after: 6)
        if episodes.isEmpty {
            pdf.paragraph("No episodes in this range.", size: 10)
        } else {
            let columns = [0.0, 82, 172, 262, 322, 366]
            pdf.row(["Kind", "Started", "Stopped", "Duration", "Severity", "Weather at the start"], columns: columns, bold: true)
            for episode in episodes {
                let stopped = episode.stoppedAt.map(local).map { $0 + (episode.autoClosed ? " (auto)" : "") } ?? "open"
                pdf.row(
                    [episode.kind, local(episode.startedAt), stopped, Self.duration(episode.durationSeconds), "\(episode.severity)/10",
                     Self.weather(episode.context)],
                    columns: columns)
                if !episode.notes.isEmpty { pdf.paragraph(episode.notes, size: 8.5, indent: 12, after: 2) }
            }
        }
        return pdf.finished(title: "Health journal and episodes, \(from) to \(to)")
    }
}
