import AttestFoundation
import AttestPlugins
import Foundation

/// A member's journal entries and episodes of a date range, as JSON, CSV or PDF: what
/// `GET …/me/export` and a clinician's shared view answer. Times are campus-local.
///
/// Written as a stream (`Writer`): the heading first, then entries and episodes in batches as
/// they are read, so an export of any range costs the memory of one batch and one PDF page.
public enum MemberExport {
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

    /// What is known before the first entry: whose, which range, and the counts the PDF's
    /// headings show.
    public struct Heading: Sendable {
        public var campusName: String
        /// Who the export is of, as the member's campus knows them.
        public var member: String
        public var from: LocalDate
        public var to: LocalDate
        public var zone: TimeZone
        public var generatedAt: Date
        public var entryCount: Int
        public var episodes: EpisodeStore.Summary
        /// The member's health profile, only when they asked for it in the export.
        public var profile: HealthProfile?
        /// The language of the PDF's words (`WrittenLanguages.all`; English otherwise). The CSV's
        /// columns and the JSON's keys are the same in every language: software reads them.
        public var language: String

        public init(
            campusName: String, member: String, from: LocalDate, to: LocalDate, zone: TimeZone, generatedAt: Date, entryCount: Int,
            episodes: EpisodeStore.Summary, profile: HealthProfile? = nil, language: String = "en"
        ) {
            (self.campusName, self.member, self.from, self.to, self.zone, self.generatedAt, self.entryCount, self.episodes) =
                (campusName, member, from, to, zone, generatedAt, entryCount, episodes)
            (self.profile, self.language) = (profile, language)
        }
    }

    /// "born 1990 · 170 cm · 65 kg · BMI 22.5": a profile in a line, for the PDF (in its
    /// language) and the CSV (in English).
    public static func describe(_ profile: HealthProfile, words: ExportWords = .english) -> String {
        func tenth(_ value: Double) -> String {
            let rounded = (value * 10).rounded() / 10
            return String(format: rounded == rounded.rounded() ? "%.0f" : "%.1f", rounded)
        }
        var parts: [String] = []
        if let year = profile.birthYear { parts.append(words.born.filled(["year": "\(year)"])) }
        if let height = profile.heightCm { parts.append("\(tenth(height)) cm") }
        if let weight = profile.weightKg { parts.append("\(tenth(weight)) kg") }
        if let bmi = profile.bmi { parts.append("\(words.bmi) \(String(format: "%.1f", bmi))") }
        return parts.joined(separator: " · ")
    }

    /// The whole document at once, for what fits in memory (tests, small ranges).
    public static func document(_ format: Format, heading: Heading, entries: [JournalEntry], episodes: [Episode]) -> Data {
        var writer = Writer(format: format, heading: heading)
        var data = Data(writer.begin())
        data += writer.write(entries)
        data += writer.beginEpisodes()
        data += writer.write(episodes)
        data += writer.finish()
        return data
    }

    public static let csvColumns = [
        "record", "date", "title", "text", "tags", "audio", "kind", "severity", "started_at", "stopped_at", "duration_minutes",
        "auto_closed",
        "notes", "temperature_c", "uv_index", "humidity_pct", "wind_m_s", "air_quality", "weather_made_up",
    ]

    /// Writes an export in order: `begin`, entries (any number of batches), `beginEpisodes`,
    /// episodes, `finish`; each call returns the bytes it made.
    public struct Writer {
        let format: Format
        let heading: Heading
        let words: ExportWords
        var pdf: PDFWriter
        var first = true

        public init(format: Format, heading: Heading) {
            self.format = format
            self.heading = heading
            words = ExportWords.of(heading.language)
            pdf = PDFWriter(pageLabel: words.page)
        }

