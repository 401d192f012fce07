import AttestPlugins
import AttestPostgres
import Foundation

/// Which plugins a campus has enabled, with their settings (`campus_plugins`).
///
/// Settings are checked by the caller against the plugin registry before they get here.
/// The members the plugin declares secret (`PluginRegistry.secretMembers`) are stored apart,
/// as one JSON object sealed under the key-encryption key (`secrets`), and merged back when
/// read with the key. The audit log records who enabled or disabled what, never the settings.
public struct CampusPluginStore: Sendable {
    public struct Enabled: Sendable {
        public var kind: PluginKind
        public var id: String
        /// Every setting, the sealed ones opened (without a key-encryption key: without them).
        public var settings: JSONValue
        /// The names of the settings stored sealed.
        public var sealed: [String]
        public var enabledAt: Date
    }

    let client: PostgresClient
    let kek: KeyEncryptionKey?

    public init(client: PostgresClient, kek: KeyEncryptionKey? = nil) {
        self.client = client
        self.kek = kek
    }

    static func context(campus: CampusID, kind: String, id: String) -> String { "plugin-secrets/\(campus)/\(kind)/\(id)" }

    /// The column this store seals, for `attest keys rotate-kek` (`SealedColumn`).
    public static let sealedColumns: [SealedColumn] = [
        SealedColumn(table: "campus_plugins", column: "secrets", key: [.text("kind"), .text("plugin_id")], scope: .campus) {
            campus, _, row in
            context(campus: campus, kind: try row.decode("kind"), id: try row.decode("plugin_id"))
        }
    ]

    /// `settings` without the members named `secret`, those members sealed (nil when none),
    /// and their names.
    func split(_ settings: JSONValue, secret: Set<String>, campus: CampusID, kind: PluginKind, id: String) throws -> (
        JSONValue, Data?, [String]
    ) {
        guard case .object(var members) = settings, !secret.isEmpty else { return (settings, nil, []) }
        var hidden: [String: JSONValue] = [:]
        for name in secret { hidden[name] = members.removeValue(forKey: name) }
        guard !hidden.isEmpty else { return (settings, nil, []) }
        guard let kek else { throw CampusError.noKeyEncryptionKey }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let sealed = try SealedSecret.seal(
            try encoder.encode(JSONValue.object(hidden)), under: kek, context: Self.context(campus: campus, kind: kind.rawValue, id: id))
        return (.object(members), sealed, hidden.keys.sorted())
    }

