import AttestFoundation
import AttestPlugins
import AttestPostgres
import Crypto
import Foundation
import Synchronization
import Tenancy

/// Opaque session tokens the server issues after sign-in (or `attest token issue`).
///
/// A token is 256 random bits, base64url; only its SHA-256 hash is stored. Verified sessions
/// are kept in memory, and concurrent misses of a campus share one query. How long one is
/// kept depends on `generations` (see `AuthGenerations`): while this server reads its campus's
/// sign-in generation every second, a session stays as long as the generation it was verified
/// under (at most `maxAge`, default 60 s) and it is used at least once every `cacheTTL` or so
/// or holds a kept badge (see `SessionTable`), and a sign-out, role change or rename on any
/// server moves the generation on, so every server drops the campus's sessions within about
/// a second.
/// Without a current generation (no poll running, as in the CLI, or the database unreachable
/// for 3 s) a session is kept for `cacheTTL` (default 5 s) only. A revocation takes effect at
/// once on the server that revoked it.
public final class SessionStore: Sendable {
    /// A verified session: who, and until when.
    /// A verified session: who, and until when. A class, since a server keeps a great many
    /// (its cache holds a reference each); as a `KeptValue` it is also the place where a
    /// route keeps something with it for as long as the server keeps the session (a coloured
    /// badge): the next verification from the database starts with nothing kept.
    public final class Session: KeptValue, @unchecked Sendable {  // immutable but for KeptValue's Mutex
        public let user: User
        public let expiresAt: Date
        /// Minted by an operator (`attest token issue`), not signed in to by the member: it
        /// opens none of the member's private data.
        public let byOperator: Bool
        /// The campus's sign-in generation it was verified under; `Int64.min` when none was current.
        let generation: Int64
        /// When its verification's read began, in nanoseconds on `SessionStore.clock`.
        let verifiedAt: Int64
        /// Whether it was used since the cache's last rebuild (see `SessionTable`).
        private let reused = Atomic<Bool>(false)

        func markReused() {
            if !reused.load(ordering: .relaxed) { reused.store(true, ordering: .relaxed) }
        }

        /// Whether it was used since the last call, and from now on not.
        func takeReused() -> Bool { reused.exchange(false, ordering: .relaxed) }

        init(user: User, expiresAt: Date, byOperator: Bool = false, generation: Int64 = .min, verifiedAt: Int64 = .min) {
            (self.user, self.expiresAt, self.byOperator, self.generation, self.verifiedAt) = (
                user, expiresAt, byOperator, generation, verifiedAt
            )
        }

        func verified(under generation: Int64?, at instant: Int64) -> Session {
            Session(user: user, expiresAt: expiresAt, byOperator: byOperator, generation: generation ?? .min, verifiedAt: instant)
        }
    }

    /// The instants sessions are verified at, as nanoseconds since the first use.
    static let clock = ContinuousClock.now

    static func now() -> Int64 { (ContinuousClock.now - clock).clampedNanoseconds }

    /// `until - since`, saturating (an instant may be `Int64.min`, "never").
    static func elapsed(since: Int64, until: Int64) -> Int64 {
        let (difference, overflow) = until.subtractingReportingOverflow(since)
        return overflow ? (until > since ? .max : .min) : difference
    }

    /// The first 128 bits of a token's SHA-256, held inline: enough to tell tokens apart (no
    /// one can make a token whose hash begins as another's), and small, since a server keeps
    /// a great many. The campus is checked against the kept session's own.
    struct Key: Hashable, Sendable {
        var high: UInt64
        var low: UInt64

        init(high: UInt64, low: UInt64) { (self.high, self.low) = (high, low) }

        init(hash: Data) {
            var words: (UInt64, UInt64) = (0, 0)
            withUnsafeMutableBytes(of: &words) { $0.copyBytes(from: hash.prefix(16)) }
            (high, low) = words
        }

