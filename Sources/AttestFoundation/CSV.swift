import Foundation

/// RFC 4180 records: comma-separated, fields optionally in double quotes ("" inside quotes
/// is a quote; quoted fields may hold commas and line breaks). Each record comes with the
/// line it starts on.
public enum CSV {
    /// A quoted field opened on `line` is never closed.
    public struct UnclosedQuote: Error {
        public let line: Int
    }

    /// One field written for RFC 4180, decided on Unicode scalars (never on grapheme clusters:
    /// `"\r\n"`, or a quote followed by a combining mark, is one `Character`): quoted when a
    /// comma, quote, CR or LF is anywhere in it, and with a leading `'` when it starts with a
    /// scalar a spreadsheet would run as a formula (`=`, `+`, `-`, `@`, tab, CR) unless it is a
    /// plain number (`-1.5`, `+3e2`).
    public static func escape(_ field: String) -> String {
        var scalars = field.unicodeScalars
        if let first = scalars.first, formulaStarts.contains(first.value), !isPlainNumber(field) {
            scalars.insert("'", at: scalars.startIndex)
        }
        guard scalars.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return String(scalars) }
        var quoted = String.UnicodeScalarView()
        quoted.append("\"")
        for scalar in scalars {
            if scalar == "\"" { quoted.append("\"") }
            quoted.append(scalar)
        }
        quoted.append("\"")
        return String(quoted)
    }

    /// `=`, `+`, `-`, `@`, tab, CR: what makes a spreadsheet read a cell as a formula.
    static let formulaStarts: Set<UInt32> = [0x3D, 0x2B, 0x2D, 0x40, 0x09, 0x0D]

    /// An ASCII decimal number with an optional sign, fraction and exponent, nothing else.
    static func isPlainNumber(_ text: String) -> Bool {
        var bytes = text.utf8[...]
        if let sign = bytes.first, sign == 0x2B || sign == 0x2D { bytes = bytes.dropFirst() }
        func digits() -> Int {
            let count = bytes.prefix { (0x30...0x39).contains($0) }.count
            bytes = bytes.dropFirst(count)
            return count
        }
        var mantissa = digits()
        if bytes.first == 0x2E {
            bytes = bytes.dropFirst()
            mantissa += digits()
        }
        guard mantissa > 0 else { return false }
        if let e = bytes.first, e == 0x65 || e == 0x45 {
            bytes = bytes.dropFirst()
            if let sign = bytes.first, sign == 0x2B || sign == 0x2D { bytes = bytes.dropFirst() }
            guard digits() > 0 else { return false }
        }
        return bytes.isEmpty
    }

    /// What to add to an error about a record's fields when the record is one field holding a
    /// semicolon: a spreadsheet in a locale whose decimal mark is a comma (Spanish, French,
    /// German) saves "CSV" separated by semicolons.
    public static func separatorHint(_ fields: [String]) -> String {
        guard fields.count == 1, fields[0].utf8.contains(UInt8(ascii: ";")) else { return "" }
        return " (the line is separated by semicolons: save the file as CSV separated by commas)"
    }

    /// Every record of `text`, read as `forEachRecord` reads bytes.
    public static func records(_ text: String) throws -> [(line: Int, fields: [String])] {
        var records: [(line: Int, fields: [String])] = []
        try forEachRecord(in: Data(text.utf8)) { line, fields in records.append((line, fields)) }
        return records
    }

    /// Calls `body` with each record of `data` (UTF-8) and the line it starts on, reading the
    /// bytes once without copying the file: for files of millions of rows. A field without
    /// quotes is made straight from its stretch of the bytes; only a quoted one is gathered
    /// byte by byte. A byte order mark at the start (what a spreadsheet's "CSV UTF-8" writes
    /// first) is not part of the first field. Throws `UnclosedQuote`, or what `body` throws.
    public static func forEachRecord(in data: Data, _ body: (_ line: Int, _ fields: [String]) throws -> Void) throws {
        try data.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) in
            var fields: [String] = []
            // A field that had a quote, gathered here; nil while the field is a plain stretch
            // of the bytes from `fieldStart`.
            var gathered: [UInt8]? = nil
            var inQuotes = false
            var line = 1, recordLine = 1
            let count = bytes.count
            let byteOrderMark = count >= 3 && bytes[0] == 0xEF && bytes[1] == 0xBB && bytes[2] == 0xBF
            var index = byteOrderMark ? 3 : 0, fieldStart = index
            // Ends the field whose plain stretch (when it had no quote) ends before `end`.
            func endField(_ end: Int) {
                if let field = gathered {
                    fields.append(String(decoding: field, as: UTF8.self))
                    gathered = nil
                } else {
                    fields.append(String(decoding: UnsafeRawBufferPointer(rebasing: bytes[fieldStart..<end]), as: UTF8.self))
                }
                fieldStart = index
            }
            while index < count {
                let byte = bytes[index]
                index += 1
                if inQuotes {
                    if byte == 0x22 {
                        if index < count, bytes[index] == 0x22 {
                            gathered?.append(0x22)
                            index += 1
                        } else {
                            inQuotes = false
                        }
                    } else {
                        if byte == 0x0A { line += 1 }
                        gathered?.append(byte)
                    }
                    continue
                }
                switch byte {
                case 0x22 where gathered == nil && index - 1 == fieldStart:
                    // A quote opens a field only as its first byte.
                    inQuotes = true
                    gathered = []
                case 0x2C: endField(index - 1)
                case 0x0D where index < count && bytes[index] == 0x0A: break
                case 0x0A:
                    // A CR before the LF ends the line, not the field.
                    let end = index - 1
                    endField(end > fieldStart && bytes[end - 1] == 0x0D ? end - 1 : end)
                    try body(recordLine, fields)
                    fields.removeAll(keepingCapacity: true)
                    line += 1
                    recordLine = line
                default: gathered?.append(byte)
                }
            }
            if inQuotes { throw UnclosedQuote(line: recordLine) }
            if gathered != nil || index > fieldStart || !fields.isEmpty {
                endField(count)
                try body(recordLine, fields)
            }
        }
    }
}
