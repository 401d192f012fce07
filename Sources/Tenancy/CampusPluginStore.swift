import AttestPlugins
import AttestPostgres
import Foundation

/// Which plugins a campus has enabled, with their settings (`campus_plugins`).
///
/// Settings are checked by the caller against the plugin registry before they get here.
/// The audit log records who enabled or disabled what, never the settings (they may hold
/// secrets such as a webhook's signing key).
public struct CampusPluginStore: Sendable {
    public struct Enabled: Sendable {
        public var kind: PluginKind
        public var id: String
        public var settings: JSONValue
        public var enabledAt: Date
    }

    let client: PostgresClient

    public init(client: PostgresClient) { self.client = client }

    /// Enables (or re-configures) plugin `id` of `kind`. A campus has one badge rule, one
    /// community-data provider and one context provider, so enabling one of those disables the
    /// one before it.
    public func enable(campus: Campus, kind: PluginKind, id: String, settings: JSONValue, actor: String) async throws {
        try await client.withTransaction(campus: campus.id.rawValue) { connection in
            var replaced: [String] = []
            if kind == .badgeRule || kind == .communityData || kind == .context {
                replaced = try await connection.query(
                    """
                    DELETE FROM campus_plugins WHERE campus_id = \(campus.id) AND kind = \(kind.rawValue) AND plugin_id <> \(id)
                    RETURNING plugin_id
                    """
                ).map { try $0.decode("plugin_id", as: String.self) }
            }
            try await connection.query(
                """
                INSERT INTO campus_plugins (campus_id, kind, plugin_id, settings)
                VALUES (\(campus.id), \(kind.rawValue), \(id), \(try PostgresJSON(encoding: settings)))
                ON CONFLICT (campus_id, kind, plugin_id) DO UPDATE SET settings = EXCLUDED.settings, enabled_at = now()
                """)
            var details = ["kind": kind.rawValue]
            if !replaced.isEmpty { details["replaced"] = replaced.joined(separator: ",") }
            try await AuditLog.record(connection, campus: campus.id, actor: actor, action: "plugin.enable", target: id, details: details)
        }
    }

    /// Disables plugin `id` of `kind`; false when it was not enabled.
    public func disable(campus: Campus, kind: PluginKind, id: String, actor: String) async throws -> Bool {
        try await client.withTransaction(campus: campus.id.rawValue) { connection in
            let rows = try await connection.query(
                """
                DELETE FROM campus_plugins WHERE campus_id = \(campus.id) AND kind = \(kind.rawValue) AND plugin_id = \(id)
                RETURNING plugin_id
                """)
            guard !rows.isEmpty else { return false }
            try await AuditLog.record(
                connection, campus: campus.id, actor: actor, action: "plugin.disable", target: id, details: ["kind": kind.rawValue])
            return true
        }
    }

    /// The campus's enabled plugins, by kind then id.
    public func list(campus: CampusID, kind: PluginKind? = nil) async throws -> [Enabled] {
        let filter: SQL = kind.map { "AND kind = \($0.rawValue)" } ?? ""
        let rows = try await client.query(
            """
            SELECT kind, plugin_id, settings, enabled_at FROM campus_plugins
            WHERE campus_id = \(campus) \(filter) ORDER BY kind, plugin_id
            """, campus: campus.rawValue)
        return try rows.map { row in
            Enabled(
                kind: PluginKind(rawValue: try row.decode("kind")) ?? .sink, id: try row.decode("plugin_id"),
                settings: try row.decode("settings", as: PostgresJSON.self).decode(as: JSONValue.self),
                enabledAt: try row.decode("enabled_at"))
        }
    }
}
