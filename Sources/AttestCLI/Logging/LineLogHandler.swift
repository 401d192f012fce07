import Foundation
import Logging
import Synchronization

/// Writes one line per log event to standard error: JSON for machines (`--log-format json`,
/// the default when stderr is not a terminal) or `time level label: message key=value` for people.
struct LineLogHandler: LogHandler {
    enum Format: String, Sendable, CaseIterable {
        case json, text
    }

    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level
    let label: String
    let format: Format

    private static let output = Mutex(())

    init(label: String, level: Logger.Level, format: Format) {
        self.label = label
        self.logLevel = level
        self.format = format
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var merged = metadata
        if let extra = event.metadata { merged.merge(extra) { $1 } }
        let timestamp = Date().ISO8601Format(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
        let line: String
        switch format {
        case .json:
            var object: [String: Any] = ["time": timestamp, "level": "\(event.level)", "logger": label, "message": "\(event.message)"]
            for (key, value) in merged where object[key] == nil { object[key] = Self.jsonValue(value) }
            let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
            line = String(decoding: data, as: UTF8.self)
        case .text:
            line = Self.textLine(
                timestamp: timestamp, level: event.level, label: label, message: "\(event.message)", metadata: merged)
        }
        Self.output.withLock { _ in FileHandle.standardError.write(Data((line + "\n").utf8)) }
    }

    /// `time level label: message key=value …`, one line whatever the values hold: line
    /// breaks, other control characters and backslashes are escaped (`\n`, `\u{1B}`, `\\`),
    /// and a value with a space or `=` is quoted, so no value can forge a line or a field.
    static func textLine(timestamp: String, level: Logger.Level, label: String, message: String, metadata: Logger.Metadata) -> String {
        let pairs = metadata.sorted { $0.key < $1.key }.map { key, value -> String in
            let text = escaped("\(value)")
            let quoted = text.isEmpty || text.contains(where: { $0 == " " || $0 == "=" || $0 == "\"" })
            return escaped(key) + "=" + (quoted ? "\"" + text.replacingOccurrences(of: "\"", with: "\\\"") + "\"" : text)
        }
        return "\(timestamp) \(level) \(escaped(label)): \(escaped(message))" + (pairs.isEmpty ? "" : " " + pairs.joined(separator: " "))
    }

    /// `text` with control characters (C0, DEL, C1, line and paragraph separators) and
    /// backslashes written as escapes; with `lineEnds` false, `\n` and backslashes are kept
    /// (a message of several lines for a person, not a log line).
    static func escaped(_ text: String, lineEnds: Bool = true) -> String {
        var output = ""
        output.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\\" where lineEnds: output += "\\\\"
            case "\n": output += lineEnds ? "\\n" : "\n"
            case "\r": output += "\\r"
            case "\t": output += "\\t"
            case _ where scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) || scalar.value == 0x2028 || scalar.value == 0x2029:
                output += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            default: output.unicodeScalars.append(scalar)
            }
        }
        return output
    }

    private static func jsonValue(_ value: Logger.Metadata.Value) -> Any {
        switch value {
        case .string(let text): text
        case .stringConvertible(let convertible): "\(convertible)"
        case .array(let values): values.map(jsonValue)
        case .dictionary(let dictionary): dictionary.mapValues(jsonValue)
        }
    }
}
