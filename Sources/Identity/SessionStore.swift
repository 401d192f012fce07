import AttestPlugins
import AttestPostgres
import Crypto
import Foundation
import Tenancy

/// Opaque session tokens the server issues after sign-in (or `attest token issue`).
///
/// A token is 256 random bits, base64url; only its SHA-256 hash is stored. Verified tokens
/// are cached in memory for `cacheTTL` (default 5 s), so a hot token costs no database round
/// trip, and concurrent misses of a campus share one query. A revocation takes effect at once
/// on the server that revoked it and within `cacheTTL` everywhere else, and so do role changes.
public final class SessionStore: Sendable {
    /// A verified session: who, and until when.
    public struct Session: Sendable {
        public var user: User
        public var expiresAt: Date
    }

    struct Key: Hashable, Sendable {
        var campus: CampusID
        var hash: Data
    }

    let client: PostgresClient
    let cacheTTL: Duration
    /// About `cacheTTL`'s worth of distinct tokens (see `ExpiringCache`), at most 100,000.
    let cache: ExpiringCache<Key, Session>

    public init(client: PostgresClient, cacheTTL: Duration = .seconds(5)) {
        self.client = client
        self.cacheTTL = cacheTTL
        self.cache = ExpiringCache(ttl: cacheTTL, limit: 100_000)
        self.lookups = LookupBatcher { campus, hashes in try await Self.load(client, campus: campus, hashes: hashes) }
    }

    /// Concurrent cache misses of one campus are looked up together, one query per batch.
    private let lookups: LookupBatcher<CampusID, Data, Session>

    /// The live sessions among `hashes`, by hash.
    private static func load(_ client: PostgresClient, campus: CampusID, hashes: [Data]) async throws -> [Data: Session] {
        let rows = try await client.query(
            """
            SELECT s.token_hash, s.expires_at, \(UserStore.columns)
            FROM sessions s JOIN users u ON u.campus_id = s.campus_id AND u.id = s.user_id
            WHERE s.campus_id = \(campus) AND s.token_hash = ANY(\(hashes))
              AND s.revoked_at IS NULL AND s.expires_at > now() AND u.active
            """, campus: campus.rawValue)
        var sessions: [Data: Session] = [:]
        for row in rows {
            sessions[try row.decode("token_hash", as: Data.self)] = Session(
                user: try UserStore.user(from: row), expiresAt: try row.decode("expires_at"))
        }
        return sessions
    }

    /// Creates a session for `user` lasting `lifetime` seconds (default: the campus's
    /// session lifetime) and returns the token, which is never stored or shown again.
    public func issue(
        campus: Campus, user: UserID, lifetime: Int? = nil, audit: (actor: String, target: String)? = nil
    ) async throws -> (token: String, expiresAt: Date) {
        let token = Self.newToken()
        let expiresAt = Date().addingTimeInterval(TimeInterval(lifetime ?? campus.sessionLifetimeSeconds))
        try await client.withTransaction(campus: campus.id.rawValue) { connection in
            try await connection.query(
                """
                INSERT INTO sessions (campus_id, token_hash, user_id, expires_at)
                VALUES (\(campus.id), \(Self.hash(token)), \(user), \(expiresAt))
                """)
            if let audit {
                try await AuditLog.record(
                    connection, campus: campus.id, actor: audit.actor, action: "token.issue", target: audit.target,
                    details: ["expiresAt": expiresAt.ISO8601Format()])
            }
        }
        return (token, expiresAt)
    }

    /// The session a bearer token stands for at `campus`, or nil when it is malformed,
    /// unknown there, expired or revoked. A token from another campus is unknown here.
    public func authenticate(campus: CampusID, token: String) async throws -> Session? {
        guard Self.isWellFormed(token) else { return nil }
        let key = Key(campus: campus, hash: Self.hash(token))
        if let session = cache.value(for: key), session.expiresAt > Date() { return session }
        let asOf = ContinuousClock.now  // a revocation after this instant shows within cacheTTL of it
        guard let session = try await lookups.value(for: key.hash, in: campus) else {
            cache.remove(key)
            return nil
        }
        cache.store(session, for: key, at: asOf)
        return session
    }

    /// The session of a token verified within `cacheTTL` on this server, without asking the
    /// database; nil otherwise (not that it is invalid).
    public func cached(campus: CampusID, token: String) -> Session? {
        guard Self.isWellFormed(token), let session = cache.value(for: Key(campus: campus, hash: Self.hash(token))),
            session.expiresAt > Date()
        else { return nil }
        return session
    }

    /// Revokes a token (idempotent); true when it was live.
    @discardableResult
    public func revoke(campus: CampusID, token: String) async throws -> Bool {
        guard Self.isWellFormed(token) else { return false }
        let hash = Self.hash(token)
        cache.remove(Key(campus: campus, hash: hash))
        let rows = try await client.query(
            """
            UPDATE sessions SET revoked_at = now()
            WHERE campus_id = \(campus) AND token_hash = \(hash) AND revoked_at IS NULL
            """, campus: campus.rawValue)
        return rows.affectedRows > 0
    }

    // MARK: Tokens

    /// 32 bytes from the system's CSPRNG, base64url without padding (43 characters).
    public static func newToken() -> String {
        SymmetricKey(size: .bits256).withUnsafeBytes { Data($0) }.base64URLEncoded()
    }

    static func hash(_ token: String) -> Data { Data(SHA256.hash(data: Data(token.utf8))) }

    /// Whether `token` has the shape of one this store issues (43 base64url characters).
    public static func isWellFormed(_ token: String) -> Bool {
        token.utf8.count == 43
            && token.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) || $0 == 0x2D || $0 == 0x5F }
    }
}

extension Data {
    /// base64url without padding (RFC 4648 §5), as JWS and these tokens use.
    public func base64URLEncoded() -> String {
        base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    public init?(base64URLEncoded text: some StringProtocol) {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        self.init(base64Encoded: base64)
    }
}
