import AttestFoundation
import AttestPostgres
import Foundation

/// An address with its display name, as a header writes it: `Ana Ruiz <ana@example.edu>`, a
/// name outside ASCII as an RFC 2047 encoded word.
public struct MailAddress: Sendable, Equatable {
    public var name: String
    public var address: String

    public init(name: String = "", address: String) {
        self.name = name
        self.address = address
    }

    /// Whether `address` can stand in a header as it is: one `@`, printable ASCII without
    /// spaces, angle brackets, quotes or commas, at most 254 bytes.
    public static func isValid(_ address: String) -> Bool {
        let bytes = Array(address.utf8)
        guard bytes.count <= 254, bytes.filter({ $0 == 0x40 }).count == 1, let at = bytes.firstIndex(of: 0x40), at > 0,
            at < bytes.count - 1
        else { return false }
        return bytes.allSatisfy { $0 > 0x20 && $0 < 0x7F && ![0x3C, 0x3E, 0x22, 0x2C, 0x28, 0x29, 0x3B, 0x5B, 0x5D, 0x5C].contains($0) }
    }

    var header: String {
        let clean = MailMessage.oneLine(name)
        guard !clean.isEmpty else { return "<\(address)>" }
        return MailMessage.phrase(clean) + " <\(address)>"
    }
}

/// A message as the `email` sink sends it: `multipart/alternative` with a text and an HTML
/// part, both UTF-8 in quoted-printable, headers folded at 78 columns, non-ASCII names and
/// subjects as RFC 2047 encoded words, lines ending CRLF. Header values are single lines: a
/// CR or LF in a name or subject becomes a space (no header can be injected).
public struct MailMessage: Sendable {
    public var from: MailAddress
    public var to: MailAddress
    public var replyTo: MailAddress?
    public var subject: String
    public var text: String
    public var html: String
    /// Further headers, in order (`List-Unsubscribe`, `List-Unsubscribe-Post`).
    public var extraHeaders: [(name: String, value: String)]
    /// `<random@domain>`.
    public var messageID: String
    public var date: Date

    public init(
        from: MailAddress, to: MailAddress, replyTo: MailAddress? = nil, subject: String, text: String, html: String,
        extraHeaders: [(name: String, value: String)] = [], messageID: String, date: Date
    ) {
        (self.from, self.to, self.replyTo, self.subject, self.text, self.html) = (from, to, replyTo, subject, text, html)
        (self.extraHeaders, self.messageID, self.date) = (extraHeaders, messageID, date)
    }

    /// A fresh `Message-ID` at `domain`.
    public static func newMessageID(domain: String) -> String { "<\(UUID().uuidString.lowercased())@\(domain)>" }

    /// The header fields, in order, each `(name, value)` with the value unfolded.
    public func headerFields(boundary: String) -> [(name: String, value: String)] {
        var fields: [(String, String)] = [
            ("From", from.header), ("To", to.header),
        ]
        if let replyTo { fields.append(("Reply-To", replyTo.header)) }
        fields += [
            ("Subject", Self.encodedText(Self.oneLine(subject))), ("Date", Self.dateText(date)), ("Message-ID", messageID),
            ("MIME-Version", "1.0"), ("Content-Type", "multipart/alternative; boundary=\"\(boundary)\""),
        ]
        fields += extraHeaders.map { ($0.name, Self.oneLine($0.value)) }
        return fields
    }

    /// The body after the headers' blank line.
    public func body(boundary: String) -> String {
        var lines: [String] = []
        for (type, content) in [("text/plain", text), ("text/html", html)] {
            lines += [
                "--\(boundary)", "Content-Type: \(type); charset=utf-8", "Content-Transfer-Encoding: quoted-printable", "",
                Self.quotedPrintable(content),
            ]
        }
        lines.append("--\(boundary)--")
        return lines.joined(separator: "\r\n") + "\r\n"
    }

    /// The whole message (headers folded), without a DKIM signature.
    public func rendered(boundary: String) -> String {
        headerFields(boundary: boundary).map { Self.fold($0.name, $0.value) }.joined() + "\r\n" + body(boundary: boundary)
    }

    /// A boundary no quoted-printable line can hold (`=_` never starts one).
    public static func newBoundary() -> String {
        "=_attest_" + String(decoding: UUID().uuidString.lowercased().utf8.filter { $0 != UInt8(ascii: "-") }, as: UTF8.self)
    }

    // MARK: Encodings

    /// `text` on one line: CR, LF and other controls become spaces, runs of spaces one.
    static func oneLine(_ text: String) -> String {
        var result = ""
        var space = false
        for scalar in text.unicodeScalars {
            // U+2028 and U+2029 are the only characters of the categories Zl and Zp.
            if scalar.value < 0x20 || scalar.value == 0x7F || scalar.value == 0x2028 || scalar.value == 0x2029 || scalar == " " {
                if !result.isEmpty { space = true }
                continue
            }
            if space { result.unicodeScalars.append(" ") }
            space = false
            result.unicodeScalars.append(scalar)
        }
        return result
    }