        public mutating func begin() -> [UInt8] {
            switch format {
            case .csv:
                var text = MemberExport.csvColumns.joined(separator: ",") + "\r\n"
                if let profile = heading.profile {
                    let cells = ["profile", "", "Health profile", MemberExport.describe(profile)] + Array(repeating: "", count: 15)
                    text += cells.map(CSV.escape).joined(separator: ",") + "\r\n"
                }
                return Array(text.utf8)
            case .json:
                var json = JSONBytes()
                json.literal("{\"campus\":")
                json.string(heading.campusName)
                json.literal(",\"from\":")
                json.string(heading.from.description)
                json.literal(",\"generatedAt\":")
                json.string(heading.generatedAt.ISO8601Format())
                json.literal(",\"member\":")
                json.string(heading.member)
                if let profile = heading.profile {
                    json.literal(",\"profile\":{\"birthYear\":")
                    if let year = profile.birthYear { json.integer(year) } else { json.literal("null") }
                    json.literal(",\"bmi\":")
                    if let bmi = profile.bmi { json.number((bmi * 10).rounded() / 10) } else { json.literal("null") }
                    json.literal(",\"heightCm\":")
                    if let height = profile.heightCm { json.number(height) } else { json.literal("null") }
                    json.literal(",\"weightKg\":")
                    if let weight = profile.weightKg { json.number(weight) } else { json.literal("null") }
                    json.literal("}")
                }
                json.literal(",\"to\":")
                json.string(heading.to.description)
                json.literal(",\"journal\":[")
                return json.bytes
            case .pdf:
                pdf.paragraph(words.title, size: 16, bold: true, after: 2)
                pdf.paragraph("\(heading.member) · \(heading.campusName)", size: 10)
                pdf.paragraph(
                    words.range.filled([
                        "from": "\(heading.from)", "to": "\(heading.to)", "made": local(heading.generatedAt),
                        "zone": heading.zone.identifier,
                    ]), size: 9, after: 2)
                if let profile = heading.profile {
                    pdf.paragraph(words.profile + MemberExport.describe(profile, words: words), size: 10, after: 2)
                }
                pdf.rule()
                let count = heading.entryCount
                pdf.paragraph(
                    (count == 1 ? words.oneEntry : words.entries).filled(["count": "\(count)"]), size: 12, bold: true, after: 6)
                if count == 0 { pdf.paragraph(words.noEntries, size: 10, after: 8) }
                return pdf.take()
            }
        }

        public mutating func write(_ entries: [JournalEntry]) -> [UInt8] {
            switch format {
            case .csv:
                var text = ""
                for entry in entries {
                    let audio = entry.audio.map { "\($0.type.rawValue) \($0.size) bytes" } ?? ""
                    let cells =
                        [
                            "journal", entry.date.description, entry.title, entry.text, entry.tags.map(\.rawValue).joined(separator: " "),
                            audio,
                        ]
                        + Array(repeating: "", count: 13)
                    text += cells.map(CSV.escape).joined(separator: ",") + "\r\n"
                }
                return Array(text.utf8)
            case .json:
                var json = JSONBytes()
                for entry in entries {
                    if !first { json.literal(",") }
                    first = false
                    json.literal("{\"audio\":")
                    if let audio = entry.audio {
                        json.literal("{\"size\":")
                        json.integer(audio.size)
                        json.literal(",\"type\":")
                        json.string(audio.type.rawValue)
                        json.literal("}")
                    } else {
                        json.literal("null")
                    }
                    json.literal(",\"date\":")
                    json.string(entry.date.description)
                    json.literal(",\"id\":")
                    json.string(entry.id.lowercasedText)
                    json.literal(",\"tags\":[")
                    for (index, tag) in entry.tags.enumerated() {
                        if index > 0 { json.literal(",") }
                        json.string(tag.rawValue)
                    }
                    json.literal("],\"text\":")
                    json.string(entry.text)
                    json.literal(",\"title\":")
                    json.string(entry.title)
                    json.literal("}")
                }
                return json.bytes
            case .pdf:
                for entry in entries {
                    pdf.need(40)
                    pdf.paragraph("\(entry.date) — \(entry.title)", size: 10.5, bold: true, after: 1)
                    var about: [String] = []
                    if !entry.tags.isEmpty { about.append(words.tags + entry.tags.map(\.rawValue).joined(separator: ", ")) }
                    if let audio = entry.audio {
                        about.append(words.recording.filled(["type": audio.type.rawValue, "size": "\(max(1, audio.size / 1024))"]))
                    }
                    if !about.isEmpty { pdf.paragraph(about.joined(separator: " · "), size: 8.5, after: 1) }
                    if !entry.text.isEmpty { pdf.paragraph(entry.text, size: 10, after: 8) } else { pdf.paragraph("", size: 4, after: 4) }
                }
                return pdf.take()
            }
        }

