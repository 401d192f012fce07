import AttestPlugins
import AttestPostgres
import Crypto
import Foundation
import Tenancy

/// One of a campus's badge-signing keys (ES256, P-256).
public struct BadgeKey: Sendable {
    public var kid: String
    public var publicKey: P256.Signing.PublicKey
    /// Only the current key signs; retired keys still verify the tokens they signed.
    public var retiredAt: Date?
    let privateKey: P256.Signing.PrivateKey
    /// The JWS protected header of the tokens this key signs, base64url-encoded once.
    let encodedHeader: String

    init(kid: String, publicKey: P256.Signing.PublicKey, retiredAt: Date?, privateKey: P256.Signing.PrivateKey) {
        (self.kid, self.publicKey, self.retiredAt, self.privateKey) = (kid, publicKey, retiredAt, privateKey)
        var header = #"{"alg":"ES256","kid":"#
        JSONText.appendString(kid, to: &header)
        header += #","typ":"JWT"}"#
        encodedHeader = Base64URL.encode(Array(header.utf8))
    }

    /// The key as a JSON Web Key (RFC 7517/7518): what `GET …/badge-keys` publishes.
    public var jwk: [String: String] {
        let point = publicKey.rawRepresentation  // x ‖ y, 32 bytes each
        return [
            "kty": "EC", "crv": "P-256", "alg": "ES256", "use": "sig", "kid": kid,
            "x": Base64URL.encode(point.prefix(32)), "y": Base64URL.encode(point.suffix(32)),
        ]
    }
}

/// The keys that sign a campus's badge tokens.
///
/// A campus gets its first key when it is created; `attest campus rotate-badge-key` retires
/// the current key and makes a new one. A retired key keeps verifying (and stays in the
/// JWKS) for two days, longer than any badge lives (a badge expires at the end of its
/// campus-local day). Keys are read at most every 5 s per campus, so a rotation reaches
/// every server within that.
public struct BadgeKeyStore: Sendable {
    let client: PostgresClient
    private let cache = ExpiringCache<CampusID, [BadgeKey]>(ttl: .seconds(5))

    /// How long a retired key stays published and verifying.
    public static let retiredKeyLifetime: TimeInterval = 2 * 86_400

    public init(client: PostgresClient) { self.client = client }

    /// Gives a new campus its first key: pass as `CampusStore.create(_:actor:setUp:)`.
    public static func provision(_ connection: PostgresConnection, campus: CampusID) async throws {
        try await generate(connection, campus: campus)
    }

    /// Makes a new current key for `campus` inside the caller's transaction; returns its kid.
    @discardableResult
    public static func generate(_ connection: PostgresConnection, campus: CampusID) async throws -> String {
        let key = P256.Signing.PrivateKey()
        let kid = Base64URL.encode(Data((0..<9).map { _ in UInt8.random(in: 0...255) }))
        let stored = BadgeKey(kid: kid, publicKey: key.publicKey, retiredAt: nil, privateKey: key)
        try await connection.query(
            """
            INSERT INTO badge_keys (campus_id, kid, algorithm, private_key, public_jwk)
            VALUES (\(campus), \(kid), 'ES256', \(key.rawRepresentation), \(try PostgresJSON(encoding: stored.jwk)))
            """)
        return kid
    }

    /// Retires the current key and makes a new one; audited. Returns the new kid.
    public func rotate(campus: Campus, actor: String) async throws -> (kid: String, retired: [String]) {
        let result = try await client.withTransaction(campus: campus.id.rawValue) { connection in
            let retired = try await connection.query(
                """
                UPDATE badge_keys SET retired_at = now()
                WHERE campus_id = \(campus.id) AND retired_at IS NULL
                RETURNING kid
                """
            ).map { try $0.decode("kid", as: String.self) }
            let kid = try await Self.generate(connection, campus: campus.id)
            try await AuditLog.record(
                connection, campus: campus.id, actor: actor, action: "badge-key.rotate", target: kid,
                details: ["retired": retired.joined(separator: ",")])
            return (kid, retired)
        }
        cache.store(try await load(campus: campus.id), for: campus.id)
        return result
    }

    /// The campus's current key and the retired keys still verifying, newest first.
    public func keys(campus: CampusID) async throws -> [BadgeKey] {
        try await cache.value(for: campus) { try await load(campus: campus) }
    }

    private func load(campus: CampusID) async throws -> [BadgeKey] {
        let rows = try await client.query(
            """
            SELECT kid, private_key, retired_at FROM badge_keys
            WHERE campus_id = \(campus) AND algorithm = 'ES256'
              AND (retired_at IS NULL OR retired_at > now() - make_interval(secs => \(Self.retiredKeyLifetime)))
            ORDER BY retired_at DESC NULLS FIRST, created_at DESC
            """, campus: campus.rawValue)
        return try rows.map { row in
            let key = try P256.Signing.PrivateKey(rawRepresentation: try row.decode("private_key", as: Data.self))
            return BadgeKey(kid: try row.decode("kid"), publicKey: key.publicKey, retiredAt: try row.decode("retired_at"), privateKey: key)
        }
    }
}

/// base64url without padding (RFC 4648 §5), as JOSE uses it, written and read byte by byte.
/// (Every badge read signs a token; Foundation's base64 and string replacing cost three
/// times the signature.) Decoding is strict: no padding, no other alphabet, and the unused
/// bits of the last character must be zero, so one token has one spelling.
enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
    private static let values: [UInt8] = {
        var values = [UInt8](repeating: 0xFF, count: 256)
        for (value, character) in alphabet.enumerated() { values[Int(character)] = UInt8(value) }
        return values
    }()

    static func encode(_ data: some DataProtocol) -> String {
        let bytes = Array(data)
        return String(unsafeUninitializedCapacity: (bytes.count * 4 + 2) / 3) { output in
            var written = 0
            func put(_ bits: UInt32, _ shift: UInt32) {
                output[written] = alphabet[Int(bits >> shift & 63)]
                written += 1
            }
            var index = 0
            while index + 3 <= bytes.count {
                let bits = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
                put(bits, 18); put(bits, 12); put(bits, 6); put(bits, 0)
                index += 3
            }
            switch bytes.count - index {
            case 1:
                let bits = UInt32(bytes[index]) << 16
                put(bits, 18); put(bits, 12)
            case 2:
                let bits = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8
                put(bits, 18); put(bits, 12); put(bits, 6)
            default:
                break
            }
            return written
        }
    }

    static func decode(_ text: Substring) -> Data? {
        let characters = text.utf8
        guard characters.count % 4 != 1 else { return nil }
        var output = Data(capacity: characters.count * 3 / 4)
        var bits: UInt32 = 0, pending = 0
        for character in characters {
            let value = values[Int(character)]
            guard value != 0xFF else { return nil }
            bits = bits << 6 | UInt32(value)
            pending += 6
            if pending >= 8 {
                pending -= 8
                output.append(UInt8(truncatingIfNeeded: bits >> UInt32(pending)))
            }
        }
        guard bits & (1 << UInt32(pending) - 1) == 0 else { return nil }
        return output
    }
}
