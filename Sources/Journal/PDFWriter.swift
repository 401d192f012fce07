import Foundation

/// A small PDF 1.4 writer: US Letter pages of text in Helvetica (regular and bold), lines
/// wrapped by the font's widths, rules, and "Page N of M" at the foot of each. Text is
/// written in WinAnsiEncoding, which the standard fonts carry: characters beyond it (most
/// scripts other than Latin) are shown as `?`. The export's CSV and JSON carry every
/// character; the PDF is for printing and handing over.
public struct PDFWriter {
    public static let pageWidth = 612.0, pageHeight = 792.0
    static let margin = 56.0
    static let footer = 36.0

    private var pages: [String] = []
    private var current = ""
    private var y = pageHeight - margin

    public init() {}

    /// The usable width of a line.
    public static var lineWidth: Double { pageWidth - 2 * margin }

    /// Starts a new page when fewer than `height` points are left.
    public mutating func need(_ height: Double) {
        if y - height < Self.margin + Self.footer { newPage() }
    }

    public mutating func newPage() {
        pages.append(current)
        current = ""
        y = Self.pageHeight - Self.margin
    }

    /// A paragraph, wrapped to the line width (`indent` points in), then `after` points of space.
    public mutating func paragraph(_ text: String, size: Double = 10, bold: Bool = false, indent: Double = 0, after: Double = 4) {
        let leading = size * 1.3
        for line in Self.wrap(text, width: Self.lineWidth - indent, size: size) {
            need(leading)
            y -= leading
            place(line, x: Self.margin + indent, y: y, size: size, bold: bold)
        }
        y -= after
    }

    /// One line of cells at fixed x offsets (from the margin), each cut to fit its column.
    public mutating func row(_ cells: [String], columns: [Double], size: Double = 9, bold: Bool = false) {
        let leading = size * 1.35
        need(leading)
        y -= leading
        for (index, cell) in cells.enumerated() where index < columns.count {
            let end = index + 1 < columns.count ? columns[index + 1] - 6 : Self.lineWidth
            place(Self.fit(cell, width: end - columns[index], size: size), x: Self.margin + columns[index], y: y, size: size, bold: bold)
        }
    }

    /// A thin horizontal rule across the page.
    public mutating func rule(after: Double = 6) {
        need(4)
        y -= 3
        current += String(format: "0.6 G 0.5 w %.1f %.1f m %.1f %.1f l S 0 G\n", Self.margin, y, Self.pageWidth - Self.margin, y)
        y -= after
    }

    private mutating func place(_ text: String, x: Double, y: Double, size: Double, bold: Bool) {
        current += "BT /\(bold ? "F2" : "F1") " + String(format: "%.1f Tf %.1f %.1f Td (", size, x, y) + Self.escape(text) + ") Tj ET\n"
    }

    /// The document's bytes.
    public func finished(title: String) -> Data {
        var pages = self.pages
        if !current.isEmpty || pages.isEmpty { pages.append(current) }
        let count = pages.count
        var objects: [Data] = []
        // 1 catalog, 2 pages, 3 and 4 fonts, 5 info, then each page and its contents.
        let kids = (0..<count).map { "\(6 + 2 * $0) 0 R" }.joined(separator: " ")
        objects.append(Data("<< /Type /Catalog /Pages 2 0 R >>".utf8))
        objects.append(Data("<< /Type /Pages /Kids [\(kids)] /Count \(count) >>".utf8))
        objects.append(Data("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>".utf8))
        objects.append(Data("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica-Bold /Encoding /WinAnsiEncoding >>".utf8))
        objects.append(Self.winAnsi("<< /Title (\(Self.escape(title))) /Producer (Campus Attest) >>"))
        for (index, content) in pages.enumerated() {
            let foot = "Page \(index + 1) of \(count)"
            let footWidth = Self.width(foot, size: 8)
            let stream = Self.winAnsi(
                content + String(format: "BT /F1 8 Tf %.1f %.1f Td (", (Self.pageWidth - footWidth) / 2, Self.margin - 20) + foot + ") Tj ET\n")
            objects.append(
                Data(
                    ("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 \(Int(Self.pageWidth)) \(Int(Self.pageHeight))] "
                        + "/Resources << /Font << /F1 3 0 R /F2 4 0 R >> >> /Contents \(7 + 2 * index) 0 R >>").utf8))
            objects.append(Data("<< /Length \(stream.count) >>\nstream\n".utf8) + stream + Data("\nendstream".utf8))
        }
        var output = Data("%PDF-1.4\n%".utf8) + Data([0xE2, 0xE3, 0xCF, 0xD3, 0x0A])
        var offsets: [Int] = []
        for (index, object) in objects.enumerated() {
            offsets.append(output.count)
            output += Data("\(index + 1) 0 obj\n".utf8)
            output += object
            output += Data("\nendobj\n".utf8)
        }
        let xref = output.count
        var table = "xref\n0 \(objects.count + 1)\n0000000000 65535 f \n"
        for offset in offsets { table += String(format: "%010ld 00000 n \n", offset) }
        table += "trailer\n<< /Size \(objects.count + 1) /Root 1 0 R /Info 5 0 R >>\nstartxref\n\(xref)\n%EOF\n"
        output += Data(table.utf8)
        return output
    }

