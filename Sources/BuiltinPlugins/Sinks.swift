import AttestPlugins
import Crypto
import Foundation

/// The `log` sink: one log line per event (id, event, campus, date, colour), for trying
/// notifications out and for campuses that feed their logs to something else.
public struct LogSink: NotificationSink {
    public static let id = "log"

    public func deliver(_ notification: AttestNotification, payload: Data, context: PluginContext) async -> DeliveryResult {
        context.logger.info(
            "notification",
            metadata: [
                "event": "\(notification.event.rawValue)", "id": "\(notification.id)", "campus": "\(notification.campus)",
                "date": "\(notification.date ?? "")", "color": "\(notification.color?.rawValue ?? "")",
            ])
        return .delivered
    }
}

/// The `webhook` sink: POSTs each event as JSON to a URL.
///
/// Settings: `{"url": "https://…", "secret": "…", "events": ["badge.red"], "timeoutSeconds": 10}`.
/// Headers: `X-Attest-Event` (the event name), `Idempotency-Key` (the event id: the same on
/// every retry) and `X-Attest-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>",
/// keyed with the secret>`: a receiver recomputes it, compares in constant time, and refuses
/// a `t` more than 5 minutes from its clock, so a captured request cannot be replayed later.
/// A 2xx is delivered; 408, 429, 5xx, timeouts and refused connections are retried; any
/// other status (a redirect included: none is followed) is rejected at once (dead-lettered).
public struct WebhookSink: NotificationSink {
    public static let id = "webhook"

    let url: URL
    let secret: SymmetricKey
    let timeout: Duration

    public init(settings: JSONValue) throws {
        guard case .string(let text)? = settings["url"] else {
            throw PluginSettingsError("url is required: the https URL to POST events to")
        }
        guard let url = OutboundURL.parse(text) else {
            throw PluginSettingsError("url must be https (http only to 127.0.0.1 or localhost), got \(text.prefix(200))")
        }
        guard case .string(let secret)? = settings["secret"], secret.utf8.count >= 16 else {
            throw PluginSettingsError("secret is required: at least 16 characters the receiver uses to check X-Attest-Signature")
        }
        var timeout = Duration.seconds(10)
        if let value = settings["timeoutSeconds"] {
            guard case .number(let seconds) = value, (1...60).contains(seconds) else {
                throw PluginSettingsError("timeoutSeconds must be a number from 1 to 60")
            }
            timeout = .milliseconds(Int(seconds * 1000))
        }
        self.url = url
        self.secret = SymmetricKey(data: Data(secret.utf8))
        self.timeout = timeout
    }

    /// `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">` with the sink's secret.
    static func signature(of body: Data, key: SymmetricKey, at time: Date) -> String {
        let stamp = String(Int64(time.timeIntervalSince1970.rounded(.down)))
        var message = Data((stamp + ".").utf8)
        message.append(body)
        let hex = HMAC<SHA256>.authenticationCode(for: message, using: key).map { String(format: "%02x", $0) }.joined()
        return "t=\(stamp),v1=\(hex)"
    }

    public func deliver(_ notification: AttestNotification, payload: Data, context: PluginContext) async -> DeliveryResult {
        let request = PluginHTTPRequest(
            method: "POST", url: url,
            headers: [
                ("Content-Type", "application/json"), ("X-Attest-Event", notification.event.rawValue),
                ("Idempotency-Key", notification.id), ("X-Attest-Signature", Self.signature(of: payload, key: secret, at: Date())),
            ],
            body: payload, timeout: timeout)
        do {
            let response = try await context.http.send(request)
            switch response.status {
            case 200..<300: return .delivered
            case 408, 429, 500..<600: return .retry("the receiver answered \(response.status)")
            default: return .reject("the receiver answered \(response.status)")
            }
        } catch PluginHTTPError.refused(let reason) {
            return .reject("the server does not send to this URL: \(reason)")
        } catch {
            return .retry("\(error)")
        }
    }
}