    /// Enables (or re-configures) plugin `id` of `kind`. A campus has one badge rule, one
    /// community-data provider and one context provider, so enabling one of those disables the
    /// one before it.
    /// `secret`: the members of `settings` the plugin declares secret (`PluginRegistry.secretMembers`);
    /// members named like a secret are sealed too, declared or not. Sealing needs the store's
    /// key-encryption key (`CampusError.noKeyEncryptionKey` otherwise).
    public func enable(campus: Campus, kind: PluginKind, id: String, settings: JSONValue, secret: Set<String> = [], actor: String)
        async throws
    {
        let secret = secret.union(PluginRegistry().secretMembers(of: settings, kind: kind, id: id))
        let (plain, sealed, names) = try split(settings, secret: secret, campus: campus.id, kind: kind, id: id)
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
                INSERT INTO campus_plugins (campus_id, kind, plugin_id, settings, secrets, secret_names)
                VALUES (\(campus.id), \(kind.rawValue), \(id), \(try PostgresJSON(encoding: plain)), \(sealed), \(names))
                ON CONFLICT (campus_id, kind, plugin_id) DO UPDATE
                SET settings = EXCLUDED.settings, secrets = EXCLUDED.secrets, secret_names = EXCLUDED.secret_names, enabled_at = now()
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
            SELECT kind, plugin_id, settings, secrets, secret_names, enabled_at FROM campus_plugins
            WHERE campus_id = \(campus) \(filter) ORDER BY kind, plugin_id
            """, campus: campus.rawValue)
        return try rows.map { row in try enabled(row, campus: campus) }
    }

    /// The settings of one plugin, the sealed ones opened; nil when it is not enabled.
    public func settings(campus: CampusID, kind: PluginKind, id: String) async throws -> JSONValue? {
        try await list(campus: campus, kind: kind).first { $0.id == id }?.settings
    }

    private func enabled(_ row: PostgresRow, campus: CampusID) throws -> Enabled {
        let kind: String = try row.decode("kind"), id: String = try row.decode("plugin_id")
        var settings = try row.decode("settings", as: PostgresJSON.self).decode(as: JSONValue.self)
        if let sealed = try row.decode("secrets", as: Data?.self), let kek {
            let opened = try SealedSecret.open(sealed, with: kek, context: Self.context(campus: campus, kind: kind, id: id))
            let secret = try opened.withUnsafeBytes { try JSONValue(parsing: $0) }
            if case .object(let hidden) = secret, case .object(var members) = settings {
                for (name, value) in hidden { members[name] = value }
                settings = .object(members)
            }
        }
        return Enabled(
            kind: PluginKind(rawValue: kind) ?? .sink, id: id, settings: settings, sealed: try row.decode("secret_names"),
            enabledAt: try row.decode("enabled_at"))
    }

    // MARK: Fragments other modules splice into their statements

    /// `campus_plugins <alias> ON …`: the sinks of `campus` that take `event` (an SQL
    /// expression naming an event), for a `JOIN`. A sink without an `events` list takes every
    /// event.
    public static func sinks(campus: CampusID, as alias: StaticString, taking event: SQL) -> SQL {
        SQL(unsafeSQL: "campus_plugins \(alias) ON \(alias).campus_id = ") + "\(campus)"
            + SQL(unsafeSQL: " AND \(alias).kind = 'sink' AND ") + subscribes(alias, to: event)
    }

    /// A condition true when a sink of `campus` takes `event` (an SQL expression).
    public static func anySink(campus: CampusID, taking event: SQL) -> SQL {
        "EXISTS (SELECT 1 FROM campus_plugins p WHERE p.campus_id = \(campus) AND p.kind = 'sink' AND " + subscribes("p", to: event) + ")"
    }

    /// A condition true when `campus` has a sink enabled.
    public static func anySink(campus: CampusID) -> SQL {
        "EXISTS (SELECT 1 FROM campus_plugins WHERE campus_id = \(campus) AND kind = 'sink')"
    }

    /// Whether the sink row `plugin` (an alias of `campus_plugins`) takes `event`.
    static func subscribes(_ plugin: StaticString, to event: SQL) -> SQL {
        SQL(unsafeSQL: "(NOT \(plugin).settings ? 'events' OR \(plugin).settings -> 'events' ? ") + event + ")"
    }

    /// Seals the secret members that plugin settings stored before secrets were sealed still
    /// hold in the clear (what a server does for each campus as it starts); how many plugins.
    public func sealPlainSecrets(campus: CampusID, secret: (PluginKind, String, JSONValue) -> Set<String>) async throws -> Int {
        try await client.withTransaction(campus: campus.rawValue) { connection in
            var changed = 0
            let rows = try await connection.query(
                "SELECT kind, plugin_id, settings FROM campus_plugins WHERE campus_id = \(campus) AND secrets IS NULL FOR UPDATE")
            for row in rows {
                guard let kind = PluginKind(rawValue: try row.decode("kind")) else { continue }
                let id: String = try row.decode("plugin_id")
                let settings = try row.decode("settings", as: PostgresJSON.self).decode(as: JSONValue.self)
                let (plain, sealed, names) = try split(settings, secret: secret(kind, id, settings), campus: campus, kind: kind, id: id)
                guard let sealed else { continue }
                try await connection.query(
                    """
                    UPDATE campus_plugins SET settings = \(try PostgresJSON(encoding: plain)), secrets = \(sealed), secret_names = \(names)
                    WHERE campus_id = \(campus) AND kind = \(kind.rawValue) AND plugin_id = \(id)
                    """)
                changed += 1
            }
            return changed
        }
    }
}
