import AttestFoundation
import Foundation

/// A small streaming PDF 1.4 writer: US Letter pages of text in Helvetica (regular and
/// bold), lines wrapped by the font's widths, rules, and "Page N of M" at the foot of each
/// (in the document's language: `pageLabel`).
///
/// Each page is written out as soon as it is full (`take()` hands over the bytes made so far),
/// so a document of any length costs the memory of one page. The catalog, the page tree and
/// the total page count come at the end: every page's footer draws the count from one form
/// XObject written last.
///
/// Every string is written as a hex string (`<48656C6C6F>`) of WinAnsiEncoding bytes: nothing
/// in a member's text can close it or reach the content stream's syntax, whatever its
/// scalars. Characters beyond WinAnsi (most scripts other than Latin, combining marks) are
/// shown as `?`; control characters as spaces. The export's CSV and JSON carry every
/// character; the PDF is for printing and handing over.
public struct PDFWriter {
    public static let pageWidth = 612.0, pageHeight = 792.0
    static let margin = 56.0
    static let footer = 36.0

    /// Objects 1 to 6 are written last: catalog, page tree, the two fonts, the document
    /// information, the page count's form; pages and their contents follow from 7.
    static let catalog = 1, pageTree = 2, regular = 3, bold = 4, info = 5, pageCount = 6

    /// Bytes made and not yet taken.
    private var output: [UInt8] = []
    /// Bytes taken before `output` began.
    private var taken = 0
    /// Each object's offset in the file, by number (0 unused).
    private var offsets: [Int] = Array(repeating: 0, count: 7)
    private var pages: [Int] = []
    private var current: [UInt8] = []
    private var y = pageHeight - margin
    /// What comes before the page count at each page's foot, `{page}` the page's number.
    let pageLabel: String

    public init(pageLabel: String = "Page {page} of ") {
        self.pageLabel = pageLabel
        output = Array("%PDF-1.4\n%".utf8) + [0xE2, 0xE3, 0xCF, 0xD3, 0x0A]
    }

    /// The usable width of a line.
    public static var lineWidth: Double { pageWidth - 2 * margin }

    /// The bytes made since the last call: whole objects, in file order.
    public mutating func take() -> [UInt8] {
        defer {
            taken += output.count
            output = []
        }
        return output
    }

    /// Starts a new page when fewer than `height` points are left.
    public mutating func need(_ height: Double) {
        if y - height < Self.margin + Self.footer { newPage() }
    }

    /// Writes out the page so far and starts another.
    public mutating func newPage() {
        let number = pages.count + 1
        let page = offsets.count, contents = page + 1
        let label = pageLabel.filled(["page": "\(number)"])
        let labelWidth = Self.width(label, size: 8)
        let x = (Self.pageWidth - labelWidth - Self.width("00", size: 8)) / 2
        var stream = current
        stream += Array(String(format: "BT /F1 8 Tf %.1f %.1f Td ", x, Self.margin - 20).utf8)
        Self.appendHexString(Self.winAnsi(label), to: &stream)
        stream += Array(String(format: " Tj ET q 1 0 0 1 %.1f %.1f cm /Pg Do Q\n", x + labelWidth, Self.margin - 20).utf8)
        offsets.append(0)
        offsets.append(0)
        object(
            page,
            Array(
                ("<< /Type /Page /Parent \(Self.pageTree) 0 R /MediaBox [0 0 \(Int(Self.pageWidth)) \(Int(Self.pageHeight))] "
                    + "/Resources << /Font << /F1 \(Self.regular) 0 R /F2 \(Self.bold) 0 R >> /XObject << /Pg \(Self.pageCount) 0 R >> >> "
                    + "/Contents \(contents) 0 R >>").utf8))
        object(contents, Self.stream(stream))
        pages.append(page)
        current = []
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
        current += Array(
            String(format: "0.6 G 0.5 w %.1f %.1f m %.1f %.1f l S 0 G\n", Self.margin, y, Self.pageWidth - Self.margin, y).utf8)
        y -= after
    }

