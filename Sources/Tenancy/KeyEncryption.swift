import Crypto
import Foundation

/// The operator's key-encryption key (KEK): 256 bits that seal every campus's secrets at rest
/// (badge-signing keys, the badge-subject key, identity providers' client secrets). It never
/// enters the database; the database holds only its fingerprint next to what it sealed.
public struct KeyEncryptionKey: Sendable {
    let key: SymmetricKey
    /// The first 8 bytes of the key's SHA-256, hex: names it without revealing it.
    public let id: String
    /// Keys that still open what they sealed but seal nothing: the previous key while
    /// `attest keys rotate-kek` re-wraps (`serve --previous-kek-file`).
    public private(set) var previous: [KeyEncryptionKey] = []

    /// This key, also opening what `others` sealed (never sealing with them).
    public func accepting(_ others: [KeyEncryptionKey]) -> KeyEncryptionKey {
        var ring = self
        ring.previous = (previous + others.map(\.sealingOnly)).filter { $0.id != id }
        return ring
    }

    /// The fingerprints of every key this one opens with: its own first.
    public var ids: [String] { [id] + previous.map(\.id) }

    /// The key of this ring that sealed under `id`, or nil.
    func opening(_ id: String) -> KeyEncryptionKey? {
        id == self.id ? self : previous.first { $0.id == id }
    }

    private var sealingOnly: KeyEncryptionKey {
        var key = self
        key.previous = []
        return key
    }

    /// From the 32 bytes themselves.
    public init?(bytes: some DataProtocol) {
        guard bytes.count == 32 else { return nil }
        key = SymmetricKey(data: Data(bytes))
        id = SHA256.hash(data: Data(bytes)).prefix(8).map { String(format: "%02x", $0) }.joined()
    }

    /// From its text form: 32 bytes in base64 (what `attest keys new-kek` prints), spaces and
    /// line breaks around it ignored.
    public init?(text: String) {
        guard let bytes = Data(base64Encoded: text.trimmingCharacters(in: .whitespacesAndNewlines)) else { return nil }
        self.init(bytes: bytes)
    }

    /// A new random key, and its text form.
    public static func generate() -> (key: KeyEncryptionKey, text: String) {
        let bytes = SymmetricKey(size: .bits256).withUnsafeBytes { Data($0) }
        // 32 bytes always make a key.
        return (KeyEncryptionKey(bytes: bytes) ?? KeyEncryptionKey(unchecked: bytes), bytes.base64EncodedString())
    }

    private init(unchecked bytes: Data) {
        key = SymmetricKey(data: bytes)
        id = SHA256.hash(data: bytes).prefix(8).map { String(format: "%02x", $0) }.joined()
    }
}

/// An envelope (AES-256-GCM): the secret sealed under a random data key, the data key sealed
/// under the KEK, both bound to what the secret is for (`context`: campus and key id), so a
/// sealed value copied to another row does not open. Re-wrapping under a new KEK re-seals
/// only the data key.
///
/// Layout: `1` (version) ‖ KEK id (8 bytes) ‖ sealed data key (12 + 32 + 16) ‖ sealed secret
/// (12 + n + 16).
public enum SealedSecret {
    static let version: UInt8 = 1
    static let wrappedKeySize = 12 + 32 + 16
    /// The version, the KEK id and the sealed data key: every envelope is longer.
    public static let headerSize = 9 + wrappedKeySize

    public static func seal(_ secret: some DataProtocol, under kek: KeyEncryptionKey, context: String) throws -> Data {
        let dataKey = SymmetricKey(size: .bits256)
        let aad = Data(context.utf8)
        let wrapped = try AES.GCM.seal(dataKey.withUnsafeBytes { Data($0) }, using: kek.key, authenticating: aad)
        let sealed = try AES.GCM.seal(Data(secret), using: dataKey, authenticating: aad)
        guard let wrappedBytes = wrapped.combined, let sealedBytes = sealed.combined, let kekID = Data(hex: kek.id) else {
            throw CampusError.sealedSecretDamaged
        }
        return Data([version]) + kekID + wrappedBytes + sealedBytes
    }

    /// The KEK id an envelope names, or nil when it is no envelope.
    public static func kekID(of envelope: Data) -> String? {
        guard envelope.count > headerSize, envelope.first == version else { return nil }
        return envelope.dropFirst().prefix(8).map { String(format: "%02x", $0) }.joined()
    }

    /// The secret, opened with `kek` or with one of the previous keys it accepts.
    public static func open(_ envelope: Data, with kek: KeyEncryptionKey, context: String) throws -> Data {
        guard let sealedWith = kekID(of: envelope) else { throw CampusError.sealedSecretDamaged }
        guard let kek = kek.opening(sealedWith) else { throw CampusError.otherKeyEncryptionKey(sealedWith: sealedWith, given: kek.id) }
        let aad = Data(context.utf8)
        let body = envelope.dropFirst(9)
        do {
            let dataKey = try AES.GCM.open(AES.GCM.SealedBox(combined: body.prefix(wrappedKeySize)), using: kek.key, authenticating: aad)
            return try AES.GCM.open(
                AES.GCM.SealedBox(combined: body.dropFirst(wrappedKeySize)), using: SymmetricKey(data: dataKey), authenticating: aad)
        } catch {
            throw CampusError.sealedSecretDamaged
        }
    }

    /// The same secret under `new`: only the data key is re-sealed.
    /// `old` may be a ring: whichever of its keys sealed the envelope opens it.
    public static func rewrap(_ envelope: Data, from old: KeyEncryptionKey, to new: KeyEncryptionKey, context: String) throws -> Data {
        guard let sealedWith = kekID(of: envelope) else { throw CampusError.sealedSecretDamaged }
        guard let old = old.opening(sealedWith) else { throw CampusError.otherKeyEncryptionKey(sealedWith: sealedWith, given: old.id) }
        let aad = Data(context.utf8)
        let body = envelope.dropFirst(9)
        let dataKey: Data
        do {
            dataKey = try AES.GCM.open(AES.GCM.SealedBox(combined: body.prefix(wrappedKeySize)), using: old.key, authenticating: aad)
        } catch {
            throw CampusError.sealedSecretDamaged
        }
        guard let wrapped = try AES.GCM.seal(dataKey, using: new.key, authenticating: aad).combined, let kekID = Data(hex: new.id) else {
            throw CampusError.sealedSecretDamaged
        }
        return Data([version]) + kekID + wrapped + body.dropFirst(wrappedKeySize)
    }
}

extension Data {
    /// Bytes from hex text (two digits a byte), or nil.
    init?(hex: String) {
        var bytes: [UInt8] = []
        var iterator = hex.utf8.makeIterator()
        while let high = iterator.next() {
            guard let low = iterator.next(), let h = Self.nibble(high), let l = Self.nibble(low) else { return nil }
            bytes.append(h << 4 | l)
        }
        self.init(bytes)
    }

    private static func nibble(_ digit: UInt8) -> UInt8? {
        switch digit {
        case 0x30...0x39: digit - 0x30
        case 0x61...0x66: digit - 0x61 + 10
        case 0x41...0x46: digit - 0x41 + 10
        default: nil
        }
    }
}
