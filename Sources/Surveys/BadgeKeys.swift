import AttestFoundation
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
    /// Nil on a server without the key-encryption key: it can verify, not sign.
    let privateKey: P256.Signing.PrivateKey?
    /// The JWS protected header of the tokens this key signs, base64url-encoded once.
    let encodedHeader: String

    init(kid: String, publicKey: P256.Signing.PublicKey, retiredAt: Date?, privateKey: P256.Signing.PrivateKey?) {
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

    /// What a sealed private key is bound to: its campus and key id.
    static func sealingContext(campus: CampusID, kid: String) -> String { "attest badge key \(campus) \(kid)" }
}

/// The keys that sign a campus's badge tokens, and the key its badge subjects are made with.
///
/// A campus gets its first key when it is created; `attest campus rotate-badge-key` retires
/// the current key and makes a new one. A retired key keeps verifying (and stays in the
/// JWKS) for two days, longer than any badge lives (a badge expires at the end of its
/// campus-local day). Keys are read at most every 5 s per campus, so a rotation reaches
/// every server within that.
///
/// Private keys are stored sealed under the operator's key-encryption key (`SealedSecret`);
/// a store without one (`kek: nil`) reads public keys only: it verifies and publishes, and
/// refuses to sign.
public struct BadgeKeyStore: Sendable {
    let client: PostgresClient
    let kek: KeyEncryptionKey?
    private let cache = ExpiringCache<CampusID, [BadgeKey]>(ttl: .seconds(5))
    private let subjects = ExpiringCache<CampusID, SymmetricKey>(ttl: .seconds(300))

    /// How long a retired key stays published and verifying.
    public static let retiredKeyLifetime: TimeInterval = 2 * 86_400

    public init(client: PostgresClient, kek: KeyEncryptionKey?) {
        self.client = client
        self.kek = kek
    }

    /// Gives a new campus its first key and its badge-subject key: pass as
    /// `CampusStore.create(_:actor:setUp:)`.
    public func provision(_ connection: PostgresConnection, campus: CampusID) async throws {
        try await generate(connection, campus: campus)
        try await Self.makeSubjectKey(connection, campus: campus, kek: try requireKEK())
    }

    func requireKEK() throws -> KeyEncryptionKey {
        guard let kek else { throw CampusError.noKeyEncryptionKey }
        return kek
    }

    /// Makes a new current key for `campus` inside the caller's transaction; returns its kid.
    @discardableResult
    public func generate(_ connection: PostgresConnection, campus: CampusID) async throws -> String {
        let kek = try requireKEK()
        let key = P256.Signing.PrivateKey()
        let kid = Base64URL.encode(Data((0..<9).map { _ in UInt8.random(in: 0...255) }))
        let stored = BadgeKey(kid: kid, publicKey: key.publicKey, retiredAt: nil, privateKey: key)
        let sealed = try SealedSecret.seal(key.rawRepresentation, under: kek, context: BadgeKey.sealingContext(campus: campus, kid: kid))
        try await connection.query(
            """
            INSERT INTO badge_keys (campus_id, kid, algorithm, private_key, kek_id, public_jwk)
            VALUES (\(campus), \(kid), 'ES256', \(sealed), \(kek.id), \(try PostgresJSON(encoding: stored.jwk)))
            """)
        return kid
    }