    /// A square grid of dark and light modules (a QR code's), `side` points wide, centred on
    /// the line, with `after` points of space below: each dark module a filled square.
    public mutating func squares(_ rows: [[Bool]], side: Double, after: Double = 8) {
        guard !rows.isEmpty else { return }
        let module = side / Double(rows.count)
        need(side)
        let left = (Self.pageWidth - side) / 2, top = y
        current += Array("0 g\n".utf8)
        for (row, modules) in rows.enumerated() {
            for (column, dark) in modules.enumerated() where dark {
                current += Array(
                    String(
                        format: "%.2f %.2f %.2f %.2f re f\n", left + Double(column) * module, top - Double(row + 1) * module, module, module
                    ).utf8)
            }
        }
        y -= side + after
    }

    /// A line of text centred on the page.
    public mutating func centered(_ text: String, size: Double, bold: Bool = false, after: Double = 4) {
        let leading = size * 1.3
        for line in Self.wrap(text, width: Self.lineWidth, size: size) {
            need(leading)
            y -= leading
            place(line, x: (Self.pageWidth - Self.width(line, size: size)) / 2, y: y, size: size, bold: bold)
        }
        y -= after
    }

    private mutating func place(_ text: String, x: Double, y: Double, size: Double, bold: Bool) {
        current += Array(("BT /\(bold ? "F2" : "F1") " + String(format: "%.1f Tf %.1f %.1f Td ", size, x, y)).utf8)
        Self.appendHexString(Self.winAnsi(text), to: &current)
        current += Array(" Tj ET\n".utf8)
    }

    /// The rest of the document: the last page, the objects every page refers to, the
    /// cross-reference table and the trailer. Nothing may be added after.
    public mutating func finish(title: String) -> [UInt8] {
        if !current.isEmpty || pages.isEmpty { newPage() }
        var count = Array("BT /F1 8 Tf 0 0 Td ".utf8)
        Self.appendHexString(Array("\(pages.count)".utf8), to: &count)
        count += Array(" Tj ET".utf8)
        object(
            Self.pageCount,
            Array(
                "<< /Type /XObject /Subtype /Form /BBox [0 0 60 12] /Resources << /Font << /F1 \(Self.regular) 0 R >> >> /Length \(count.count) >>\nstream\n"
                    .utf8)
                + count + Array("\nendstream".utf8))
        object(Self.catalog, Array("<< /Type /Catalog /Pages \(Self.pageTree) 0 R >>".utf8))
        object(
            Self.pageTree,
            Array("<< /Type /Pages /Kids [\(pages.map { "\($0) 0 R" }.joined(separator: " "))] /Count \(pages.count) >>".utf8))
        object(Self.regular, Array("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>".utf8))
        object(Self.bold, Array("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica-Bold /Encoding /WinAnsiEncoding >>".utf8))
        var information = Array("<< /Title ".utf8)
        // A text string: UTF-16BE after its byte order mark.
        Self.appendHexString(
            [0xFE, 0xFF] + title.utf16.flatMap { [UInt8(truncatingIfNeeded: $0 >> 8), UInt8(truncatingIfNeeded: $0)] }, to: &information)
        information += Array(" /Producer (Campus Attest) >>".utf8)
        object(Self.info, information)
        let xref = taken + output.count
        var table = "xref\n0 \(offsets.count)\n0000000000 65535 f \n"
        for offset in offsets.dropFirst() { table += String(format: "%010ld 00000 n \n", offset) }
        table += "trailer\n<< /Size \(offsets.count) /Root \(Self.catalog) 0 R /Info \(Self.info) 0 R >>\nstartxref\n\(xref)\n%EOF\n"
        output += Array(table.utf8)
        return take()
    }

    private mutating func object(_ number: Int, _ body: [UInt8]) {
        offsets[number] = taken + output.count
        output += Array("\(number) 0 obj\n".utf8)
        output += body
        output += Array("\nendobj\n".utf8)
    }

    private static func stream(_ content: [UInt8]) -> [UInt8] {
        Array("<< /Length \(content.count) >>\nstream\n".utf8) + content + Array("\nendstream".utf8)
    }

    // MARK: Text

    /// `<…>`: each byte as two hex digits. No byte can end it early.
    static func appendHexString(_ bytes: [UInt8], to output: inout [UInt8]) {
        let digits = Array("0123456789ABCDEF".utf8)
        output.reserveCapacity(output.count + 2 * bytes.count + 2)
        output.append(UInt8(ascii: "<"))
        for byte in bytes {
            output.append(digits[Int(byte >> 4)])
            output.append(digits[Int(byte & 0x0F)])
        }
        output.append(UInt8(ascii: ">"))
    }

