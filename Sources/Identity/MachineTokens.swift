import AttestPlugins
import AttestPostgres
import Foundation
import Tenancy

/// Bearer tokens of machines at one campus: a laboratory sending results (`lab`), the
/// university's directory provisioning users and groups (`provisioner`). No user
/// stands behind one, so it opens no member's route, and a machine route opens with nothing
/// else: each role has its own routes. Only the token's SHA-256 is kept.
public struct MachineTokens: Sendable {
    public enum Role: String, Sendable, CaseIterable {
        /// Sends test results (`POST …/lab/results`) and reads nothing.
        case lab
        /// The university's identity provider: the SCIM routes (`/scim/v2/campuses/{campus}/`) and nothing else.
        case provisioner
    }

    /// A machine a token stands for.
    public struct Machine: Sendable, Equatable {
        public var role: Role
        public var name: String
    }

    let client: PostgresClient

    public init(client: PostgresClient) { self.client = client }

    /// Issues a token for the machine `name` in `role` at `campus`, audited; the token is
    /// shown once. Lives `lifetime` seconds (a year by default).
    public func issue(campus: Campus, role: Role, name: String, lifetime: Int?, actor: String) async throws -> (
        token: String, expiresAt: Date
    ) {
        let trimmed = name.trimmingCharacters(in: .whitespaces)
        guard (1...100).contains(trimmed.utf8.count), !trimmed.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        else { throw IdentityError.invalidDisplayName }
        let token = SessionStore.newToken()
        let expiresAt = Date().addingTimeInterval(TimeInterval(lifetime ?? 365 * 86_400))
        try await client.withTransaction(campus: campus.id.rawValue) { connection in
            try await connection.query(
                """
                INSERT INTO machine_tokens (campus_id, token_hash, role, name, expires_at)
                VALUES (\(campus.id), \(SessionStore.hash(token)), \(role.rawValue), \(trimmed), \(expiresAt))
                """)
            try await AuditLog.record(
                connection, campus: campus.id, actor: actor, action: "token.issue", target: "\(role.rawValue):\(trimmed)",
                details: ["expiresAt": expiresAt.ISO8601Format()])
        }
        return (token, expiresAt)
    }

    /// The machine `token` stands for at `campus` in `role`; nil when it is malformed,
    /// unknown there, of another role, expired or revoked.
    public func authenticate(campus: CampusID, token: String, role: Role) async throws -> Machine? {
        guard let token = SessionStore.SessionToken(token) else { return nil }
        return try await authenticate(campus: campus, token: token, role: role)
    }

    /// `authenticate(campus:token:role:)` for a token already hashed.
    public func authenticate(campus: CampusID, token: SessionStore.SessionToken, role: Role) async throws -> Machine? {
        let rows = try await client.query(
            """
            SELECT name FROM machine_tokens
            WHERE campus_id = \(campus) AND token_hash = \(token.hash) AND role = \(role.rawValue)
              AND revoked_at IS NULL AND expires_at > now()
            """, campus: campus.rawValue)
        return try rows.first.map { Machine(role: role, name: try $0.decode("name")) }
    }

    /// Revokes every live token of the machine `name` in `role` (refused from the next
    /// request: servers keep no machine token), audited; returns how many. None revoked is
    /// not audited.
    public func revoke(campus: Campus, role: Role, name: String, actor: String) async throws -> Int {
        try await client.withTransaction(campus: campus.id.rawValue) { connection in
            let rows = try await connection.query(
                """
                UPDATE machine_tokens SET revoked_at = now()
                WHERE campus_id = \(campus.id) AND role = \(role.rawValue) AND name = \(name) AND revoked_at IS NULL
                  AND expires_at > now()
                RETURNING 1
                """)
            guard !rows.isEmpty else { return 0 }
            try await AuditLog.record(
                connection, campus: campus.id, actor: actor, action: "token.revoke", target: "\(role.rawValue):\(name)",
                details: ["count": "\(rows.count)"])
            return rows.count
        }
    }

    /// One token a machine was issued, as `attest token list` shows it (never the token).
    public struct Issued: Sendable, Equatable, Codable {
        public var role: String
        public var name: String
        public var issuedAt: Date
        public var expiresAt: Date
        public var revokedAt: Date?
    }

    /// Every machine token of `campus` still live or ended within the last 30 days, by
    /// machine, newest first.
    public func list(campus: Campus) async throws -> [Issued] {
        try await client.query(
            """
            SELECT role, name, created_at, expires_at, revoked_at FROM machine_tokens
            WHERE campus_id = \(campus.id) AND least(expires_at, coalesce(revoked_at, 'infinity')) > now() - interval '30 days'
            ORDER BY role, name, created_at DESC
            """, campus: campus.id.rawValue
        ).map { row in
            Issued(
                role: try row.decode("role"), name: try row.decode("name"), issuedAt: try row.decode("created_at"),
                expiresAt: try row.decode("expires_at"), revokedAt: try row.decode("revoked_at"))
        }
    }
}
