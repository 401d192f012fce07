import AttestPlugins
import AttestPostgres
import Foundation

/// One entry of a campus's append-only audit log.
public struct AuditEntry: Sendable, Codable, Equatable {
    /// Random (no sequence: the log is distributed by campus under Citus); entries are ordered
    /// by `at`, then `id`.
    public var id: UUID
    public var at: Date
    /// Who did it: `cli:<os user>` for the admin CLI, `user:<email>` for the API.
    public var actor: String
    /// What was done, e.g. `role.grant`, `users.import`, `token.issue`.
    public var action: String
    /// What it was done to, usually an email.
    public var target: String
    public var details: [String: String]
}

/// The audit log: permission changes, imports, token issues and identifiable reads.
public struct AuditLog: Sendable {
    let client: PostgresClient

    public init(client: PostgresClient) { self.client = client }

    /// Records an entry inside the caller's transaction (which must be scoped to `campus`),
    /// so the audited change and its record commit together.
    public static func record(
        _ connection: PostgresConnection, campus: CampusID, actor: String, action: String, target: String,
        details: [String: String] = [:]
    ) async throws {
        try await connection.query(
            """
            INSERT INTO audit_log (campus_id, actor, action, target, details)
            VALUES (\(campus), \(actor), \(action), \(target), \(try PostgresJSON(encoding: details)))
            """)
    }

    /// Entries at or after `since`, oldest first.
    public func entries(campus: CampusID, since: Date? = nil, limit: Int = 10_000) async throws -> [AuditEntry] {
        let rows = try await client.query(
            """
            SELECT id, at, actor, action, target, details FROM audit_log
            WHERE campus_id = \(campus) AND at >= \(since ?? .distantPast)
            ORDER BY at, id LIMIT \(limit)
            """, campus: campus.rawValue)
        return try rows.map { row in
            AuditEntry(
                id: try row.decode("id"), at: try row.decode("at"), actor: try row.decode("actor"),
                action: try row.decode("action"), target: try row.decode("target"),
                details: try row.decode("details", as: PostgresJSON.self).decode())
        }
    }
}
