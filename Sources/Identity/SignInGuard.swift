import AttestPlugins
import AttestPostgres
import Crypto
import Foundation
import Tenancy

/// What makes an ID token good for one sign-in only: each accepted token is remembered
/// (`id_token_uses`) until it expires, and a nonce the server issued (`sign_in_nonces`, the
/// browser's flow) is spent by the sign-in that presents it.
public struct SignInGuard: Sendable {
    let client: PostgresClient
    /// How long an issued nonce may wait for its sign-in. Default 10 minutes.
    public static let nonceLifetime: TimeInterval = 600

    public init(client: PostgresClient) { self.client = client }

    /// A new nonce for a sign-in at `campus`: 256 random bits, base64url; only its hash is kept.
    public func issueNonce(campus: CampusID, now: Date = Date()) async throws -> (nonce: String, expiresAt: Date) {
        let nonce = SessionStore.newToken()
        let expiresAt = now.addingTimeInterval(Self.nonceLifetime)
        try await client.query(
            "INSERT INTO sign_in_nonces (campus_id, nonce_hash, expires_at) VALUES (\(campus), \(SessionStore.hash(nonce)), \(expiresAt))",
            campus: campus.rawValue)
        return (nonce, expiresAt)
    }

    /// Records that `identity`'s token signed in, and spends `nonce` when one is given, in one
    /// transaction; throws `IdentityError.replayed` when the token was used already and
    /// `.nonceMismatch` when the nonce is not a live one of this campus.
    public func admit(_ identity: VerifiedIdentity, campus: CampusID, nonce: String?) async throws {
        try await client.withTransaction(campus: campus.rawValue) { connection in
            if let nonce {
                let spent = try await connection.query(
                    """
                    DELETE FROM sign_in_nonces
                    WHERE campus_id = \(campus) AND nonce_hash = \(SessionStore.hash(nonce)) AND expires_at > now()
                    RETURNING expires_at
                    """)
                guard !spent.isEmpty else { throw IdentityError.nonceMismatch }
            }
            let recorded = try await connection.query(
                """
                INSERT INTO id_token_uses (campus_id, token_id, expires_at)
                VALUES (\(campus), \(identity.tokenID), \(identity.expiresAt))
                ON CONFLICT DO NOTHING RETURNING token_id
                """)
            guard !recorded.isEmpty else { throw IdentityError.replayed }
        }
    }
}

/// The daily upkeep of sign-in state: sessions expired or revoked more than a day ago, ID
/// tokens past their expiry and nonces past theirs are deleted.
public struct SignInUpkeep: DailyUpkeep {
    let client: PostgresClient

    public init(client: PostgresClient) { self.client = client }

    public var name: String { "sign-in state" }

    public func run(campus: Campus, now: Date) async throws -> [String: Int] {
        let cutoff = now.addingTimeInterval(-86_400)
        return try await client.withTransaction(campus: campus.id.rawValue) { connection in
            let sessions = try await connection.query(
                """
                DELETE FROM sessions
                WHERE campus_id = \(campus.id) AND (expires_at < \(cutoff) OR revoked_at < \(cutoff))
                """)
            let tokens = try await connection.query(
                "DELETE FROM id_token_uses WHERE campus_id = \(campus.id) AND expires_at < \(now)")
            let nonces = try await connection.query(
                "DELETE FROM sign_in_nonces WHERE campus_id = \(campus.id) AND expires_at < \(now)")
            return [
                "sessions_purged": sessions.affectedRows, "id_tokens_forgotten": tokens.affectedRows, "nonces_purged": nonces.affectedRows,
            ]
        }
    }
}
