import AttestPlugins
import Foundation
import Tenancy

/// The `web-push` channel's settings: `{"subject": "mailto:health@example.edu", "ttlSeconds":
/// 43200, "urgency": "normal"}`. `subject` (required) is the contact push services see in the
/// VAPID token (RFC 8292 `sub`): a `mailto:` or an https URL.
public struct WebPushSettings: Sendable {
    public var subject: String
    public var ttlSeconds: Int
    public var urgency: String

    public static let urgencies = ["very-low", "low", "normal", "high"]

    public init(_ settings: JSONValue) throws(PluginSettingsError) {
        guard case .string(let subject)? = settings["subject"], subject.utf8.count <= 200,
            (subject.hasPrefix("mailto:") && subject.contains("@")) || subject.hasPrefix("https://"),
            subject.unicodeScalars.allSatisfy({ $0.isASCII && $0.value > 0x20 && $0 != "\"" })
        else {
            throw PluginSettingsError(
                "subject is required: a mailto: address or https URL push services may contact, such as mailto:health@example.edu")
        }
        self.subject = subject
        ttlSeconds = 43_200
        if let value = settings["ttlSeconds"] {
            guard case .number(let number) = value, let whole = Int(exactly: number), (0...2_419_200).contains(whole) else {
                throw PluginSettingsError("ttlSeconds must be a whole number of seconds from 0 to 2419200 (28 days)")
            }
            ttlSeconds = whole
        }
        urgency = "normal"
        if let value = settings["urgency"] {
            guard case .string(let text) = value, Self.urgencies.contains(text) else {
                throw PluginSettingsError("urgency must be \(Self.urgencies.joined(separator: ", "))")
            }
            urgency = text
        }
    }
}

/// One reminder to each browser the member subscribed (RFC 8030): the payload encrypted per
/// RFC 8291 (`aes128gcm`), the campus's VAPID token, `TTL`, `Urgency` and a `Topic` (a newer
/// reminder replaces one still waiting). Through the platform's HTTP client, so the outbound
/// policy applies. A 404 or 410 (the browser unsubscribed) forgets that subscription; 408,
/// 429, 5xx and no answer are tried again; another 4xx is given up for that browser.
struct WebPushDelivery {
    let settings: WebPushSettings
    let owner: MemberChannelSinks

    func send(_ message: MemberMessage, campus: Campus, user: UserID, http: any PluginHTTPClient, now: Date) async -> DeliveryResult {
        let subscriptions: [(id: UUID, subscription: PushSubscription)]
        let key: VAPIDKey
        do {
            let read = try await owner.subscriptions.sending(campus: campus.id, user: user)
            subscriptions = read.subscriptions
            if subscriptions.isEmpty { return .delivered }  // no browser subscribed: nothing to send
            key = try await owner.pushKeys.key(campus: campus.id, current: read.publicKey)
        } catch {
            return .retry("cannot read the member's browsers or the campus's push key: \(error)")
        }
        let body =
            (try? JSONEncoder().encode([
                "title": message.subject, "body": message.shortText, "url": message.survey, "tag": "attest-reminder",
                "lang": message.language,
            ])) ?? Data()
        var retry: [String] = [], refused: [String] = [], reached = 0
        for (id, subscription) in subscriptions {
            do {
                let encrypted = try WebPushEncryption.encrypt(body, p256dh: subscription.p256dh, auth: subscription.auth)
                let request = PluginHTTPRequest(
                    method: "POST", url: subscription.endpoint,
                    headers: [
                        ("Content-Type", "application/octet-stream"), ("Content-Encoding", "aes128gcm"), ("TTL", "\(settings.ttlSeconds)"),
                        ("Urgency", settings.urgency), ("Topic", "attest-reminder"),
                        ("Authorization", try key.authorization(endpoint: subscription.endpoint, subject: settings.subject, now: now)),
                    ],
                    body: encrypted, timeout: .seconds(10))
                let response = try await http.send(request)
                switch response.status {
                case 200..<300: reached += 1
                case 404, 410:
                    try await owner.subscriptions.forget(campus: campus.id, id: id)
                    reached += 1  // done with that browser
                case 408, 429, 500..<600: retry.append("the push service \(subscription.endpoint.forLogs) answered \(response.status)")
                default: refused.append("the push service \(subscription.endpoint.forLogs) answered \(response.status)")
                }
            } catch {
                retry.append("cannot reach \(subscription.endpoint.forLogs): \(error)")
            }
        }
        if !retry.isEmpty { return .retry(retry.joined(separator: "; ")) }
        if reached == 0, !refused.isEmpty { return .reject(refused.joined(separator: "; ")) }
        return .delivered
    }
}
