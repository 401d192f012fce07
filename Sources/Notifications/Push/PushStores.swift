import AttestFoundation
import AttestPlugins
import AttestPostgres
import Crypto
import Foundation
import Tenancy

/// Each campus's VAPID key (RFC 8292), made on first use and sealed under the key-encryption
/// key. One per campus, not per deployment: a browser's subscription is bound to the key it
/// was made with, so one campus's key can push to no other campus's members.
public struct PushKeyStore: Sendable {
    let client: PostgresClient
    let kek: KeyEncryptionKey?
    private let cache = ExpiringCache<CampusID, VAPIDKey>(ttl: .seconds(60))

    public init(client: PostgresClient, kek: KeyEncryptionKey?) {
        self.client = client
        self.kek = kek
    }

    static func context(_ campus: CampusID) -> String { "vapid:\(campus.rawValue.uuidString)" }

    /// The column this store seals, for `attest keys rotate-kek` (`SealedColumn`).
    public static let sealedColumns: [SealedColumn] = [
        SealedColumn(table: "push_keys", column: "private_key", key: [], scope: .campus) { campus, _, _ in context(campus) }
    ]

    /// The campus's key, made (and stored sealed) the first time it is asked for. Kept a minute;
    /// `current` (the public key the database holds now, read beside the work that needs the
    /// key) makes a key renewed by another process since be read at once.
    public func key(campus: CampusID, current: String? = nil) async throws -> VAPIDKey {
        let (client, kek) = (client, kek)
        let key = try await cache.value(for: campus, orLoad: { try await Self.load(campus: campus, client: client, kek: kek) })
        guard let current, current != key.publicKeyText else { return key }
        cache.remove(campus)
        return try await cache.value(for: campus, orLoad: { try await Self.load(campus: campus, client: client, kek: kek) })
    }

    /// The campus's public key as the database holds it now (never a cached one: a browser
    /// subscribes with it), made the first time it is asked for.
    public func publicKey(campus: CampusID) async throws -> String {
        let rows = try await client.query("SELECT public_key FROM push_keys WHERE campus_id = \(campus)", campus: campus.rawValue)
        if let row = rows.first { return try row.decode("public_key") }
        return try await key(campus: campus).publicKeyText
    }

    private static func load(campus: CampusID, client: PostgresClient, kek: KeyEncryptionKey?) async throws -> VAPIDKey {
        guard let kek else { throw CampusError.noKeyEncryptionKey }
        return try await client.withTransaction(campus: campus.rawValue) { connection in
            func stored() async throws -> VAPIDKey? {
                guard let row = try await connection.query("SELECT private_key FROM push_keys WHERE campus_id = \(campus)").first
                else { return nil }
                let raw = try SealedSecret.open(try row.decode("private_key", as: Data.self), with: kek, context: context(campus))
                return VAPIDKey(privateKey: try P256.Signing.PrivateKey(rawRepresentation: raw))
            }
            if let key = try await stored() { return key }
            let key = VAPIDKey(privateKey: P256.Signing.PrivateKey())
            let sealed = try SealedSecret.seal(key.privateKey.rawRepresentation, under: kek, context: context(campus))
            let inserted = try await connection.query(
                """
                INSERT INTO push_keys (campus_id, private_key, public_key) VALUES (\(campus), \(sealed), \(key.publicKeyText))
                ON CONFLICT (campus_id) DO NOTHING
                """)
            if inserted.affectedRows == 1 { return key }
            // Another server made it first: theirs.
            guard let theirs = try await stored() else { throw CampusError.sealedSecretDamaged }
            return theirs
        }
    }

    /// A new key for the campus (`attest push keys new`): every browser subscribed with the old
    /// one is forgotten, since push services refuse it for them; members subscribe again on
    /// Settings. Audited. Returns the new public key.
    public func renew(campus: Campus, actor: String) async throws -> String {
        guard let kek else { throw CampusError.noKeyEncryptionKey }
        let key = VAPIDKey(privateKey: P256.Signing.PrivateKey())
        let sealed = try SealedSecret.seal(key.privateKey.rawRepresentation, under: kek, context: Self.context(campus.id))
        try await client.withTransaction(campus: campus.id.rawValue) { connection in
            try await connection.query(
                """
                INSERT INTO push_keys (campus_id, private_key, public_key) VALUES (\(campus.id), \(sealed), \(key.publicKeyText))
                ON CONFLICT (campus_id) DO UPDATE SET private_key = excluded.private_key, public_key = excluded.public_key, created_at = now()
                """)
            let removed = try await connection.query("DELETE FROM push_subscriptions WHERE campus_id = \(campus.id)").affectedRows
            try await AuditLog.record(
                connection, campus: campus.id, actor: actor, action: "push.key.renew", target: key.publicKeyText,
                details: ["subscriptionsForgotten": "\(removed)"])
        }
        cache.remove(campus.id)
        return key.publicKeyText
    }
}