    // MARK: Text

    /// Text in WinAnsiEncoding: ASCII and Latin-1 as themselves, typographic quotes, dashes,
    /// bullet, ellipsis and euro at their code points, anything else as `?`; control
    /// characters as spaces.
    static func winAnsi(_ text: String) -> Data {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0x0A: bytes.append(0x0A)
            case 0x00..<0x20, 0x7F: bytes.append(0x20)
            case 0x20..<0x7F, 0xA0...0xFF: bytes.append(UInt8(truncatingIfNeeded: scalar.value))
            case 0x2018: bytes.append(0x91)
            case 0x2019: bytes.append(0x92)
            case 0x201C: bytes.append(0x93)
            case 0x201D: bytes.append(0x94)
            case 0x2022: bytes.append(0x95)
            case 0x2013: bytes.append(0x96)
            case 0x2014: bytes.append(0x97)
            case 0x2026: bytes.append(0x85)
            case 0x20AC: bytes.append(0x80)
            default: bytes.append(0x3F)
            }
        }
        return Data(bytes)
    }

    /// A PDF literal string's inside: `\`, `(` and `)` escaped.
    static func escape(_ text: String) -> String {
        var result = ""
        for character in text {
            switch character {
            case "\\", "(", ")": result += "\\" + String(character)
            case "\n", "\r", "\t": result += " "
            default: result.append(character)
            }
        }
        return result
    }

    /// Helvetica's advance widths (thousandths of the size) for ASCII 32…126; 556 otherwise.
    static let widths: [Int] = [
        278, 278, 355, 556, 556, 889, 667, 191, 333, 333, 389, 584, 278, 333, 278, 278, 556, 556, 556, 556, 556, 556, 556, 556, 556, 556,
        278, 278, 584, 584, 584, 556, 1015, 667, 667, 722, 722, 667, 611, 778, 722, 278, 500, 667, 556, 833, 722, 778, 667, 778, 722, 667,
        611, 722, 667, 944, 667, 667, 611, 278, 278, 278, 469, 556, 333, 556, 556, 500, 556, 556, 278, 556, 556, 222, 222, 500, 222, 833,
        556, 556, 556, 556, 333, 500, 278, 556, 500, 722, 500, 500, 500, 334, 260, 334, 584,
    ]

    /// The width of `text` in points at `size` (bold is taken as regular: a little narrower).
    static func width(_ text: some StringProtocol, size: Double) -> Double {
        var total = 0
        for scalar in text.unicodeScalars {
            let value = Int(scalar.value)
            let index = value - 32
            total += index >= 0 && index < widths.count ? widths[index] : 556
        }
        return Double(total) * size / 1000
    }

    /// Lines of at most `width` points: words kept whole where they fit, a word longer than a
    /// line cut; the text's own line breaks kept.
    static func wrap(_ text: String, width: Double, size: Double) -> [String] {
        var lines: [String] = []
        for paragraph in text.split(separator: "\n", omittingEmptySubsequences: false) {
            var line = ""
            for word in paragraph.split(separator: " ", omittingEmptySubsequences: true) {
                let candidate = line.isEmpty ? String(word) : line + " " + word
                if Self.width(candidate, size: size) <= width {
                    line = candidate
                    continue
                }
                if !line.isEmpty { lines.append(line) }
                var rest = String(word)
                while Self.width(rest, size: size) > width, rest.count > 1 {
                    let piece = fit(rest, width: width, size: size, ellipsis: false)
                    lines.append(piece)
                    rest = String(rest.dropFirst(max(1, piece.count)))
                }
                line = rest
            }
            lines.append(line)
        }
        return lines
    }

    /// The longest start of `text` that fits `width`, with `…` when cut (and `ellipsis`).
    static func fit(_ text: String, width: Double, size: Double, ellipsis: Bool = true) -> String {
        if Self.width(text, size: size) <= width { return text }
        var result = ""
        let mark = ellipsis ? "…" : ""
        for character in text {
            if Self.width(result + String(character) + mark, size: size) > width { break }
            result.append(character)
        }
        return result + mark
    }
}
