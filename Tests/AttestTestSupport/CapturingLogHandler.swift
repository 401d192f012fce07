import Logging
import Synchronization

/// A log handler that keeps every message, for tests that check what gets logged.
public final class LogCapture: Sendable {
    private let entries = Mutex<[(level: Logger.Level, message: String, metadata: Logger.Metadata)]>([])

    public init() {}

    public var messages: [String] { entries.withLock { $0.map(\.message) } }

    /// Each message with its metadata (`key=value`, sorted by key): what a test searches
    /// when anything logged counts, and what a failure message shows.
    public var lines: [String] {
        entries.withLock { entries in
            entries.map { entry in
                ([entry.message] + entry.metadata.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }).joined(separator: " ")
            }
        }
    }

    public func logger(level: Logger.Level = .trace) -> Logger {
        var logger = Logger(label: "attest.test.capture") { _ in Handler(capture: self) }
        logger.logLevel = level
        return logger
    }

    struct Handler: LogHandler {
        let capture: LogCapture
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            let merged = metadata.merging(event.metadata ?? [:]) { $1 }
            capture.entries.withLock { $0.append((event.level, "\(event.message)", merged)) }
        }
    }
}
