import AttestPostgres

/// How the schema is laid out on a Citus cluster: campuses are the unit of sharding. The
/// shared tables become reference tables (a copy on every node); every tenant table is
/// distributed by `campus_id` and co-located with `users`, so every statement about one campus
/// runs on one node. `attest citus distribute` applies it on a coordinator;
/// `deploy/citus/distribute.sql` is the same script for operators (a test keeps them equal
/// and checks the order against the foreign keys in the catalog).
public enum CitusLayout {
    /// Shared by every campus: reference tables.
    public static let referenceTables = ["campuses", "schema_migrations", "community_regions", "community_days", "shc_directory"]

    /// Every tenant table, in an order where each table's foreign-key targets come first.
    public static let distributedTables = [
        "users", "questionnaires", "campus_oidc_issuers", "campus_plugins", "sessions", "id_token_uses",
        "sign_in_nonces", "badge_keys", "badge_subject_keys", "attestations", "daily_stats", "daily_answer_counts",
        "member_changes", "purge_state", "testing_locations", "notification_outbox", "reminder_runs", "audit_log",
        "journal_entries", "journal_audio", "journal_audio_chunks", "episodes", "journal_shares", "journal_share_openings",
        "member_settings", "door_counts", "member_places", "member_profiles", "member_notifications", "push_keys", "push_subscriptions",
        "machine_tokens", "test_results", "isolations", "exemptions", "shc_issuers", "vaccinations",
        "directory_groups", "directory_group_members", "role_mappings", "guest_visits", "member_health",
    ]

    /// The script: the extension's settings, reference tables, then distributed tables.
    public static var script: String {
        var lines = [
            "-- Campus Attest on Citus: run on the coordinator as the schema's owner, after `attest migrate`",
            "-- (or let `attest citus distribute` run it). Generated from CitusLayout; a test keeps it equal.",
            "BEGIN;",
            "-- Foreign keys from distributed tables to reference tables made in one transaction need this (Citus docs).",
            "SET LOCAL citus.multi_shard_modify_mode TO 'sequential';",
            "-- Shared tables: a copy on every node.",
        ]
        lines += referenceTables.map { "SELECT create_reference_table('\($0)');" }
        lines.append("-- Tenant tables: sharded by campus, co-located with users, foreign-key targets first.")
        lines.append("SELECT create_distributed_table('users', 'campus_id');")
        lines += distributedTables.dropFirst().map { "SELECT create_distributed_table('\($0)', 'campus_id', colocate_with => 'users');" }
        lines.append("COMMIT;")
        return lines.joined(separator: "\n") + "\n"
    }

    public enum Refusal: Error, CustomStringConvertible {
        case notCitus
        case alreadyDistributed(Int)

        public var description: String {
            switch self {
            case .notCitus:
                "this database has no citus extension: connect to a Citus coordinator (deploy/citus/compose.yaml starts one) and run CREATE EXTENSION citus there first"
            case .alreadyDistributed(let count):
                "\(count) of the schema's tables are distributed already: nothing was changed (Citus keeps them as they are)"
            }
        }
    }

    /// Applies the layout in one transaction after checking that this is a Citus coordinator
    /// and that nothing is distributed yet. Returns the number of tables laid out.
    public static func distribute(_ client: PostgresClient) async throws -> Int {
        let citus = try await client.query("SELECT count(*) AS n FROM pg_extension WHERE extname = 'citus'")
        guard try citus[0].decode("n", as: Int.self) > 0 else { throw Refusal.notCitus }
        let done = try await client.query(
            "SELECT count(*) AS n FROM pg_dist_partition WHERE logicalrelid::regclass::text = ANY(\(referenceTables + distributedTables))")
        let already = try done[0].decode("n", as: Int.self)
        guard already == 0 else { throw Refusal.alreadyDistributed(already) }
        try await client.withConnection { connection in
            _ = try await connection.runScript(unsafeSQL: script)
        }
        return referenceTables.count + distributedTables.count
    }
}