        public mutating func beginEpisodes() -> [UInt8] {
            first = true
            switch format {
            case .csv: return []
            case .json: return Array("],\"episodes\":[".utf8)
            case .pdf:
                pdf.rule()
                let summary = heading.episodes
                var title = words.episodes.filled(["count": "\(summary.count)"])
                if summary.closedCount > 0 {
                    title += words.totals.filled([
                        "total": duration(summary.closedSeconds), "average": duration(summary.closedSeconds / summary.closedCount),
                    ])
                }
                pdf.paragraph(title, size: 12, bold: true, after: 6)
                if summary.count == 0 {
                    pdf.paragraph(words.noEpisodes, size: 10)
                } else {
                    pdf.row(words.columns, columns: Self.columns, bold: true)
                }
                return pdf.take()
            }
        }

        static let columns = [0.0, 76, 164, 252, 310, 362]

        public mutating func write(_ episodes: [Episode]) -> [UInt8] {
            switch format {
            case .csv:
                var text = ""
                for episode in episodes {
                    let factors = (episode.context ?? EnvironmentFactors()).values.map { $0.value.map(number) ?? "" }
                    let cells =
                        [
                            "episode", LocalDate(episode.startedAt, in: heading.zone).description, "", "", "", "", episode.kind,
                            "\(episode.severity)",
                            local(episode.startedAt), episode.stoppedAt.map(local) ?? "",
                            episode.durationSeconds.map { "\($0 / 60)" } ?? "",
                            episode.autoClosed ? "true" : "false", episode.notes,
                        ] + factors + [episode.context?.madeUp == true ? "true" : ""]
                    text += cells.map(CSV.escape).joined(separator: ",") + "\r\n"
                }
                return Array(text.utf8)
            case .json:
                var json = JSONBytes()
                func factors(_ value: EnvironmentFactors?) {
                    guard let value else { return json.literal("null") }
                    json.literal("[")
                    var written = 0
                    for item in value.values {
                        guard let measured = item.value else { continue }
                        if written > 0 { json.literal(",") }
                        written += 1
                        json.literal("{\"factor\":")
                        json.string(item.name)
                        json.literal(",\"unit\":")
                        json.string(item.unit)
                        json.literal(",\"value\":")
                        json.number(measured)
                        json.literal("}")
                    }
                    json.literal("]")
                }
                for episode in episodes {
                    if !first { json.literal(",") }
                    first = false
                    json.literal("{\"autoClosed\":")
                    json.bool(episode.autoClosed)
                    json.literal(",\"baseline\":")
                    factors(episode.baseline)
                    json.literal(",\"context\":")
                    factors(episode.context)
                    json.literal(",\"contextMadeUp\":")
                    json.bool(episode.context?.madeUp == true || episode.baseline?.madeUp == true)
                    json.literal(",\"durationMinutes\":")
                    if let seconds = episode.durationSeconds { json.integer(seconds / 60) } else { json.literal("null") }
                    json.literal(",\"id\":")
                    json.string(episode.id.lowercasedText)
                    json.literal(",\"kind\":")
                    json.string(episode.kind)
                    json.literal(",\"notes\":")
                    json.string(episode.notes)
                    json.literal(",\"severity\":")
                    json.integer(episode.severity)
                    json.literal(",\"startedAt\":")
                    json.string(episode.startedAt.ISO8601Format())
                    json.literal(",\"stoppedAt\":")
                    if let stopped = episode.stoppedAt { json.string(stopped.ISO8601Format()) } else { json.literal("null") }
                    json.literal("}")
                }
                return json.bytes
            case .pdf:
                for episode in episodes {
                    let stopped = episode.stoppedAt.map(local).map { $0 + (episode.autoClosed ? words.auto : "") } ?? words.open
                    pdf.row(
                        [
                            words.kinds[episode.kind] ?? episode.kind, local(episode.startedAt), stopped, duration(episode.durationSeconds),
                            "\(episode.severity)/10",
                            episode.context?.temperature.map { "\(number($0)) °C" } ?? "",
                        ],
                        columns: Self.columns)
                    if let context = episode.context, !context.isEmpty {
                        // Every factor on a line of its own: the column holds only the temperature.
                        let note = context.madeUp == true ? words.madeUp : ""
                        pdf.paragraph(words.weather + weather(context) + note, size: 8, indent: 12, after: 1)
                    }
                    if !episode.notes.isEmpty { pdf.paragraph(episode.notes, size: 8.5, indent: 12, after: 2) }
                }
                return pdf.take()
            }
        }

