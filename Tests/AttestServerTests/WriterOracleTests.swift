import AttestPlugins
import AttestTestSupport
import Foundation
import Testing

@testable import Journal

/// The export's writers against independent readers, over text a hostile member would write:
/// combining marks after every special character, CR LF, NUL, bidi controls, emoji sequences,
/// PDF operators. Python's `csv` module must read back exactly the fields written (a formula
/// guarded with its `'`); `qpdf --check` must find no error in the PDF and `pdftotext` every
/// entry's marker, in order.
@Suite("Export writers read back by other tools")
struct WriterOracleTests {
    static let specials = [
        ",", "\"", "\r", "\n", "\r\n", "=", "+", "-", "@", "\t", "(", ")", "\\", "<", ">", "%", "\u{0}", "'", " ", "\u{85}", "\u{2028}",
    ]
    static let marks = ["\u{301}", "\u{308}", "\u{20DD}", "\u{200D}", "\u{FE0F}"]
    static let others = [
        "a", "é", "頭痛", "Ω", "\u{202E}", "\u{2066}", "\u{200F}", "👩‍👩‍👧", "🏳️‍🌈", "👍🏽", "VERIFIED BY CAMPUS HEALTH",
        ") Tj ET BT /F2 30 Tf 100 700 Td (X", "> Tj ET", "endstream endobj", "%%EOF", "1", "-1.5", "+3e2", "=1+1", "@SUM(A1)",
    ]

    /// 0 to 14 pieces; a combining mark after about half the special characters.
    static func hostile(using g: inout SeededGenerator) -> String {
        var text = ""
        for _ in 0..<Int.random(in: 0...14, using: &g) {
            if g.chance(0.55) {
                text += g.pick(specials)
                if g.chance(0.5) { text += g.pick(marks) }
            } else {
                text += g.pick(others)
            }
        }
        return text
    }

