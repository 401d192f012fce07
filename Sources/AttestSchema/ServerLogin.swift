import AttestPostgres

/// What `attest serve` checks of the role it logs in as, before it serves: a role that is a
/// member of `attest_app` and nothing more (not a superuser, not exempt from row-level
/// security, owner of no table, function or database), on a database at this build's schema.
/// A server that logs in as the owner could undo the wall with `RESET ROLE`; one that logs in
/// as a plain member cannot.
public enum ServerLogin {
    /// Why a login cannot serve; each says how to mend it.
    public enum Refusal: Error, Equatable, CustomStringConvertible {
        case superuser(role: String)
        case bypassesRowLevelSecurity(role: String)
        case owner(role: String, what: String)
        case notApplicationMember(role: String)
        case noSchema
        case schemaBehind(current: Int, needed: Int)
        case schemaAhead(current: Int, supported: Int)

        static let setUp =
            "create a login that is only a member of attest_app (CREATE ROLE attest_server LOGIN PASSWORD '…'; GRANT attest_app TO attest_server;), point DATABASE_URL at it, and run migrations as the owner (`attest migrate`, or `attest serve --migrate-url @FILE`)"

        public var description: String {
            switch self {
            case .superuser(let role): "the server logs in as \(role), a superuser, which row-level security does not hold: \(Self.setUp)"
            case .bypassesRowLevelSecurity(let role): "the server logs in as \(role), which has BYPASSRLS: \(Self.setUp)"
            case .owner(let role, let what): "the server logs in as \(role), which owns \(what): \(Self.setUp)"
            case .notApplicationMember(let role):
                "the server logs in as \(role), which is not a member of attest_app: run GRANT attest_app TO \(role); as the owner"
            case .noSchema:
                "the database has no Campus Attest schema yet: run `attest migrate` as the owner first, or pass `attest serve --migrate-url @FILE` (the owner's URL)"
            case .schemaBehind(let current, let needed):
                "the database is at schema version \(current) and this build needs \(needed): run `attest migrate` as the owner first, or pass `attest serve --migrate-url @FILE`"
            case .schemaAhead(let current, let supported):
                "the database is at schema version \(current), newer than this build's \(supported): upgrade attest"
            }
        }
    }

    /// Makes `name` the server's login: created if missing (a login and nothing more: not a
    /// superuser, not exempt from row-level security, creating no database or role), a
    /// member of `attest_app`, and given `password` when one is passed (sent as a SCRAM
    /// verifier, never in the clear). Without a password it suits clusters that admit local
    /// connections by peer or trust, as `attest dev`'s does. `owner` is a client of a role
    /// that may create roles. The one way the project makes a server login (`attest migrate
    /// --server-login`, `attest dev`, the tests).
    public static func ensureRole(_ name: String, password: String? = nil, owner: PostgresClient) async throws {
        let exists = try await owner.query("SELECT count(*) AS n FROM pg_roles WHERE rolname = \(name)")
        if try exists[0].decode("n", as: Int.self) == 0 {
            do {
                try await owner.query("CREATE ROLE \(identifier: name) LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE")
            } catch let error as PostgresError where error.sqlState == "42710" || error.isUniqueViolation {
                // Made at this moment by another process.
            }
        }
        let member = try await owner.query("SELECT pg_has_role(\(name), \(SchemaMigrator.applicationRole), 'MEMBER') AS member")
        if try !member[0].decode("member", as: Bool.self) {
            try await owner.query("GRANT \(identifier: SchemaMigrator.applicationRole) TO \(identifier: name)")
        }
        if let password {
            try await owner.withConnection { connection in
                let verifier = try await connection.encryptPassword(password, user: name)
                let statement = try await connection.query(
                    "SELECT format('ALTER ROLE %I PASSWORD %L', \(name)::text, \(verifier)::text) AS sql")
                try await connection.query(SQL(unsafeSQL: try statement[0].decode("sql", as: String.self)))
            }
        }
    }

    /// Throws `Refusal` unless `login` (a client without `role`) may serve.
    public static func check(_ login: PostgresClient) async throws {
        let application = SchemaMigrator.applicationRole
        let rows = try await login.query(
            """
            SELECT r.rolname AS name, r.rolsuper AS superuser, r.rolbypassrls AS bypass,
                   CASE WHEN EXISTS (SELECT 1 FROM pg_roles WHERE rolname = \(application))
                        THEN pg_has_role(r.oid, \(application), 'MEMBER') ELSE false END AS member,
                   (SELECT count(*) FROM pg_class c WHERE c.relowner = r.oid AND c.relnamespace = 'public'::regnamespace
                     AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f'))::bigint AS tables,
                   (SELECT count(*) FROM pg_proc p WHERE p.proowner = r.oid AND p.pronamespace = 'public'::regnamespace)::bigint AS functions,
                   EXISTS (SELECT 1 FROM pg_database d WHERE d.datname = current_database() AND d.datdba = r.oid) AS owns_database,
                   to_regclass('public.schema_migrations') IS NOT NULL AS has_schema,
                   (SELECT o.rolname FROM pg_class c JOIN pg_roles o ON o.oid = c.relowner
                    WHERE c.oid = to_regclass('public.schema_migrations') AND pg_has_role(r.oid, o.oid, 'MEMBER')) AS owner_member_of
            FROM pg_roles r WHERE r.rolname = session_user
            """)
        guard let row = rows.first else { return }
        let name: String = try row.decode("name")
        if try row.decode("superuser", as: Bool.self) { throw Refusal.superuser(role: name) }
        if try row.decode("bypass", as: Bool.self) { throw Refusal.bypassesRowLevelSecurity(role: name) }
        if try row.decode("owns_database", as: Bool.self) { throw Refusal.owner(role: name, what: "the database") }
        let owned = try row.decode("tables", as: Int.self) + row.decode("functions", as: Int.self)
        if owned > 0 { throw Refusal.owner(role: name, what: "\(owned) of the schema's tables and functions") }
        // A member of the owner's role may act as the owner (and reads what the owner's
        // policies let it read across campuses).
        if let owner = try row.decode("owner_member_of", as: String?.self) {
            throw Refusal.owner(role: name, what: "nothing itself but is a member of \(owner), the schema's owner")
        }
        guard try row.decode("has_schema", as: Bool.self) else { throw Refusal.noSchema }
        guard try row.decode("member", as: Bool.self) else { throw Refusal.notApplicationMember(role: name) }
        let version =
            try await login.withTransaction { connection in
                try await connection.query("SET LOCAL ROLE \(identifier: application)")
                return try await connection.query("SELECT coalesce(max(version), 0) AS version FROM schema_migrations")
            }.first?.decode("version", as: Int.self) ?? 0
        let latest = SchemaMigrator.latestVersion
        if version < latest { throw Refusal.schemaBehind(current: version, needed: latest) }
        if version > latest { throw Refusal.schemaAhead(current: version, supported: latest) }
    }
}