    /// A display name: as it is when it is plain ASCII words, quoted when it holds specials,
    /// encoded words when it holds anything else.
    static func phrase(_ name: String) -> String {
        let specials = Set("()<>[]:;@\\,.\"".unicodeScalars)
        guard name.unicodeScalars.allSatisfy({ $0.isASCII }) else { return encodedText(name) }
        if name.unicodeScalars.contains(where: { specials.contains($0) }) {
            return "\"" + name.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
        }
        return name
    }

    /// `text` as it is when ASCII (and no `=?` that would read as an encoded word), else RFC 2047
    /// encoded words (`=?UTF-8?B?…?=`), each at most 75 characters and split between
    /// characters, never inside one.
    static func encodedText(_ text: String) -> String {
        if text.unicodeScalars.allSatisfy({ $0.isASCII }) && !text.contains("=?") { return text }
        // 75 - "=?UTF-8?B?".count - "?=".count = 63 base64 characters: 45 bytes of UTF-8.
        var words: [String] = [], chunk = Data()
        for character in text {
            let bytes = Data(String(character).utf8)
            if chunk.count + bytes.count > 45, !chunk.isEmpty {
                words.append("=?UTF-8?B?" + chunk.base64EncodedString() + "?=")
                chunk.removeAll()
            }
            chunk.append(bytes)
        }
        if !chunk.isEmpty { words.append("=?UTF-8?B?" + chunk.base64EncodedString() + "?=") }
        return words.joined(separator: " ")
    }

    /// `Name: value` folded at spaces so that lines keep to 78 characters where they can, CRLF ended.
    /// Counted in bytes: a field is ASCII once its words are encoded.
    static func fold(_ name: String, _ value: String) -> String {
        var out = Array(name.utf8)
        out.reserveCapacity(out.count + value.utf8.count + 16)
        out.append(UInt8(ascii: ":"))
        var lineStart = 0, first = true
        for word in value.utf8.split(separator: 0x20, omittingEmptySubsequences: true) {
            if out.count - lineStart + 1 + word.count > 78, !first {
                out += [0x0D, 0x0A]
                lineStart = out.count
            }
            first = false
            out.append(0x20)
            out += word
        }
        out += [0x0D, 0x0A]
        return String(decoding: out, as: UTF8.self)
    }

    /// RFC 5322's date: `Sat, 28 Nov 2026 10:11:17 +0000`.
    static func dateText(_ date: Date) -> String {
        // The civil date by arithmetic (PostgresDate's day count): no Calendar made and asked
        // for every message. A date out of any mail's range reads as 1970.
        let seconds =
            Int(exactly: date.timeIntervalSince1970.rounded(.down)).flatMap { (-(1 << 50)...(1 << 50)).contains($0) ? $0 : nil } ?? 0
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let second = seconds - days * 86_400
        let civil = PostgresDate(daysSinceUnixEpoch: days)
        let days7 = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"]  // 1 Jan 1970 was a Thursday
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(days7[((days % 7) + 7) % 7]), \(civil.day) \(months[civil.month - 1]) \(civil.year) "
            + "\(two(second / 3_600)):\(two(second % 3_600 / 60)):\(two(second % 60)) +0000"
    }

    /// Quoted-printable (RFC 2045 §6.7) of `text` as UTF-8, lines ending CRLF: `=`, controls and
    /// bytes above 126 as `=XX`, a space or tab at a line's end encoded, lines at most 76
    /// characters with soft breaks (`=`), never splitting an `=XX`.
    static func quotedPrintable(_ text: String) -> String {
        let hex: StaticString = "0123456789ABCDEF"
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count + text.utf8.count / 4 + 16)
        // Line breaks of any kind (CRLF, CR, LF) are the text's own: kept as CRLF.
        let bytes = Array(text.utf8)
        hex.withUTF8Buffer { hex in
            var start = 0
            while true {
                var end = start
                while end < bytes.count, bytes[end] != 0x0A, bytes[end] != 0x0D { end += 1 }
                var length = 0  // of the output line so far
                for index in start..<end {
                    let byte = bytes[index], last = index == end - 1
                    let encoded = byte == 0x3D || byte > 0x7E || (byte < 0x20 && byte != 0x09) || ((byte == 0x20 || byte == 0x09) && last)
                    let width = encoded ? 3 : 1
                    // 75 leaves room for the soft break's `=`.
                    if length + width > (last ? 76 : 75) {
                        out += [0x3D, 0x0D, 0x0A]
                        length = 0
                    }
                    if encoded { out += [0x3D, hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]] } else { out.append(byte) }
                    length += width
                }
                guard end < bytes.count else { break }
                out += [0x0D, 0x0A]
                start = bytes[end] == 0x0D && end + 1 < bytes.count && bytes[end + 1] == 0x0A ? end + 2 : end + 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