    /// Retires the current key and makes a new one; audited. Returns the new kid.
    public func rotate(campus: Campus, actor: String) async throws -> (kid: String, retired: [String]) {
        let result = try await client.withTransaction(campus: campus.id.rawValue) { connection in
            try await refuseForeignKeys(connection, campus: campus.id)
            let retired = try await connection.query(
                """
                UPDATE badge_keys SET retired_at = now()
                WHERE campus_id = \(campus.id) AND retired_at IS NULL
                RETURNING kid
                """
            ).map { try $0.decode("kid", as: String.self) }
            let kid = try await generate(connection, campus: campus.id)
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
            SELECT kid, public_jwk, private_key, kek_id, retired_at FROM badge_keys
            WHERE campus_id = \(campus) AND algorithm = 'ES256'
              AND (retired_at IS NULL OR retired_at > now() - make_interval(secs => \(Self.retiredKeyLifetime)))
            ORDER BY retired_at DESC NULLS FIRST, created_at DESC
            """, campus: campus.rawValue)
        return try rows.map { row in
            let kid: String = try row.decode("kid")
            let jwk = try row.decode("public_jwk", as: PostgresJSON.self).decode(as: [String: String].self)
            guard let x = jwk["x"].flatMap({ Base64URL.decode(Substring($0)) }),
                let y = jwk["y"].flatMap({ Base64URL.decode(Substring($0)) }),
                let publicKey = try? P256.Signing.PublicKey(rawRepresentation: x + y)
            else { throw CampusError.sealedSecretDamaged }
            var privateKey: P256.Signing.PrivateKey?
            if let kek {
                let stored: Data = try row.decode("private_key")
                // A key stored before keys were sealed (kek_id NULL) is raw until `sealLegacyKeys`.
                let raw =
                    try row.decode("kek_id", as: String?.self) == nil
                    ? stored : try SealedSecret.open(stored, with: kek, context: BadgeKey.sealingContext(campus: campus, kid: kid))
                privateKey = try P256.Signing.PrivateKey(rawRepresentation: raw)
            }
            return BadgeKey(kid: kid, publicKey: publicKey, retiredAt: try row.decode("retired_at"), privateKey: privateKey)
        }
    }

    // MARK: Badge subjects

    static func subjectContext(campus: CampusID) -> String { "attest badge subject \(campus)" }

    static func makeSubjectKey(_ connection: PostgresConnection, campus: CampusID, kek: KeyEncryptionKey) async throws {
        let secret = SymmetricKey(size: .bits256).withUnsafeBytes { Data($0) }
        let sealed = try SealedSecret.seal(secret, under: kek, context: subjectContext(campus: campus))
        try await connection.query(
            """
            INSERT INTO badge_subject_keys (campus_id, sealed, kek_id) VALUES (\(campus), \(sealed), \(kek.id))
            ON CONFLICT (campus_id) DO NOTHING
            """)
    }

    /// The campus's key for badge subjects (made on first use for a campus older than it).
    public func subjectKey(campus: CampusID) async throws -> SymmetricKey {
        let (client, kek) = (client, try requireKEK())
        return try await subjects.value(for: campus) {
            try await client.withTransaction(campus: campus.rawValue) { connection in
                var rows = try await connection.query("SELECT sealed FROM badge_subject_keys WHERE campus_id = \(campus)")
                if rows.isEmpty {
                    try await Self.makeSubjectKey(connection, campus: campus, kek: kek)
                    rows = try await connection.query("SELECT sealed FROM badge_subject_keys WHERE campus_id = \(campus)")
                }
                guard let row = rows.first else { throw CampusError.sealedSecretDamaged }
                return SymmetricKey(
                    data: try SealedSecret.open(try row.decode("sealed"), with: kek, context: Self.subjectContext(campus: campus)))
            }
        }
    }

    /// A member's subject on the badges of one campus-local day: an HMAC of the pseudonym and
    /// the date under the campus's subject key, 128 bits in base64url. A door that scans the
    /// same member on two days sees two unrelated subjects.
    public static func subject(pseudonym: UUID, date: LocalDate, key: SymmetricKey) -> String {
        var message = withUnsafeBytes(of: pseudonym.uuid) { Data($0) }
        message.append(contentsOf: Array(date.description.utf8))
        return Base64URL.encode(Array(HMAC<SHA256>.authenticationCode(for: message, using: key)).prefix(16))
    }

    // MARK: Key-encryption keys

    /// Throws `otherKey` when a key of `campus` is sealed under another KEK than this store's:
    /// nothing new is sealed beside keys this store cannot open.
    func refuseForeignKeys(_ connection: PostgresConnection, campus: CampusID) async throws {
        let kek = try requireKEK()
        let foreign = try await connection.query(
            """
            SELECT kek_id FROM badge_keys WHERE campus_id = \(campus) AND kek_id <> ALL(\(kek.ids))
            UNION ALL SELECT kek_id FROM badge_subject_keys WHERE campus_id = \(campus) AND kek_id <> ALL(\(kek.ids))
            LIMIT 1
            """)
        if let other = try foreign.first?.decode("kek_id", as: String.self) {
            throw CampusError.otherKeyEncryptionKey(sealedWith: other, given: kek.id)
        }
    }

    /// What a server checks of each campus as it starts: keys stored before keys were sealed
    /// are sealed now under this store's KEK (returns how many), and a key sealed under
    /// another KEK stops the start, naming both fingerprints.
    @discardableResult
    public func prepare(campus: CampusID) async throws -> Int {
        let kek = try requireKEK()
        return try await client.withTransaction(campus: campus.rawValue) { connection in
            try await refuseForeignKeys(connection, campus: campus)
            let rows = try await connection.query(
                "SELECT kid, private_key FROM badge_keys WHERE campus_id = \(campus) AND kek_id IS NULL FOR UPDATE")
            for row in rows {
                let kid: String = try row.decode("kid")
                let sealed = try SealedSecret.seal(
                    try row.decode("private_key", as: Data.self), under: kek, context: BadgeKey.sealingContext(campus: campus, kid: kid))
                try await connection.query(
                    "UPDATE badge_keys SET private_key = \(sealed), kek_id = \(kek.id) WHERE campus_id = \(campus) AND kid = \(kid)")
            }
            return rows.count
        }
    }

    /// The columns this store seals, for `attest keys rotate-kek` (`SealedColumn`).
    public static let sealedColumns: [SealedColumn] = [
        SealedColumn(
            table: "badge_keys", column: "private_key", key: [.text("kid")], scope: .campus, kekIDColumn: "kek_id",
            condition: "kek_id IS NOT NULL"
        ) { campus, _, row in BadgeKey.sealingContext(campus: campus, kid: try row.decode("kid")) },
        SealedColumn(table: "badge_subject_keys", column: "sealed", key: [], scope: .campus, kekIDColumn: "kek_id") { campus, _, _ in
            subjectContext(campus: campus)
        },
    ]
}
