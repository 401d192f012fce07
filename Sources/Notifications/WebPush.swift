import AttestFoundation
import Crypto
import Foundation
import Synchronization

/// Web Push message encryption (RFC 8291) in the `aes128gcm` content coding (RFC 8188): one
/// record, encrypted to a browser's subscription (`p256dh`, `auth`), so the push service
/// carries bytes it cannot read.
public enum WebPushEncryption {
    /// The record size written in the header.
    public static let recordSize: UInt32 = 4096
    /// The most a body may be (push services take 4096 bytes): the header (86), the
    /// plaintext, the record delimiter (1) and the tag (16).
    public static let maxPlaintext = 4096 - 86 - 1 - 16

    public struct Failure: Error, Equatable, CustomStringConvertible {
        public let description: String
    }

    /// `plaintext` encrypted to the subscription, with a fresh sender key and salt.
    public static func encrypt(_ plaintext: Data, p256dh: Data, auth: Data) throws -> Data {
        let salt = SymmetricKey(size: .bits128).withUnsafeBytes { Data($0) }
        return try encrypt(plaintext, p256dh: p256dh, auth: auth, sender: newSenderKey(), salt: salt)
    }

    /// A fresh sender key, as RFC 8291 asks for each message: a scalar of 32 bytes from the
    /// system's secure generator (swift-crypto's `SymmetricKey`, wiped when released), drawn
    /// again in the rare case (below 2^-32) that it is zero or not below the group's order,
    /// which the key's initializer refuses; its public point computed from it.
    /// `P256.KeyAgreement.PrivateKey()` makes the same kind of key but runs FIPS's pairwise test
    /// on each (an ECDSA signature made and verified): 80 µs here against 10, more than the ECDH
    /// itself (Benchmarks/README.md, "A sender key without the FIPS test").
    public static func newSenderKey() -> P256.KeyAgreement.PrivateKey {
        for _ in 0..<64 {
            if let key = try? P256.KeyAgreement.PrivateKey(rawRepresentation: SymmetricKey(size: .bits256)) { return key }
        }
        return P256.KeyAgreement.PrivateKey()  // never reached with a working generator
    }

    /// The same with the sender's key and the salt given (RFC 8291's example, tests).
    static func encrypt(_ plaintext: Data, p256dh: Data, auth: Data, sender: P256.KeyAgreement.PrivateKey, salt: Data) throws -> Data {
        guard plaintext.count <= maxPlaintext else {
            throw Failure(description: "a push message holds at most \(maxPlaintext) bytes, this one \(plaintext.count)")
        }
        guard auth.count == 16 else { throw Failure(description: "the subscription's auth secret must be 16 bytes, got \(auth.count)") }
        guard salt.count == 16 else { throw Failure(description: "the salt must be 16 bytes") }
        guard p256dh.count == 65, p256dh.first == 4, let browser = try? P256.KeyAgreement.PublicKey(x963Representation: p256dh) else {
            throw Failure(description: "the subscription's p256dh must be an uncompressed P-256 point (65 bytes)")
        }
        let shared = try sender.sharedSecretFromKeyAgreement(with: browser)
        let senderPublic = sender.publicKey.x963Representation
        let secret = shared.withUnsafeBytes { SymmetricKey(data: Data($0)) }
        // IKM = HKDF(auth, ecdh, "WebPush: info" 0x00 ua_public as_public, 32)
        let keyPRK = HKDF<SHA256>.extract(inputKeyMaterial: secret, salt: auth)
        let ikm = HKDF<SHA256>.expand(
            pseudoRandomKey: keyPRK, info: Data("WebPush: info".utf8) + [0] + p256dh + senderPublic, outputByteCount: 32)
        let prk = HKDF<SHA256>.extract(inputKeyMaterial: ikm, salt: salt)
        let key = HKDF<SHA256>.expand(pseudoRandomKey: prk, info: Data("Content-Encoding: aes128gcm".utf8) + [0], outputByteCount: 16)
        let nonce = HKDF<SHA256>.expand(pseudoRandomKey: prk, info: Data("Content-Encoding: nonce".utf8) + [0], outputByteCount: 12)
        // One record, the last: the plaintext and the delimiter 0x02, no padding.
        let sealed = try AES.GCM.seal(
            plaintext + [2], using: key, nonce: try AES.GCM.Nonce(data: nonce.withUnsafeBytes { Data($0) }))
        var body = salt
        withUnsafeBytes(of: recordSize.bigEndian) { body.append(contentsOf: $0) }
        body.append(UInt8(senderPublic.count))
        body.append(senderPublic)
        body.append(sealed.ciphertext)
        body.append(sealed.tag)
        return body
    }
}

