import AttestPlugins
import Foundation

/// Texts an on-call phone through an HTTP SMS gateway when a badge turns red or an
/// attestation comes in late, so a health officer hears of it without watching a dashboard.
///
/// Settings:
/// `{"url": "https://sms.example.edu/v1/messages", "apiKey": "…", "to": "+15551234567",
///   "events": ["badge.red"], "baseURL": "https://attest.example.edu", "timeoutSeconds": 10}`
/// (`events` is required and may name `badge.red` and `attestation.late` only: one text per
/// submission or reminder would flood a phone; `baseURL`, optional, turns the event's link
/// into one the officer can open; `timeoutSeconds`, 1 to 60, bounds one attempt.)
///
/// The gateway gets `POST url` with `Authorization: Bearer <apiKey>`, `Idempotency-Key: <event
/// id>` and `{"to", "text", "reference"}`. The text says which campus, what and which day, and
/// never who: the follow-up list, behind sign-in and audited, says who.
public struct SMSGatewaySink: NotificationSink {
    public static let id = "sms-gateway"
    public static let supportedEvents: Set<NotificationEvent> = [.badgeRed, .attestationLate]

    let url: URL
    let apiKey: String
    let to: String
    let baseURL: String?
    let timeout: Duration

    public init(settings: JSONValue) throws {
        guard case .string(let text)? = settings["url"], let url = URL(string: text),
            url.scheme?.lowercased() == "https"
                || (url.scheme?.lowercased() == "http" && ["127.0.0.1", "localhost", "::1"].contains(url.host ?? ""))
        else {
            throw PluginSettingsError("url is required: the gateway's https URL for sending a message")
        }
        guard case .string(let apiKey)? = settings["apiKey"], !apiKey.isEmpty else {
            throw PluginSettingsError("apiKey is required: the key the gateway issued for sending")
        }
        guard case .string(let to)? = settings["to"], Self.isE164(to) else {
            throw PluginSettingsError("to must be a phone number in international form, such as \"+15551234567\"")
        }
        guard case .array(let names)? = settings["events"],
            names.allSatisfy({
                if case .string(let name) = $0, let event = NotificationEvent(rawValue: name) {
                    Self.supportedEvents.contains(event)
                } else {
                    false
                }
            })
        else {
            throw PluginSettingsError("events is required and may list \"badge.red\" and \"attestation.late\" only (one text per event)")
        }
        var baseURL: String?
        if let setting = settings["baseURL"] {
            guard case .string(let base) = setting, let parsed = URL(string: base), parsed.scheme == "https" else {
                throw PluginSettingsError("baseURL must be the server's https address, such as \"https://attest.example.edu\"")
            }
            baseURL = base.hasSuffix("/") ? String(base.dropLast()) : base
        }
        var timeout = Duration.seconds(10)
        if let setting = settings["timeoutSeconds"] {
            guard case .number(let seconds) = setting, (1...60).contains(seconds) else {
                throw PluginSettingsError("timeoutSeconds must be a number from 1 to 60")
            }
            timeout = .milliseconds(Int(seconds * 1000))
        }
        self.url = url
        self.apiKey = apiKey
        self.to = to
        self.baseURL = baseURL
        self.timeout = timeout
    }

    static func isE164(_ number: String) -> Bool {
        let digits = number.utf8.dropFirst()
        return number.first == "+" && (7...15).contains(digits.count) && digits.first != UInt8(ascii: "0")
            && digits.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
    }

    /// The message for `notification`: campus, what, which day, and where to look.
    public func text(for notification: AttestNotification) -> String {
        let day = notification.date ?? "today"
        var text =
            switch notification.event {
            case .badgeRed: "Campus Attest \(notification.campus): a red badge on \(day)."
            case .attestationLate: "Campus Attest \(notification.campus): a late attestation on \(day)."
            case .attestationSubmitted: "Campus Attest \(notification.campus): an attestation on \(day)."
            case .reminderDue: "Campus Attest \(notification.campus): a reminder is due on \(day)."
            case .guestArrived: "Campus Attest \(notification.campus): a guest checked in on \(day)."
            }
        if let baseURL, let link = notification.links["followUps"] { text += " Follow up: \(baseURL)\(link)" }
        return text
    }

    public func deliver(_ notification: AttestNotification, payload: Data, context: PluginContext) async -> DeliveryResult {
        let message: [String: String] = ["to": to, "text": text(for: notification), "reference": notification.id]
        let body: Data
        do { body = try JSONEncoder().encode(message) } catch { return .reject("cannot encode the message: \(error)") }
        let request = PluginHTTPRequest(
            method: "POST", url: url,
            headers: [("Content-Type", "application/json"), ("Authorization", "Bearer \(apiKey)"), ("Idempotency-Key", notification.id)],
            body: body, timeout: timeout)
        do {
            let response = try await context.http.send(request)
            switch response.status {
            case 200..<300: return .delivered
            case 401, 403: return .reject("the gateway refused the apiKey (\(response.status)); set a valid key and retry the event")
            case 408, 429, 500..<600: return .retry("the gateway answered \(response.status)")
            default: return .reject("the gateway answered \(response.status)")
            }
        } catch {
            return .retry("\(error)")
        }
    }
}

extension PluginRegistry {
    /// Registers the example plugins under their ids: `temperature-only`, `recent-test`, `csv-file`, `sms-gateway`.
    public mutating func registerExamplePlugins() {
        registerBadgeRule(id: RecentTestRule.id) { settings, _ in try RecentTestRule(settings: settings) }
        registerBadgeRule(id: TemperatureRule.id) { settings, questionnaire in
            try TemperatureRule(settings: settings, questionnaire: questionnaire)
        }
        registerTestingLocationProvider(id: CSVFileProvider.id) { settings in try CSVFileProvider(settings: settings) }
        registerSink(id: SMSGatewaySink.id) { settings in try SMSGatewaySink(settings: settings) }
        // The gateway's key is stored sealed under the operator's key-encryption key, never shown.
        declareSecretSettings(["apiKey"], kind: .sink, id: SMSGatewaySink.id)
        // A misspelt member is refused by name when the sink is enabled, not passed over.
        registerSettingsCheck(kind: .sink, id: SMSGatewaySink.id) {
            PluginRegistry.unknownMembers(of: $0, allowed: ["url", "apiKey", "to", "events", "baseURL", "timeoutSeconds"])
        }
        registerCommunityDataProvider(id: WeeklyReportProvider.id) { settings in try WeeklyReportProvider(settings: settings) }
    }
}