        public mutating func finish() -> [UInt8] {
            switch format {
            case .csv: []
            case .json: Array("]}".utf8)
            case .pdf: pdf.finish(title: words.documentTitle.filled(["from": "\(heading.from)", "to": "\(heading.to)"]))
            }
        }

        /// `2026-11-20 14:05` in the campus's zone.
        func local(_ instant: Date) -> String {
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = heading.zone
            let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute], from: instant)
            return String(
                format: "%04d-%02d-%02d %02d:%02d", parts.year ?? 0, parts.month ?? 0, parts.day ?? 0, parts.hour ?? 0, parts.minute ?? 0)
        }

        func duration(_ seconds: Int?) -> String {
            guard let seconds else { return words.open }
            let minutes = seconds / 60
            return minutes < 60 ? "\(minutes) min" : "\(minutes / 60) h \(minutes % 60) min"
        }

        func number(_ value: Double) -> String {
            value.rounded() == value && abs(value) < 1e15 ? String(format: "%.0f", value) : String(format: "%.1f", value)
        }

        func weather(_ factors: EnvironmentFactors?) -> String {
            guard let factors else { return "" }
            return factors.values.compactMap { item in item.value.map { "\(number($0)) \(item.unit)" } }.joined(separator: ", ")
        }
    }
}

/// The words of an export's PDF in each language it is written in. `{name}`s are filled in.
public struct ExportWords: Wording {
    var title, range, profile, born, bmi, oneEntry, entries, noEntries, tags, recording: String
    var episodes, totals, noEpisodes, auto, open, weather, madeUp, documentTitle, page: String
    var columns: [String]
    /// The standard episode kinds' names (a campus's own kinds are shown as they are).
    var kinds: [String: String]

    public static let english = ExportWords(
        title: "Health journal and episodes", range: "From {from} to {to} · made {made} ({zone})", profile: "Health profile: ",
        born: "born {year}", bmi: "BMI", oneEntry: "Journal: {count} entry", entries: "Journal: {count} entries",
        noEntries: "No entries in this range.", tags: "Tags: ", recording: "Recording: {type}, {size} KB (not in this document)",
        episodes: "Episodes: {count}", totals: " · total {total} · average {average}", noEpisodes: "No episodes in this range.",
        auto: " (auto)", open: "open", weather: "Weather at the start: ",
        madeUp: " (made up by the demo's model, attest dev: not measured)",
        documentTitle: "Health journal and episodes, {from} to {to}", page: "Page {page} of ",
        columns: ["Kind", "Started", "Stopped", "Duration", "Severity", "Temperature"], kinds: [:])
    public static let spanish = ExportWords(
        title: "Diario de salud y episodios", range: "Del {from} al {to} · hecho el {made} ({zone})", profile: "Perfil de salud: ",
        born: "año de nacimiento {year}", bmi: "IMC", oneEntry: "Diario: {count} entrada", entries: "Diario: {count} entradas",
        noEntries: "Ninguna entrada en este periodo.", tags: "Etiquetas: ",
        recording: "Grabación: {type}, {size} KB (no incluida en este documento)",
        episodes: "Episodios: {count}", totals: " · total {total} · promedio {average}", noEpisodes: "Ningún episodio en este periodo.",
        auto: " (autom.)", open: "abierto", weather: "Tiempo al inicio: ",
        madeUp: " (inventado por el modelo de la demo, attest dev: no medido)",
        documentTitle: "Diario de salud y episodios, del {from} al {to}", page: "Página {page} de ",
        columns: ["Tipo", "Inicio", "Fin", "Duración", "Intensidad", "Temperatura"],
        kinds: ["headache": "Dolor de cabeza", "migraine": "Migraña"])
}