/// A browser's push subscription, as `PushSubscription.toJSON()` gives it.
public struct PushSubscription: Sendable, Equatable {
    public var endpoint: URL
    /// The browser's P-256 public key, uncompressed (65 bytes).
    public var p256dh: Data
    /// The 16-byte authentication secret.
    public var auth: Data

    public init(endpoint: URL, p256dh: Data, auth: Data) {
        (self.endpoint, self.p256dh, self.auth) = (endpoint, p256dh, auth)
    }

    /// Reads `{"endpoint", "keys": {"p256dh", "auth"}}`; the problems name each field.
    public static func parse(_ value: JSONValue) -> (subscription: PushSubscription?, problems: [(field: String, message: String)]) {
        var problems: [(String, String)] = []
        var endpoint: URL?
        if case .string(let text)? = value["endpoint"], text.utf8.count <= 2048, let url = OutboundURL.parse(text) {
            endpoint = url
        } else {
            problems.append(("endpoint", "must be the push service's https URL (at most 2,048 characters) from PushSubscription.endpoint"))
        }
        var p256dh: Data?, auth: Data?
        if let expiration = value["expirationTime"] {
            switch expiration {
            case .null, .number: break
            default: problems.append(("expirationTime", "must be a number of milliseconds or null, as the browser gives it"))
            }
        }
        if case .object(let keys)? = value["keys"], let extra = keys.keys.first(where: { $0 != "p256dh" && $0 != "auth" }) {
            problems.append(("keys.\(extra.prefix(40))", "is not a key of a push subscription; keys has p256dh and auth"))
        }
        func base64URL(_ text: String, characters: Int) -> Data? {
            guard text.utf8.count == characters, isBase64URL(text) else { return nil }
            return Data(base64URLEncoded: text)
        }
        if case .string(let text)? = value["keys"]?["p256dh"], let bytes = base64URL(text, characters: 87),
            bytes.count == 65, (try? P256.KeyAgreement.PublicKey(x963Representation: bytes)) != nil
        {
            p256dh = bytes
        } else {
            problems.append(("keys.p256dh", "must be the browser's P-256 public key, base64url of 65 bytes (getKey(\"p256dh\"))"))
        }
        if case .string(let text)? = value["keys"]?["auth"], let bytes = base64URL(text, characters: 22), bytes.count == 16 {
            auth = bytes
        } else {
            problems.append(("keys.auth", "must be the subscription's secret, base64url of 16 bytes (getKey(\"auth\"))"))
        }
        guard let endpoint, let p256dh, let auth, problems.isEmpty else { return (nil, problems) }
        return (PushSubscription(endpoint: endpoint, p256dh: p256dh, auth: auth), [])
    }

    private static func isBase64URL(_ text: String) -> Bool {
        text.utf8.allSatisfy {
            (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x2D || $0 == 0x5F
        }
    }

    /// The `applicationServerKey` a client may send beside the subscription: the campus's
    /// public key the browser subscribed with, as `GET …/push-key` gave it; nil when not sent.
    public static func madeWith(_ value: JSONValue) -> (key: String?, problem: (field: String, message: String)?) {
        guard let sent = value["applicationServerKey"] else { return (nil, nil) }
        if case .string(let text) = sent, text.utf8.count == 87, isBase64URL(text) { return (text, nil) }
        return (
            nil,
            (
                "applicationServerKey",
                "must be the campus's push key this browser subscribed with, as GET …/push-key gave it (base64url, 87 characters)"
            )
        )
    }

    /// The sealed form's plaintext: the three values, JSON.
    var stored: Data {
        (try? JSONEncoder().encode([
            "endpoint": endpoint.absoluteString, "p256dh": p256dh.base64URLEncoded(), "auth": auth.base64URLEncoded(),
        ]))
            ?? Data()
    }

    init?(stored: Data) {
        guard let value = try? JSONValue(parsing: stored), case .string(let endpoint)? = value["endpoint"],
            let url = URL(string: endpoint), case .string(let key)? = value["p256dh"], let p256dh = Data(base64URLEncoded: key),
            case .string(let secret)? = value["auth"], let auth = Data(base64URLEncoded: secret)
        else { return nil }
        self.init(endpoint: url, p256dh: p256dh, auth: auth)
    }

    static func hash(_ endpoint: URL) -> Data { Data(SHA256.hash(data: Data(endpoint.absoluteString.utf8))) }
}

/// Members' browser subscriptions, sealed (`push_subscriptions`).
public struct PushSubscriptionStore: Sendable {
    let client: PostgresClient
    let kek: KeyEncryptionKey?
    /// A member's browsers kept at most; a new one past it replaces the oldest.
    public static let perMember = 10

