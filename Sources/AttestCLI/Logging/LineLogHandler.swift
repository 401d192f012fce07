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
            let pairs = merged.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            line = "\(timestamp) \(event.level) \(label): \(event.message)" + (pairs.isEmpty ? "" : " " + pairs)
        }
        Self.output.withLock { _ in FileHandle.standardError.write(Data((line + "\n").utf8)) }
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