/// Voluntary application server identification (VAPID, RFC 8292): the `Authorization` header a
/// push service is sent, `vapid t=<JWT>, k=<public key>`, the JWT signed with ES256 by the
/// campus's key. A token is made once for each push service (its origin) and contact and used
/// again for an hour (RFC 8292 §2 lets a token be reused until it expires): a day's reminders
/// go to a handful of push services, and an ES256 signature for each request cost a quarter
/// to a third as much again as the message's encryption.
public struct VAPIDKey: Sendable {
    public let privateKey: P256.Signing.PrivateKey
    /// The public key as browsers take it for `applicationServerKey`: base64url of the
    /// uncompressed point.
    public let publicKeyText: String
    private let tokens = Tokens()

    public init(privateKey: P256.Signing.PrivateKey) {
        self.privateKey = privateKey
        publicKeyText = privateKey.publicKey.x963Representation.base64URLEncoded()
    }

    /// How long a token is valid (`exp`: at most 24 hours are allowed), and for how long after
    /// it was made it is used again: every token sent has at least 11 hours left.
    static let lifetime = 12 * 3_600, reuse = 3_600

    /// The tokens made, by push service and contact: a few push services, a contact or two.
    /// Emptied when it reaches `limit`, so a campus whose members use many services cannot
    /// make it grow.
    private final class Tokens: Sendable {
        struct Token {
            let made: Int
            let header: String
        }
        let made = Mutex<[String: Token]>([:])
        static let limit = 64
    }

    /// `vapid t=…, k=…` for a push endpoint: `aud` its origin, `exp` 12 hours after the token
    /// was made, `sub` a contact (`mailto:` or `https:`); the token made for the same origin
    /// and contact within the last hour when there is one.
    public func authorization(endpoint: URL, subject: String, now: Date) throws -> String {
        guard let scheme = endpoint.scheme, let host = endpoint.host else {
            throw WebPushEncryption.Failure(description: "the push endpoint \(endpoint.absoluteString.prefix(80)) has no origin")
        }
        let origin = "\(scheme)://\(host)" + (endpoint.port.map { ":\($0)" } ?? "")
        guard let seconds = Int(exactly: now.timeIntervalSince1970.rounded(.down)), (0..<(1 << 40)).contains(seconds) else {
            throw WebPushEncryption.Failure(description: "the clock reads no time a token can carry")
        }
        let name = origin + " " + subject
        // A clock that went back makes a new token: one made "later" could outlive 24 hours.
        if let token = tokens.made.withLock({ $0[name] }), token.made <= seconds, seconds - token.made < Self.reuse {
            return token.header
        }
        let header = try newAuthorization(origin: origin, subject: subject, expires: seconds + Self.lifetime)
        tokens.made.withLock { made in
            if made.count >= Tokens.limit { made.removeAll(keepingCapacity: true) }
            made[name] = Tokens.Token(made: seconds, header: header)
        }
        return header
    }

    private func newAuthorization(origin: String, subject: String, expires: Int) throws -> String {
        let header = Data(#"{"typ":"JWT","alg":"ES256"}"#.utf8).base64URLEncoded()
        var claims = JSONBytes()
        claims.literal("{\"aud\":")
        claims.string(origin)
        claims.literal(",\"exp\":")
        claims.integer(expires)
        claims.literal(",\"sub\":")
        claims.string(subject)
        claims.literal("}")
        let signingInput = header + "." + Data(claims.bytes).base64URLEncoded()
        let signature = try privateKey.signature(for: Data(signingInput.utf8)).rawRepresentation.base64URLEncoded()
        return "vapid t=\(signingInput).\(signature), k=\(publicKeyText)"
    }
}
