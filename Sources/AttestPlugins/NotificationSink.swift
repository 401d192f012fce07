import Foundation
import Logging

/// An HTTP request a plugin asks the platform to send (so plugins need no HTTP library).
public struct PluginHTTPRequest: Sendable {
    public var method: String
    public var url: URL
    public var headers: [(name: String, value: String)]
    public var body: Data?
    /// Connect plus response; past it the request fails with `PluginHTTPError.timedOut`.
    public var timeout: Duration

    public init(
        method: String = "GET", url: URL, headers: [(name: String, value: String)] = [], body: Data? = nil, timeout: Duration = .seconds(10)
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
    }
}

public struct PluginHTTPResponse: Sendable {
    public var status: Int
    public var body: Data
    /// The response's header fields, in order (names as sent).
    public var headers: [(name: String, value: String)]

    public init(status: Int, body: Data, headers: [(name: String, value: String)] = []) {
        self.status = status
        self.body = body
        self.headers = headers
    }

    /// The first value of a header field, by name in any case.
    public func header(_ name: String) -> String? {
        headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }
}

/// The URLs a plugin's settings may name for the platform to reach: https, or plain http to
/// this machine (development and tests; the server reaches loopback only when the operator
/// allows the host by name).
public enum OutboundURL {
    /// The URL, or nil when `text` is no such URL.
    public static func parse(_ text: String) -> URL? {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased(), !host.isEmpty
        else { return nil }
        return scheme == "https" || (scheme == "http" && ["127.0.0.1", "localhost", "::1", "[::1]"].contains(host)) ? url : nil
    }
}

/// Why a plugin's HTTP request got no response.
public enum PluginHTTPError: Error, Sendable, Equatable, CustomStringConvertible {
    case timedOut
    case connectionFailed(String)
    case responseTooLarge
    /// The platform will not send it: not https, or to an address it does not reach.
    case refused(String)

    public var description: String {
        switch self {
        case .timedOut: "timed out"
        case .connectionFailed(let reason): "connection failed: \(reason)"
        case .responseTooLarge: "the response was too large"
        case .refused(let reason): "refused: \(reason)"
        }
    }
}

/// The platform's HTTP client, lent to plugins.
///
/// Implementation requirements: follow no redirects; reach https URLs of public addresses,
/// and anything else only where the operator allowed it; honour `timeout`; bound the size
/// of what is read. Throw `PluginHTTPError` when there is no response.
public protocol PluginHTTPClient: Sendable {
    func send(_ request: PluginHTTPRequest) async throws -> PluginHTTPResponse
}

/// What the platform lends a plugin while it works.
public struct PluginContext: Sendable {
    public var http: any PluginHTTPClient
    public var logger: Logger

    public init(http: any PluginHTTPClient, logger: Logger) {
        self.http = http
        self.logger = logger
    }
}

/// How one delivery attempt ended.
public enum DeliveryResult: Sendable, Equatable {
    /// The receiver has it.
    case delivered
    /// Worth trying again later (the receiver is down, busy or slow); the reason is logged.
    case retry(String)
    /// Never worth trying again (the receiver refused it); the event is dead-lettered.
    case reject(String)
}

/// Receives the platform's events (`AttestNotification`) for a campus that enabled it.
///
/// Implementation requirements:
/// - `deliver` sends one event and says how it went; it does not retry itself: the platform's
///   outbox retries `.retry` with exponential backoff and jitter until the event is too old,
///   then dead-letters it, and dead-letters `.reject` at once.
/// - Delivery is at least once: the same event (same `id`) can arrive twice after a crash;
///   pass `id` on so the receiver can drop repeats.
/// - `payload` is the event as JSON, the exact bytes to send or sign.
public protocol NotificationSink: Sendable {
    func deliver(_ notification: AttestNotification, payload: Data, context: PluginContext) async -> DeliveryResult
}

extension URL {
    /// The URL as a log or an error message may show it: scheme, host, port and path, without
    /// user information, query or fragment, which may carry a password or an API key.
    public var forLogs: String {
        guard let host, !host.isEmpty else { return "(a URL without a host)" }
        var text = "\(scheme ?? "?")://\(host)"
        if let port { text += ":\(port)" }
        return text + path
    }
}
