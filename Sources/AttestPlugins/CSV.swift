import Foundation

/// RFC 4180 records: comma-separated, fields optionally in double quotes ("" inside quotes
/// is a quote; quoted fields may hold commas and line breaks). Each record comes with the
/// line it starts on.
public enum CSV {
    /// A quoted field opened on `line` is never closed.
    public struct UnclosedQuote: Error {
        public let line: Int
    }

    /// One field written for RFC 4180, with a leading quote for text a spreadsheet would
    /// run as a formula (`=`, `+`, `-`, `@` …) unless it is a number.
    public static func escape(_ field: String) -> String {
        var text = field
        if let first = text.first, "=+-@\t\r".contains(first), Double(text) == nil { text = "'" + text }
        guard text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return text }
        return "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    public static func records(_ text: String) throws -> [(line: Int, fields: [String])] {
        var records: [(Int, [String])] = []
        var fields: [String] = []
        var field = ""
        var inQuotes = false
        var line = 1
        var recordLine = 1
        var characters = Array(text.replacingOccurrences(of: "\r\n", with: "\n"))
        if characters.last != "\n" { characters.append("\n") }
        var index = 0
        while index < characters.count {
            let character = characters[index]
            if inQuotes {
                if character == "\"" {
                    if index + 1 < characters.count, characters[index + 1] == "\"" {
                        field.append("\"")
                        index += 1
                    } else {
                        inQuotes = false
                    }
                } else {
                    if character == "\n" { line += 1 }
                    field.append(character)
                }
            } else {
                switch character {
                case "\"" where field.isEmpty: inQuotes = true
                case ",":
                    fields.append(field)
                    field = ""
                case "\n":
                    fields.append(field)
                    records.append((recordLine, fields))
                    fields = []
                    field = ""
                    line += 1
                    recordLine = line
                default: field.append(character)
                }
            }
            index += 1
        }
        if inQuotes {
            throw UnclosedQuote(line: recordLine)
        }
        return records
    }

    /// Calls `body` with each record of `data` (UTF-8) and the line it starts on, reading the
    /// bytes once without copying the file: for files of millions of rows. Throws
    /// `UnclosedQuote`, or what `body` throws.
    public static func forEachRecord(in data: Data, _ body: (_ line: Int, _ fields: [String]) throws -> Void) throws {
        try data.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) in
            var fields: [String] = []
            var field: [UInt8] = []
            var inQuotes = false, quoted = false
            var line = 1, recordLine = 1
            var index = 0
            let count = bytes.count
            func endField() {
                fields.append(String(decoding: field, as: UTF8.self))
                field.removeAll(keepingCapacity: true)
                quoted = false
            }
            while index < count {
                let byte = bytes[index]
                index += 1
                if inQuotes {
                    if byte == 0x22 {
                        if index < count, bytes[index] == 0x22 {
                            field.append(0x22)
                            index += 1
                        } else {
                            inQuotes = false
                        }
                    } else {
                        if byte == 0x0A { line += 1 }
                        field.append(byte)
                    }
                    continue
                }
                switch byte {
                case 0x22 where field.isEmpty && !quoted:
                    inQuotes = true
                    quoted = true
                case 0x2C: endField()
                case 0x0D where index < count && bytes[index] == 0x0A: break
                case 0x0A:
                    endField()
                    try body(recordLine, fields)
                    fields.removeAll(keepingCapacity: true)
                    line += 1
                    recordLine = line
                default: field.append(byte)
                }
            }
            if inQuotes { throw UnclosedQuote(line: recordLine) }
            if !field.isEmpty || !fields.isEmpty || quoted {
                endField()
                try body(recordLine, fields)
            }
        }
    }
}