    /// Text in WinAnsiEncoding, scalar by scalar: ASCII and Latin-1 as themselves, typographic
    /// quotes, dashes, bullet, ellipsis and euro at their code points, anything else as `?`;
    /// control characters as spaces.
    static func winAnsi(_ text: String) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar.value {
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
        return bytes
    }

    /// Helvetica's advance widths (thousandths of the size) for ASCII 32…126; 556 otherwise.
    static let widths: [Int] = [
        278, 278, 355, 556, 556, 889, 667, 191, 333, 333, 389, 584, 278, 333, 278, 278, 556, 556, 556, 556, 556, 556, 556, 556, 556, 556,
        278, 278, 584, 584, 584, 556, 1015, 667, 667, 722, 722, 667, 611, 778, 722, 278, 500, 667, 556, 833, 722, 778, 667, 778, 722, 667,
        611, 722, 667, 944, 667, 667, 611, 278, 278, 278, 469, 556, 333, 556, 556, 500, 556, 556, 278, 556, 556, 222, 222, 500, 222, 833,
        556, 556, 556, 556, 333, 500, 278, 556, 500, 722, 500, 500, 500, 334, 260, 334, 584,
    ]

    /// The width of `text` in thousandths of the size.
    static func units(_ text: some StringProtocol) -> Int {
        var total = 0
        for scalar in text.unicodeScalars {
            let index = Int(scalar.value) - 32
            total += index >= 0 && index < widths.count ? widths[index] : 556
        }
        return total
    }

    /// The width of `text` in points at `size` (bold is taken as regular: a little narrower).
    static func width(_ text: some StringProtocol, size: Double) -> Double {
        Double(units(text)) * size / 1000
    }

    /// The text's lines, broken at every line break by scalars (CR LF, CR, LF, NEL, U+2028,
    /// U+2029), whatever marks follow them.
    static func lines(_ text: String) -> [String] {
        var lines: [String] = []
        var line = String.UnicodeScalarView()
        var afterCR = false
        for scalar in text.unicodeScalars {
            if scalar == "\n", afterCR {
                afterCR = false
                continue
            }
            afterCR = scalar == "\r"
            if scalar == "\r" || scalar == "\n" || scalar.value == 0x85 || scalar.value == 0x2028 || scalar.value == 0x2029 {
                lines.append(String(line))
                line = String.UnicodeScalarView()
            } else {
                line.append(scalar)
            }
        }
        lines.append(String(line))
        return lines
    }

    /// Lines of at most `width` points: words kept whole where they fit, a word longer than a
    /// line cut; the text's own line breaks kept. Linear in the text: each character's width
    /// is counted once (a 10,000-character word was once measured again for every character).
    static func wrap(_ text: String, width: Double, size: Double) -> [String] {
        let limit = width * 1000 / size
        let space = units(" ")
        var lines: [String] = []
        for paragraph in Self.lines(text) {
            var line = "", lineUnits = 0
            for word in paragraph.split(separator: " ", omittingEmptySubsequences: true) {
                let wordUnits = units(word)
                if line.isEmpty ? Double(wordUnits) <= limit : Double(lineUnits + space + wordUnits) <= limit {
                    if !line.isEmpty {
                        line += " "
                        lineUnits += space
                    }
                    line += word
                    lineUnits += wordUnits
                    continue
                }
                if !line.isEmpty { lines.append(line) }
                (line, lineUnits) = ("", 0)
                // A word wider than a line: cut it where the line is full.
                for character in word {
                    let characterUnits = units(String(character))
                    if !line.isEmpty, Double(lineUnits + characterUnits) > limit {
                        lines.append(line)
                        (line, lineUnits) = ("", 0)
                    }
                    line.append(character)
                    lineUnits += characterUnits
                }
            }
            lines.append(line)
        }
        return lines
    }

    /// The longest start of `text` that fits `width`, with `…` when cut (and `ellipsis`).
    static func fit(_ text: String, width: Double, size: Double, ellipsis: Bool = true) -> String {
        let limit = width * 1000 / size
        if Double(units(text)) <= limit { return text }
        let mark = ellipsis ? "…" : ""
        let room = limit - Double(units(mark))
        var result = "", used = 0
        for character in text {
            let characterUnits = units(String(character))
            if Double(used + characterUnits) > room { break }
            result.append(character)
            used += characterUnits
        }
        return result + mark
    }
}