    /// What a reader must find for `field`: the field, behind `'` when a spreadsheet would run it.
    static func expectedCell(_ field: String) -> String {
        guard let first = field.unicodeScalars.first, "=+-@\t\r".unicodeScalars.contains(first) else { return field }
        let number = field.range(of: #"\A[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?\z"#, options: .regularExpression) != nil
        return number ? field : "'" + field
    }

    static func heading(entries: Int) -> MemberExport.Heading {
        MemberExport.Heading(
            campusName: "North (\u{301}", member: "m\u{301}) <m@example.edu>", from: LocalDate("2026-11-01")!, to: LocalDate("2026-11-20")!,
            zone: TimeZone(identifier: "America/New_York")!, generatedAt: Date(timeIntervalSince1970: 1_795_000_000), entryCount: entries,
            episodes: .init(count: 0, closedCount: 0, closedSeconds: 0))
    }

    static func entries(_ count: Int, title: (Int, inout SeededGenerator) -> String, text: (Int, inout SeededGenerator) -> String)
        -> [JournalEntry]
    {
        var g = SeededGenerator(seed: Fuzz.seed)
        return (0..<count).map { index in
            JournalEntry(
                id: UUID(), date: LocalDate("2026-11-10")!, title: title(index, &g), text: text(index, &g), tags: [], audio: nil,
                createdAt: Date(), updatedAt: Date())
        }
    }

    static func write(_ data: Data, suffix: String) throws -> URL {
        let file = FileManager.default.temporaryDirectory.appending(path: "writer-\(UUID().uuidString.prefix(8)).\(suffix)")
        try data.write(to: file)
        return file
    }

    /// `csv` as Python's csv module reads it: the oracle for every CSV the project writes.
    static func pythonCSV(_ csv: Data) async throws -> [[String]] {
        let file = try write(csv, suffix: "csv")
        defer { try? FileManager.default.removeItem(at: file) }
        let read = try await ChildProcess.run([
            "/usr/bin/env", "python3", "-c",
            "import csv, json, sys; print(json.dumps(list(csv.reader(open(sys.argv[1], newline='', encoding='utf-8')))))", file.path,
        ])
        #expect(read.status == 0, "python3: \(read.stderr)")
        return try #require(try JSONSerialization.jsonObject(with: Data(read.stdout.utf8)) as? [[String]])
    }

    @Test func pythonsCSVReaderReadsBackEveryFieldWritten() async throws {
        let entries = Self.entries(Fuzz.cases(400), title: { _, g in Self.hostile(using: &g) }, text: { _, g in Self.hostile(using: &g) })
        // Every special character first, with and without a mark after it.
        var fixed: [String] = ["b\r\n=cmd|' /C calc'!A0", "=\u{301}1+2"]
        for special in Self.specials {
            let marked: String = special + "\u{301}"
            fixed += [special, marked, "x" + marked + "y", marked + special]
        }
        let all =
            entries
            + fixed.map {
                JournalEntry(
                    id: UUID(), date: LocalDate("2026-11-10")!, title: $0, text: $0, tags: [], audio: nil, createdAt: Date(),
                    updatedAt: Date())
            }
        let csv = MemberExport.document(.csv, heading: Self.heading(entries: all.count), entries: all, episodes: [])
        let rows = try await Self.pythonCSV(csv)
        #expect(rows.first == MemberExport.csvColumns)
        #expect(rows.count == all.count + 1)
        for (index, entry) in all.enumerated() where index + 1 < rows.count {
            let row = rows[index + 1]
            #expect(row.count == MemberExport.csvColumns.count, "row \(index + 1) has \(row.count) fields")
            guard row.count > 3 else { continue }
            #expect(
                row[2] == Self.expectedCell(entry.title),
                "title \(index): \(entry.title.unicodeScalars.map { String($0.value, radix: 16) })")
            #expect(
                row[3] == Self.expectedCell(entry.text), "text \(index): \(entry.text.unicodeScalars.map { String($0.value, radix: 16) })")
        }
    }

    @Test func qpdfFindsNoErrorAndPdftotextEveryEntry() async throws {
        let entries = Self.entries(
            Fuzz.cases(250), title: { index, g in "MARK\(index)\n" + Self.hostile(using: &g) },
            text: { index, g in Self.hostile(using: &g) + "\nEND\(index)\n" + Self.hostile(using: &g) })
        let pdf = MemberExport.document(.pdf, heading: Self.heading(entries: entries.count), entries: entries, episodes: [])
        let file = try Self.write(pdf, suffix: "pdf")
        defer { try? FileManager.default.removeItem(at: file) }
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/qpdf") else {
            throw TestEnvironmentError("qpdf is missing: scripts/install-browser-deps installs Debian's qpdf")
        }
        let check = try await ChildProcess.run(["/usr/bin/qpdf", "--check", file.path])
        #expect(check.status == 0, "qpdf --check: \(check.stdout) \(check.stderr)")
        #expect(check.stdout.contains("No syntax or stream encoding errors found"), "\(check.stdout)")
        let text = try await ChildProcess.run(["/usr/bin/pdftotext", file.path, "-"])
        #expect(text.status == 0 && text.stderr.isEmpty, "pdftotext: \(text.stderr)")
        var position = text.stdout.startIndex
        for index in entries.indices {
            for marker in ["MARK\(index)", "END\(index)"] {
                guard let found = text.stdout.range(of: marker + "\n", range: position..<text.stdout.endIndex) else {
                    Issue.record("pdftotext does not find \(marker) after the entries before it")
                    return
                }
                position = found.upperBound
            }
        }
        let pages = text.stdout.components(separatedBy: "\u{0C}").count - 1
        #expect(pages > 5 && text.stdout.contains("Page \(pages) of \(pages)"), "\(pages) pages")
    }

    /// The streamed document is the document written at once, whatever the batches.
    @Test func aDocumentWrittenInBatchesIsTheSameAsAtOnce() throws {
        let entries = Self.entries(57, title: { index, _ in "entry \(index)" }, text: { _, g in Self.hostile(using: &g) })
        for format in MemberExport.Format.allCases {
            let whole = MemberExport.document(format, heading: Self.heading(entries: entries.count), entries: entries, episodes: [])
            var writer = MemberExport.Writer(format: format, heading: Self.heading(entries: entries.count))
            var streamed = Data(writer.begin())
            for start in stride(from: 0, to: entries.count, by: 10) {
                streamed += writer.write(Array(entries[start..<min(start + 10, entries.count)]))
            }
            streamed += writer.beginEpisodes()
            streamed += writer.finish()
            #expect(streamed == whole, "\(format)")
            if format == .json { #expect((try? JSONSerialization.jsonObject(with: streamed)) != nil) }
        }
    }
}
