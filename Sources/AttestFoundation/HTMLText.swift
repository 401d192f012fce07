/// Text for HTML: the one escaping of the pages and of a shared link's page.
public enum HTMLText {
    /// Text escaped for an element's content or a quoted attribute. The control characters
    /// HTML does not allow in a document (all of C0 but tab, line feed, form feed and carriage
    /// return; DEL), such as a NUL typed into a query a page shows back, become U+FFFD, as a
    /// browser would read them.
    public static func escape(_ text: String) -> String {
        guard text.utf8.contains(where: needsEscape) else { return text }
        var result = ""
        result.reserveCapacity(text.utf8.count + 16)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "&": result += "&amp;"
            case "\"": result += "&quot;"
            case "'": result += "&#39;"
            case _ where scalar.value < 0x80 && isForbiddenControl(UInt8(scalar.value)): result += "\u{FFFD}"
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    @inline(__always) static func needsEscape(_ byte: UInt8) -> Bool {
        byte == 0x3C || byte == 0x3E || byte == 0x26 || byte == 0x22 || byte == 0x27 || isForbiddenControl(byte)
    }

    @inline(__always) static func isForbiddenControl(_ byte: UInt8) -> Bool {
        (byte < 0x20 && byte != 0x09 && byte != 0x0A && byte != 0x0C && byte != 0x0D) || byte == 0x7F
    }
}