    public init(client: PostgresClient, kek: KeyEncryptionKey?) {
        self.client = client
        self.kek = kek
    }

    static func context(_ campus: CampusID, _ id: UUID) -> String { "push-subscription:\(campus.rawValue.uuidString):\(id.uuidString)" }

    /// The column this store seals, for `attest keys rotate-kek` (`SealedColumn`).
    public static let sealedColumns: [SealedColumn] = [
        SealedColumn(table: "push_subscriptions", column: "subscription", key: [.uuid("user_id"), .uuid("id")], scope: .campus) {
            campus, _, row in context(campus, try row.decode("id"))
        }
    ]

    /// A subscription made with a key the campus no longer has (`attest push keys new` ran
    /// after the browser was given it): push services would refuse every message to it.
    public struct KeyRenewed: Error, Sendable, Equatable {}

    /// Keeps `subscription` for the member (the same endpoint again replaces its keys, even
    /// another member's: a browser is one person's at a time). Returns its id. `madeWith`, the
    /// public key the browser subscribed with when its client says so, must be the campus's
    /// key now (else `KeyRenewed`, nothing kept).
    public func add(campus: CampusID, user: UserID, _ subscription: PushSubscription, madeWith: String? = nil) async throws -> UUID {
        guard let kek else { throw CampusError.noKeyEncryptionKey }
        let id = UUID()
        let sealed = try SealedSecret.seal(subscription.stored, under: kek, context: Self.context(campus, id))
        let hash = PushSubscription.hash(subscription.endpoint)
        return try await client.withTransaction(campus: campus.rawValue) { connection in
            if let madeWith {
                // Read under the key's row lock, so a renewal cannot pass between the check and the insert.
                let current = try await connection.query(
                    "SELECT public_key FROM push_keys WHERE campus_id = \(campus) FOR SHARE"
                ).first.map { try $0.decode("public_key", as: String.self) }
                if let current, current != madeWith { throw KeyRenewed() }
            }
            try await connection.query("DELETE FROM push_subscriptions WHERE campus_id = \(campus) AND endpoint_hash = \(hash)")
            try await connection.query(
                """
                INSERT INTO push_subscriptions (campus_id, user_id, id, endpoint_hash, subscription)
                VALUES (\(campus), \(user), \(id), \(hash), \(sealed))
                """)
            try await connection.query(
                """
                DELETE FROM push_subscriptions WHERE campus_id = \(campus) AND user_id = \(user) AND id IN (
                    SELECT id FROM push_subscriptions WHERE campus_id = \(campus) AND user_id = \(user)
                    ORDER BY created_at DESC, id OFFSET \(Self.perMember))
                """)
            return id
        }
    }

    /// Forgets the member's subscription with `endpoint`; false when they had none.
    public func remove(campus: CampusID, user: UserID, endpoint: URL) async throws -> Bool {
        try await client.query(
            """
            DELETE FROM push_subscriptions
            WHERE campus_id = \(campus) AND user_id = \(user) AND endpoint_hash = \(PushSubscription.hash(endpoint))
            """, campus: campus.rawValue
        ).affectedRows > 0
    }

    /// The member's subscriptions, opened.
    public func list(campus: CampusID, user: UserID) async throws -> [(id: UUID, subscription: PushSubscription)] {
        try await sending(campus: campus, user: user).subscriptions
    }

    /// The member's subscriptions, opened, and the campus's public key now (nil before it has
    /// one), in one read: what a push needs, so that a key renewed elsewhere signs it.
    func sending(campus: CampusID, user: UserID) async throws -> (
        subscriptions: [(id: UUID, subscription: PushSubscription)], publicKey: String?
    ) {
        guard let kek else { throw CampusError.noKeyEncryptionKey }
        let rows = try await client.query(
            """
            SELECT id, subscription, (SELECT public_key FROM push_keys WHERE campus_id = \(campus)) AS public_key
            FROM push_subscriptions WHERE campus_id = \(campus) AND user_id = \(user) ORDER BY created_at
            """,
            campus: campus.rawValue)
        let subscriptions: [(id: UUID, subscription: PushSubscription)] = try rows.compactMap { row in
            let id: UUID = try row.decode("id")
            let opened = try SealedSecret.open(try row.decode("subscription", as: Data.self), with: kek, context: Self.context(campus, id))
            return PushSubscription(stored: opened).map { (id, $0) }
        }
        return (subscriptions, try rows.first?.decode("public_key", as: String?.self))
    }

    /// Forgets a subscription the push service says is gone (404, 410).
    func forget(campus: CampusID, id: UUID) async throws {
        try await client.query("DELETE FROM push_subscriptions WHERE campus_id = \(campus) AND id = \(id)", campus: campus.rawValue)
    }
}
