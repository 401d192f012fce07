import AttestFoundation
import AttestPlugins
import Crypto
import Foundation
import Tenancy

/// The channels a member is reached on.
public enum NotificationChannel: String, Sendable, CaseIterable {
    case email, push

    var byte: UInt8 { self == .email ? 1 : 2 }
}

/// One-click unsubscribe links (RFC 8058): a token naming a member and a channel, signed with a
/// key of the campus's, so it works without signing in, at that campus only, and cannot be made
/// for another member or channel. 46 characters: a version, the member, the channel and 16
/// bytes of HMAC-SHA256 over the campus, the member and the channel.
public struct UnsubscribeTokens: Sendable {
    let key: SymmetricKey

    /// Keys derived from a secret of the campus's (HKDF, its own label: the secret serves
    /// nothing else through it).
    public init(campusSecret: SymmetricKey) {
        key = HKDF<SHA256>.deriveKey(inputKeyMaterial: campusSecret, info: Data("attest unsubscribe v1".utf8), outputByteCount: 32)
    }

    private func mac(campus: CampusID, user: UserID, channel: NotificationChannel) -> Data {
        var input = Data("unsubscribe".utf8)
        withUnsafeBytes(of: campus.rawValue.uuid) { input.append(contentsOf: $0) }
        withUnsafeBytes(of: user.rawValue.uuid) { input.append(contentsOf: $0) }
        input.append(channel.byte)
        return Data(HMAC<SHA256>.authenticationCode(for: input, using: key)).prefix(16)
    }

    public func token(campus: CampusID, user: UserID, channel: NotificationChannel) -> String {
        var bytes = Data([1])
        withUnsafeBytes(of: user.rawValue.uuid) { bytes.append(contentsOf: $0) }
        bytes.append(channel.byte)
        bytes.append(mac(campus: campus, user: user, channel: channel))
        return bytes.base64URLEncoded()
    }

    /// The member and channel of `token` at `campus`, or nil for anything else (altered,
    /// another campus's, not a token).
    public func read(_ token: String, campus: CampusID) -> (user: UserID, channel: NotificationChannel)? {
        guard token.utf8.count <= 64, let bytes = Data(base64URLEncoded: token), bytes.count == 34, bytes.first == 1 else { return nil }
        let raw = [UInt8](bytes)
        let user = UserID(
            UUID(
                uuid: (
                    raw[1], raw[2], raw[3], raw[4], raw[5], raw[6], raw[7], raw[8], raw[9], raw[10], raw[11], raw[12], raw[13], raw[14],
                    raw[15],
                    raw[16]
                )))
        guard let channel = NotificationChannel.allCases.first(where: { $0.byte == raw[17] }) else { return nil }
        let expected = mac(campus: campus, user: user, channel: channel)
        // Compared in constant time.
        guard zip(expected, raw[18...]).reduce(UInt8(0), { $0 | ($1.0 ^ $1.1) }) == 0 else { return nil }
        return (user, channel)
    }
}

extension NotificationPreferenceStore {
    /// Turns `channel` off for the member (their other choices kept); their choices now.
    @discardableResult
    public func turnOff(campus: Campus, user: UserID, channel: NotificationChannel, now: Date) async throws -> NotificationPreferences {
        var preferences = try await preferences(campus: campus.id, user: user)
        switch channel {
        case .email: preferences.email = false
        case .push: preferences.push = false
        }
        try await set(campus: campus, user: user, preferences, now: now)
        return preferences
    }
}