        init(hash: UnsafeRawBufferPointer) {
            var words: (UInt64, UInt64) = (0, 0)
            withUnsafeMutableBytes(of: &words) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: hash.prefix(16))) }
            (high, low) = words
        }
    }

    let client: PostgresClient
    let cacheTTL: Duration
    let generations: AuthGenerations?
    /// At most `maxAge`: the sessions used within the last `cacheTTL` or two, at most
    /// 200,000 (see `SessionTable`).
    let cache: SessionTable

    public init(
        client: PostgresClient, cacheTTL: Duration = .seconds(5), generations: AuthGenerations? = nil,
        maxAge: Duration = .seconds(60)
    ) {
        self.client = client
        self.cacheTTL = cacheTTL
        self.generations = generations
        self.cache = SessionTable(ttl: generations == nil ? cacheTTL : max(maxAge, cacheTTL), period: cacheTTL, limit: 200_000)
        self.lookups = LookupBatcher { campus, hashes in try await Self.load(client, campus: campus, hashes: hashes) }
    }

    /// Concurrent cache misses of one campus are looked up together, one query per batch.
    private let lookups: LookupBatcher<CampusID, Data, Session>

    /// The cached session for `key`, if it may still be trusted.
    private func fresh(_ key: Key, campus: CampusID) -> Session? {
        let now = Self.now()
        guard let session = cache.value(for: key, now: now), session.user.campusID == campus, session.expiresAt > Date() else {
            return nil
        }
        if let current = generations?.current(campus) { return session.generation == current ? session : nil }
        return Self.elapsed(since: session.verifiedAt, until: now) < cacheTTL.clampedNanoseconds ? session : nil
    }

    /// The live sessions among `hashes`, by hash.
    private static func load(_ client: PostgresClient, campus: CampusID, hashes: [Data]) async throws -> [Data: Session] {
        let rows = try await client.query(live(campus: campus, hashes: hashes), campus: campus.rawValue)
        var sessions: [Data: Session] = [:]
        for row in rows {
            sessions[try row.decode("token_hash", as: Data.self)] = try session(from: row)
        }
        return sessions
    }

    /// The live sessions among `hashes` (SHA-256 of tokens) at `campus` and their active
    /// members, as a statement another module can also use as a row source, reading what it
    /// needs of each member in the same statement (one round trip where a request needs both;
    /// see `AttestationService.submitter`). Columns: `token_hash`, `expires_at` and the member's
    /// (`id`, `campus_id`, `email`, `display_name`, `created_at`, `roles`). Decode a row with
    /// `session(from:)`, and keep what was found with `keep(_:hash:verification:)`.
    public static func live(campus: CampusID, hashes: [Data]) -> SQL {
        """
        SELECT s.token_hash, s.expires_at, s.by_operator, \(UserStore.columns)
        FROM sessions s JOIN users u ON u.campus_id = s.campus_id AND u.id = s.user_id
        WHERE s.campus_id = \(campus) AND s.token_hash = ANY(\(hashes))
          AND s.revoked_at IS NULL AND s.expires_at > now() AND u.active
        """
    }

    /// A NULL for each column of `live(campus:hashes:)`: the start of a row of another kind
    /// in a `UNION ALL` with it.
    public static let noLiveColumns = SQL(unsafeSQL: Array(repeating: "NULL", count: 10).joined(separator: ", "))

    /// The session in a row of `live(campus:hashes:)`.
    public static func session(from row: PostgresRow) throws -> Session {
        Session(user: try UserStore.user(from: row), expiresAt: try row.decode("expires_at"), byOperator: try row.decode("by_operator"))
    }

    /// What a verification from the database is kept under: taken before the read, so a
    /// change committed after it moves the generation on past this one, and without a
    /// generation the entry lasts `cacheTTL` from this instant.
    public struct Verification: Sendable {
        let campus: CampusID
        let asOf: Int64
        let generation: Int64?
    }

    /// Call before reading sessions with `live(campus:hashes:)`.
    public func verification(campus: CampusID) -> Verification {
        Verification(campus: campus, asOf: Self.now(), generation: generations?.current(campus))
    }

    /// Keeps the outcome of a read that began at `verification`: the session found for
    /// `hash` (as `authenticate` would have kept it), or none, which forgets any kept one.
    public func keep(_ session: Session?, hash: Data, verification: Verification) -> Session? {
        let key = Key(hash: hash)
        guard let session, session.user.campusID == verification.campus else {
            cache.remove(key)
            return nil
        }
        let kept = session.verified(under: verification.generation, at: verification.asOf)
        cache.store(kept, for: key, now: Self.now())
        return kept
    }

    /// Creates a session for `user` lasting `lifetime` seconds (default: the campus's
    /// session lifetime) and returns the token, which is never stored or shown again.
    /// `byOperator`: minted by an operator, not signed in to by the member (`Session.byOperator`).
    public func issue(
        campus: Campus, user: UserID, lifetime: Int? = nil, audit: (actor: String, target: String)? = nil, byOperator: Bool = false
    ) async throws -> (token: String, expiresAt: Date) {
        let token = Self.newToken()
        let expiresAt = Date().addingTimeInterval(TimeInterval(lifetime ?? campus.sessionLifetimeSeconds))
        try await client.withTransaction(campus: campus.id.rawValue) { connection in
            try await connection.query(
                """
                INSERT INTO sessions (campus_id, token_hash, user_id, expires_at, by_operator)
                VALUES (\(campus.id), \(Self.hash(token)), \(user), \(expiresAt), \(byOperator))
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
        guard let token = SessionToken(token) else { return nil }
        return try await authenticate(campus: campus, token: token)
    }

    /// `authenticate(campus:token:)` for a token already hashed.
    public func authenticate(campus: CampusID, token: SessionToken) async throws -> Session? {
        if let session = fresh(token.key, campus: campus) { return session }
        let verification = verification(campus: campus), hash = token.hash
        return keep(try await lookups.value(for: hash, in: campus), hash: hash, verification: verification)
    }

    /// The session of a token this server verified and may still trust (see the type's
    /// comment), without asking the database; nil otherwise (not that it is invalid).
    public func cached(campus: CampusID, token: String) -> Session? {
        SessionToken(token).flatMap { cached(campus: campus, token: $0) }
    }

    /// `cached(campus:token:)` for a token already hashed.
    public func cached(campus: CampusID, token: SessionToken) -> Session? { fresh(token.key, campus: campus) }

    /// Whether this server keeps a session for `token` at `campus`, trusted now or not (one
    /// whose campus's generation moved on is verified again at its next use): a token found
    /// valid here lately, which the allowance of unknown tokens does not hold back.
    public func recognises(campus: CampusID, token: SessionToken) -> Bool {
        cache.value(for: token.key, now: Self.now())?.user.campusID == campus
    }

    /// Revokes a token (idempotent); true when it was live.
    @discardableResult
    public func revoke(campus: CampusID, token: String) async throws -> Bool {
        guard Self.isWellFormed(token) else { return false }
        let hash = Self.hash(token)
        cache.remove(Key(hash: hash))
        return try await client.withTransaction(campus: campus.rawValue) { connection in
            let rows = try await connection.query(
                """
                UPDATE sessions SET revoked_at = now()
                WHERE campus_id = \(campus) AND token_hash = \(hash) AND revoked_at IS NULL
                """)
            guard rows.affectedRows > 0 else { return false }
            try await AuthGenerations.bump(connection, campus: campus)
            return true
        }
    }

    // MARK: Tokens

    /// A bearer token of the shape this store issues, hashed once: a request asks the kept
    /// sessions and then perhaps the database with it.
    public struct SessionToken: Sendable {
        /// The digest, inline: a request that finds its session kept never makes `hash`.
        let digest: SHA256Digest
        let key: Key

        /// SHA-256 of the token, what it is stored and looked up by.
        public var hash: Data { Data(digest) }

        /// nil when `text` is not 43 base64url characters.
        public init?(_ text: String) {
            guard SessionStore.isWellFormed(text) else { return nil }
            var text = text
            digest = text.withUTF8 { SHA256.hash(data: UnsafeRawBufferPointer($0)) }
            key = digest.withUnsafeBytes { Key(hash: $0) }
        }
    }

    /// 32 bytes from the system's CSPRNG, base64url without padding (43 characters).
    public static func newToken() -> String {
        SymmetricKey(size: .bits256).withUnsafeBytes { Data($0) }.base64URLEncoded()
    }

    /// What a token is stored and looked up by: its SHA-256.
    public static func hash(_ token: String) -> Data { Data(SHA256.hash(data: Data(token.utf8))) }

    /// Whether `token` has the shape of one this store issues (43 base64url characters).
    public static func isWellFormed(_ token: String) -> Bool {
        token.utf8.count == 43
            && token.utf8.allSatisfy {
                ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) || $0 == 0x2D || $0 == 0x5F
            }
    }
}
