import AttestPostgres
import Logging

/// Brings a database to the schema this build expects.
///
/// A new database gets `schema.sql` whole, recorded as every known version. A database
/// already at some version gets the later migrations, each in its own transaction. A
/// session-level advisory lock makes concurrent runs (two servers starting at once) queue
/// up; the second finds nothing to do.
public struct SchemaMigrator: Sendable {
    /// A change after the first release: SQL that takes a database from `version - 1` to
    /// `version`. `schema.sql` is updated alongside, so new databases start at the end.
    public struct Migration: Sendable {
        public var version: Int
        public var name: String
        public var sql: String
    }

    /// Version 1 is `schema.sql` as first released; later changes append here.
    public static let migrations: [Migration] = [
        Migration(version: 1, name: "initial schema", sql: embeddedSchemaSQL),
        Migration(
            version: 2, name: "attestations keyed by member and day; partial date indexes",
            sql: """
                ALTER TABLE attestations DROP CONSTRAINT attestations_pkey;
                ALTER TABLE attestations DROP CONSTRAINT attestations_campus_id_user_id_local_date_key;
                ALTER TABLE attestations ADD PRIMARY KEY (campus_id, user_id, local_date);
                DROP INDEX attestations_by_day_color;
                CREATE INDEX attestations_follow_ups ON attestations (campus_id, local_date, color)
                    WHERE color <> 'green';
                CREATE INDEX attestations_answered ON attestations (campus_id, local_date)
                    WHERE answers IS NOT NULL;
                """),
        Migration(
            version: 3, name: "security review: campuses behind row-level security, sign-in replay and nonces, sealed badge keys",
            sql: version3),
        Migration(
            version: 4, name: "web pages: identity providers' web clients for the browser sign-in",
            sql: """
                ALTER TABLE campus_oidc_issuers ADD COLUMN IF NOT EXISTS label text CHECK (length(label) BETWEEN 1 AND 100);
                ALTER TABLE campus_oidc_issuers ADD COLUMN IF NOT EXISTS client_id text CHECK (length(client_id) BETWEEN 1 AND 500);
                ALTER TABLE campus_oidc_issuers ADD COLUMN IF NOT EXISTS client_secret bytea;
                """),
        Migration(
            version: 5,
            name:
                "Citus-ready: no triggers on users (member counts written by the statements that add members), audit_log ids without a sequence",
            sql: """
                DROP TRIGGER IF EXISTS users_counted_on_insert ON users;
                DROP TRIGGER IF EXISTS users_counted_on_update ON users;
                DROP TRIGGER IF EXISTS users_counted_on_delete ON users;
                DROP FUNCTION IF EXISTS count_member_changes();
                ALTER TABLE audit_log ALTER COLUMN id DROP IDENTITY IF EXISTS;
                DO $$
                BEGIN
                    IF (SELECT data_type FROM information_schema.columns
                        WHERE table_schema = 'public' AND table_name = 'audit_log' AND column_name = 'id') = 'bigint' THEN
                        -- Earlier entries keep their order: small numbers written as uuids sort first.
                        ALTER TABLE audit_log ALTER COLUMN id TYPE uuid USING lpad(to_hex(id), 32, '0')::uuid;
                    END IF;
                END $$;
                ALTER TABLE audit_log ALTER COLUMN id SET DEFAULT gen_random_uuid();
                -- Entries of one transaction keep their order (now() is the same for all of them).
                ALTER TABLE audit_log ALTER COLUMN at SET DEFAULT clock_timestamp();
                """),
        Migration(
            version: 6, name: "sign-in generations: servers keep verified sessions while their campus's generation stands",
            sql: """
                ALTER TABLE campuses ADD COLUMN IF NOT EXISTS auth_generation bigint NOT NULL DEFAULT 0;
                \(authGenerationsFunction)
                """),
        Migration(
            version: 7, name: "community data: a campus's home region, the community-data plugin kind, shared tables of imported figures",
            sql: """
                ALTER TABLE campuses ADD COLUMN IF NOT EXISTS community_region text
                    CHECK (community_region ~ '^[A-Za-z0-9._:-]{1,64}$');
                ALTER TABLE campus_plugins DROP CONSTRAINT IF EXISTS campus_plugins_kind_check;
                ALTER TABLE campus_plugins ADD CONSTRAINT campus_plugins_kind_check
                    CHECK (kind IN ('badge-rule', 'testing-locations', 'sink', 'community-data'));
                CREATE TABLE IF NOT EXISTS community_regions (
                    dataset     text NOT NULL CHECK (dataset ~ '^[a-z0-9][a-z0-9._-]*$' AND length(dataset) <= 64),
                    region_id   text NOT NULL CHECK (region_id ~ '^[A-Za-z0-9._:-]{1,64}$'),
                    name        text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
                    population  bigint CHECK (population > 0),
                    PRIMARY KEY (dataset, region_id)
                );
                CREATE TABLE IF NOT EXISTS community_days (
                    dataset     text NOT NULL,
                    region_id   text NOT NULL,
                    day         date NOT NULL,
                    new_cases   integer NOT NULL,
                    new_deaths  integer NOT NULL,
                    PRIMARY KEY (dataset, region_id, day),
                    FOREIGN KEY (dataset, region_id) REFERENCES community_regions ON DELETE CASCADE
                );
                GRANT SELECT ON community_regions, community_days TO attest_app;
                """),
        Migration(
            version: 8, name: "the member's private journal and episodes: sealed, seen by their member only; the context plugin kind",
            sql: """
                \(journalTables)
                \(tenantTable("journal_entries"))
                \(tenantTable("journal_audio"))
                \(tenantTable("episodes"))
                \(tenantTable("journal_shares"))
                \(tenantTable("journal_share_openings"))
                \(tenantTable("member_settings"))
                \(memberOnly("journal_entries"))
                \(memberOnly("journal_audio"))
                \(memberOnly("episodes"))
                \(memberOnly("journal_shares"))
                \(memberOnly("journal_share_openings"))
                \(journalShareFunctionVersion8)
                ALTER TABLE campus_plugins DROP CONSTRAINT IF EXISTS campus_plugins_kind_check;
                ALTER TABLE campus_plugins ADD CONSTRAINT campus_plugins_kind_check
                    CHECK (kind IN ('badge-rule', 'testing-locations', 'sink', 'community-data', 'context'));
                """),
        Migration(
            version: 9, name: "roles kept on the user's row: a session's member is read from one table",
            sql: """
                ALTER TABLE users ADD COLUMN IF NOT EXISTS roles text[] NOT NULL DEFAULT '{member}'
                    CHECK (roles <@ ARRAY['member', 'screener', 'health_officer', 'admin']::text[]);
                DO $$
                BEGIN
                    IF to_regclass('public.user_roles') IS NOT NULL THEN
                        -- Forced row-level security would hide every row from the owner running this.
                        ALTER TABLE users NO FORCE ROW LEVEL SECURITY;
                        ALTER TABLE user_roles NO FORCE ROW LEVEL SECURITY;
                        UPDATE users u SET roles = r.roles
                        FROM (SELECT campus_id, user_id, array_agg(role ORDER BY role) AS roles FROM user_roles
                              GROUP BY campus_id, user_id) r
                        WHERE u.campus_id = r.campus_id AND u.id = r.user_id;
                        ALTER TABLE users FORCE ROW LEVEL SECURITY;
                        DROP TABLE user_roles;
                    END IF;
                END $$;
                """),
        Migration(
            version: 10, name: "questionnaire versions append-only for the application; attestations' key to them dropped",
            sql: """
                ALTER TABLE attestations DROP CONSTRAINT IF EXISTS attestations_campus_id_survey_version_fkey;
                REVOKE UPDATE, DELETE ON questionnaires FROM attest_app;
                """),
        Migration(
            version: 11, name: "an Idempotency-Key bound to the digest of what it was sent with",
            sql: """
                ALTER TABLE attestations ADD COLUMN IF NOT EXISTS idempotency_digest bytea CHECK (length(idempotency_digest) = 32);
                """),
        Migration(
            version: 12,
            name:
                "SECURITY DEFINER functions that work under an ordinary owner; search_path ending in pg_temp; links stop with their member",
            sql: """
                ALTER FUNCTION attest_campus_by_slug(text) SET search_path = pg_catalog, public, pg_temp;
                ALTER FUNCTION attest_campus_directory() SET search_path = pg_catalog, public, pg_temp;
                ALTER FUNCTION attest_auth_generations() SET search_path = pg_catalog, public, pg_temp;
                DROP FUNCTION IF EXISTS attest_journal_share(uuid, bytea);
                \(journalShareFunction)
                """),
        Migration(
            version: 13, name: "sessions an operator minted are marked, and open no member's private data",
            sql: """
                ALTER TABLE sessions ADD COLUMN IF NOT EXISTS by_operator boolean NOT NULL DEFAULT false;
                """),
        Migration(
            version: 14, name: "plugins' secret settings sealed apart from the others",
            sql: """
                ALTER TABLE campus_plugins ADD COLUMN IF NOT EXISTS secrets bytea;
                ALTER TABLE campus_plugins ADD COLUMN IF NOT EXISTS secret_names text[] NOT NULL DEFAULT '{}';
                """),
        Migration(
            version: 15, name: "recordings sealed in chunks, each opened alone",
            sql: """
                ALTER TABLE journal_audio ALTER COLUMN sealed DROP NOT NULL;
                ALTER TABLE journal_audio ADD COLUMN IF NOT EXISTS data_key bytea;
                ALTER TABLE journal_audio DROP CONSTRAINT IF EXISTS journal_audio_check;
                ALTER TABLE journal_audio ADD CONSTRAINT journal_audio_check CHECK ((sealed IS NULL) <> (data_key IS NULL));
                CREATE TABLE IF NOT EXISTS journal_audio_chunks (
                    campus_id    uuid NOT NULL,
                    user_id      uuid NOT NULL,
                    entry_id     uuid NOT NULL,
                    chunk        integer NOT NULL CHECK (chunk BETWEEN 0 AND 1023),
                    sealed       bytea NOT NULL,
                    PRIMARY KEY (campus_id, user_id, entry_id, chunk),
                    FOREIGN KEY (campus_id, user_id, entry_id) REFERENCES journal_audio (campus_id, user_id, entry_id) ON DELETE CASCADE
                );
                \(tenantTable("journal_audio_chunks"))
                \(memberOnly("journal_audio_chunks"))
                """),
        Migration(
            version: 16, name: "work found by due time: each campus's next reminder and upkeep, and the workers' doors",
            sql: """
                ALTER TABLE campuses ADD COLUMN IF NOT EXISTS next_reminder_at timestamptz NOT NULL DEFAULT '1970-01-01 00:00:00+00';
                ALTER TABLE campuses ADD COLUMN IF NOT EXISTS next_upkeep_at timestamptz NOT NULL DEFAULT '1970-01-01 00:00:00+00';
                CREATE INDEX IF NOT EXISTS campuses_next_reminder ON campuses (next_reminder_at);
                CREATE INDEX IF NOT EXISTS campuses_next_upkeep ON campuses (next_upkeep_at);
                \(schemaSection("the workers' doors"))
                """),
    ]

    /// A section of `schema.sql` (from `-- section: <name>` to `-- end of section`) that a
    /// migration applies as it stands there, so that the two cannot drift apart.
    static func schemaSection(_ name: String) -> String {
        let text = embeddedSchemaSQL
        guard let start = text.range(of: "-- section: \(name)"),
            let end = text.range(of: "-- end of section", range: start.upperBound..<text.endIndex)
        else { preconditionFailure("schema.sql has no section \"\(name)\"") }
        return String(text[start.lowerBound..<end.upperBound])
    }

    /// What every server polls (`AuthGenerations`): each campus's sign-in generation, which
    /// a sign-out, a role change or a renamed user moves on. The same in `schema.sql`.
    static let authGenerationsFunction = """
        CREATE OR REPLACE FUNCTION attest_auth_generations() RETURNS TABLE (campus_id uuid, generation bigint)
            LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public
            AS $$ SELECT id, auth_generation FROM campuses $$;
        REVOKE ALL ON FUNCTION attest_auth_generations() FROM PUBLIC;
        GRANT EXECUTE ON FUNCTION attest_auth_generations() TO attest_app;
        """

    /// Issue 29's changes; `schema.sql` holds the same, in place.
    static let version3 = """
        ALTER TABLE campuses ENABLE ROW LEVEL SECURITY;
        DROP POLICY IF EXISTS campus_isolation ON campuses;
        CREATE POLICY campus_isolation ON campuses
            USING (id = nullif(current_setting('attest.campus_id', true), '')::uuid)
            WITH CHECK (id = nullif(current_setting('attest.campus_id', true), '')::uuid);
        REVOKE DELETE ON campuses FROM attest_app;
        CREATE OR REPLACE FUNCTION attest_campus_by_slug(wanted text) RETURNS SETOF campuses
            LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public
            AS $$ SELECT * FROM campuses WHERE slug = wanted $$;
        CREATE OR REPLACE FUNCTION attest_campus_directory() RETURNS SETOF campuses
            LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public
            AS $$ SELECT * FROM campuses ORDER BY slug $$;
        REVOKE ALL ON FUNCTION attest_campus_by_slug(text), attest_campus_directory() FROM PUBLIC;
        GRANT EXECUTE ON FUNCTION attest_campus_by_slug(text), attest_campus_directory() TO attest_app;

        ALTER TABLE campus_oidc_issuers ADD COLUMN IF NOT EXISTS allow_any_domain boolean NOT NULL DEFAULT false;
        CREATE TABLE IF NOT EXISTS id_token_uses (
            campus_id   uuid NOT NULL REFERENCES campuses (id) ON DELETE CASCADE,
            token_id    bytea NOT NULL CHECK (length(token_id) = 32),
            expires_at  timestamptz NOT NULL,
            PRIMARY KEY (campus_id, token_id)
        );
        CREATE TABLE IF NOT EXISTS sign_in_nonces (
            campus_id   uuid NOT NULL REFERENCES campuses (id) ON DELETE CASCADE,
            nonce_hash  bytea NOT NULL CHECK (length(nonce_hash) = 32),
            expires_at  timestamptz NOT NULL,
            PRIMARY KEY (campus_id, nonce_hash)
        );
        \(tenantTable("id_token_uses"))
        \(tenantTable("sign_in_nonces"))

        ALTER TABLE badge_keys ADD COLUMN IF NOT EXISTS kek_id text;
        CREATE TABLE IF NOT EXISTS badge_subject_keys (
            campus_id   uuid NOT NULL REFERENCES campuses (id) ON DELETE CASCADE,
            sealed      bytea NOT NULL,
            kek_id      text NOT NULL,
            created_at  timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (campus_id)
        );
        \(tenantTable("badge_subject_keys"))
        """

    /// Row-level security and grants for a tenant table added after version 1, as
    /// `schema.sql`'s loop gives every tenant table.
    static func tenantTable(_ name: String) -> String {
        """
        ALTER TABLE \(name) ENABLE ROW LEVEL SECURITY;
        ALTER TABLE \(name) FORCE ROW LEVEL SECURITY;
        DROP POLICY IF EXISTS campus_isolation ON \(name);
        CREATE POLICY campus_isolation ON \(name)
            USING (campus_id = nullif(current_setting('attest.campus_id', true), '')::uuid)
            WITH CHECK (campus_id = nullif(current_setting('attest.campus_id', true), '')::uuid);
        GRANT SELECT, INSERT, UPDATE, DELETE ON \(name) TO attest_app;
        """
    }

    /// The journal's and episodes' tables, as `schema.sql` has them.
    static let journalTables = """
        -- A member's private journal: only the member sees it (a second, restrictive policy keyed on
        -- attest.user_id, below). Title and text are sealed under the key-encryption key; the date
        -- and tags stay in the clear for listing and export ranges.
        CREATE TABLE IF NOT EXISTS journal_entries (
            campus_id   uuid NOT NULL,
            user_id     uuid NOT NULL,
            id          uuid NOT NULL,
            entry_date  date NOT NULL,
            tags        text[] NOT NULL DEFAULT '{}'
                        CHECK (tags <@ ARRAY['symptom', 'treatment', 'quarantine', 'contact', 'place']::text[]),
            sealed      bytea NOT NULL,
            created_at  timestamptz NOT NULL DEFAULT now(),
            updated_at  timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (campus_id, user_id, id),
            FOREIGN KEY (campus_id, user_id) REFERENCES users (campus_id, id) ON DELETE CASCADE
        );
        CREATE INDEX IF NOT EXISTS journal_entries_by_date ON journal_entries (campus_id, user_id, entry_date DESC, id DESC);

        -- At most one recording an entry, sealed; its type was read from its bytes.
        CREATE TABLE IF NOT EXISTS journal_audio (
            campus_id    uuid NOT NULL,
            user_id      uuid NOT NULL,
            entry_id     uuid NOT NULL,
            content_type text NOT NULL CHECK (content_type IN ('audio/webm', 'audio/ogg', 'audio/mpeg', 'audio/mp4', 'audio/wav')),
            size         integer NOT NULL CHECK (size BETWEEN 1 AND 5242880),
            sealed       bytea NOT NULL,
            created_at   timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (campus_id, user_id, entry_id),
            FOREIGN KEY (campus_id, user_id, entry_id) REFERENCES journal_entries (campus_id, user_id, id) ON DELETE CASCADE
        );

        -- Episodes (a headache, a migraine, a kind the campus adds): at most one open a kind. The
        -- notes are sealed; the place is kept to a tenth of a degree; context and baseline are the
        -- weather there at the start and at the same hour the day before (EnvironmentFactors).
        CREATE TABLE IF NOT EXISTS episodes (
            campus_id    uuid NOT NULL,
            user_id      uuid NOT NULL,
            id           uuid NOT NULL,
            kind         text NOT NULL CHECK (kind ~ '^[a-z][a-z0-9-]{0,39}$'),
            severity     smallint NOT NULL CHECK (severity BETWEEN 0 AND 10),
            sealed       bytea NOT NULL,
            started_at   timestamptz NOT NULL,
            stopped_at   timestamptz CHECK (stopped_at >= started_at),
            auto_closed  boolean NOT NULL DEFAULT false,
            latitude     double precision CHECK (latitude BETWEEN -90 AND 90),
            longitude    double precision CHECK (longitude BETWEEN -180 AND 180),
            context      jsonb,
            baseline     jsonb,
            created_at   timestamptz NOT NULL DEFAULT now(),
            updated_at   timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (campus_id, user_id, id),
            FOREIGN KEY (campus_id, user_id) REFERENCES users (campus_id, id) ON DELETE CASCADE,
            CHECK ((latitude IS NULL) = (longitude IS NULL))
        );
        CREATE UNIQUE INDEX IF NOT EXISTS episodes_one_open ON episodes (campus_id, user_id, kind) WHERE stopped_at IS NULL;
        CREATE INDEX IF NOT EXISTS episodes_by_start ON episodes (campus_id, user_id, started_at DESC, id DESC);

        -- Links a member gives a clinician: a read-only view of a date range until it expires or is
        -- revoked. Only the token's hash is kept; each opening is in the member's own access log.
        CREATE TABLE IF NOT EXISTS journal_shares (
            campus_id   uuid NOT NULL,
            user_id     uuid NOT NULL,
            id          uuid NOT NULL,
            token_hash  bytea NOT NULL CHECK (length(token_hash) = 32),
            from_date   date NOT NULL,
            to_date     date NOT NULL CHECK (to_date >= from_date),
            expires_at  timestamptz NOT NULL,
            revoked_at  timestamptz,
            created_at  timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (campus_id, user_id, id),
            UNIQUE (campus_id, token_hash),
            FOREIGN KEY (campus_id, user_id) REFERENCES users (campus_id, id) ON DELETE CASCADE
        );

        CREATE TABLE IF NOT EXISTS journal_share_openings (
            campus_id   uuid NOT NULL,
            user_id     uuid NOT NULL,
            share_id    uuid NOT NULL,
            id          uuid NOT NULL DEFAULT gen_random_uuid(),
            opened_at   timestamptz NOT NULL DEFAULT now(),
            format      text NOT NULL CHECK (format IN ('pdf', 'csv', 'json')),
            PRIMARY KEY (campus_id, user_id, id),
            FOREIGN KEY (campus_id, user_id, share_id) REFERENCES journal_shares (campus_id, user_id, id) ON DELETE CASCADE
        );

        -- What a member chose for their own journal and episodes: kept for this many days (by the
        -- entry's date, the episode's start), or forever when null. Not private in itself: the daily
        -- upkeep reads every member's choice of the campus.
        CREATE TABLE IF NOT EXISTS member_settings (
            campus_id          uuid NOT NULL,
            user_id            uuid NOT NULL,
            journal_keep_days  integer CHECK (journal_keep_days BETWEEN 1 AND 3650),
            updated_at         timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (campus_id, user_id),
            FOREIGN KEY (campus_id, user_id) REFERENCES users (campus_id, id) ON DELETE CASCADE
        );
        """

    /// What a shared link's view reads first (`JournalShareStore.open`), and the policies that
    /// let it. The same in `schema.sql`.
    static let journalShareFunction = """
        -- The fourth door: a shared link's token (its hash) at a campus, to the share it names, for
        -- a clinician who has no session. Nothing but the share's own row comes through, and only
        -- while its member is active. It sets what the policies read (the campus, the link's hash)
        -- for its own statement only (it puts back what was set before as it returns; an error aborts
        -- the transaction), so it works under an owner that is neither superuser nor BYPASSRLS, as
        -- managed PostgreSQL gives (which may not name these settings in a SET clause).
        CREATE OR REPLACE FUNCTION attest_journal_share(wanted_campus uuid, wanted_hash bytea)
            RETURNS TABLE (user_id uuid, id uuid, from_date date, to_date date, expires_at timestamptz, revoked_at timestamptz)
            LANGUAGE plpgsql VOLATILE SECURITY DEFINER
            SET search_path = pg_catalog, public, pg_temp
            AS $$
            DECLARE
                campus_before text := current_setting('attest.campus_id', true);
                hash_before text := current_setting('attest.share_hash', true);
            BEGIN
                PERFORM set_config('attest.campus_id', wanted_campus::text, true);
                PERFORM set_config('attest.share_hash', encode(wanted_hash, 'hex'), true);
                RETURN QUERY
                    SELECT s.user_id, s.id, s.from_date, s.to_date, s.expires_at, s.revoked_at
                    FROM journal_shares s JOIN users u ON u.campus_id = s.campus_id AND u.id = s.user_id
                    WHERE s.campus_id = wanted_campus AND s.token_hash = wanted_hash AND u.active;
                PERFORM set_config('attest.campus_id', coalesce(campus_before, ''), true);
                PERFORM set_config('attest.share_hash', coalesce(hash_before, ''), true);
            END $$;
        REVOKE ALL ON FUNCTION attest_journal_share(uuid, bytea) FROM PUBLIC;
        GRANT EXECUTE ON FUNCTION attest_journal_share(uuid, bytea) TO attest_app;
        -- A link's own row is what that door reads: besides its member, a transaction that names the
        -- link's hash (attest.share_hash) sees it, and may change or delete nothing through it.
        DROP POLICY IF EXISTS member_only ON journal_shares;
        CREATE POLICY member_only ON journal_shares AS RESTRICTIVE
            USING (user_id = nullif(current_setting('attest.user_id', true), '')::uuid
                   OR token_hash = decode(nullif(current_setting('attest.share_hash', true), ''), 'hex'))
            WITH CHECK (user_id = nullif(current_setting('attest.user_id', true), '')::uuid);
        DROP POLICY IF EXISTS member_only_delete ON journal_shares;
        CREATE POLICY member_only_delete ON journal_shares AS RESTRICTIVE FOR DELETE
            USING (user_id = nullif(current_setting('attest.user_id', true), '')::uuid);
        """

    /// The shared link's door as version 8 made it (version 12 replaces it).
    static let journalShareFunctionVersion8 = """
        CREATE OR REPLACE FUNCTION attest_journal_share(wanted_campus uuid, wanted_hash bytea)
            RETURNS TABLE (user_id uuid, id uuid, from_date date, to_date date, expires_at timestamptz, revoked_at timestamptz)
            LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public
            AS $$ SELECT user_id, id, from_date, to_date, expires_at, revoked_at FROM journal_shares
                  WHERE campus_id = wanted_campus AND token_hash = wanted_hash $$;
        REVOKE ALL ON FUNCTION attest_journal_share(uuid, bytea) FROM PUBLIC;
        GRANT EXECUTE ON FUNCTION attest_journal_share(uuid, bytea) TO attest_app;
        """

    /// The second wall of a member's own table: only the member a transaction names.
    static func memberOnly(_ name: String) -> String {
        """
        DROP POLICY IF EXISTS member_only ON \(name);
        CREATE POLICY member_only ON \(name) AS RESTRICTIVE
            USING (user_id = nullif(current_setting('attest.user_id', true), '')::uuid)
            WITH CHECK (user_id = nullif(current_setting('attest.user_id', true), '')::uuid);
        """
    }

    /// The version this build brings a database to.
    public static var latestVersion: Int { migrations.map(\.version).max() ?? 0 }

    /// The text of `schema.sql` this binary was built with.
    public static var schemaSQL: String { embeddedSchemaSQL }

    /// What a run did.
    public struct Report: Sendable, Equatable, Codable {
        /// Versions applied by this run, oldest first; empty when the database was current.
        public var applied: [Int]
        /// The database's version afterwards.
        public var version: Int
    }

    /// The role the server's connections switch to: row-level security applies to it.
    public static let applicationRole = "attest_app"

    /// Arbitrary, fixed key of the advisory lock that serialises migrations.
    static let lockKey: Int64 = 0x6174_7465_7374  // "attest"

    let logger: Logger

    public init(logger: Logger) { self.logger = logger }

    /// Applies what is missing. Connect as the role that owns (or will own) the tables.
    public func migrate(_ client: PostgresClient) async throws -> Report {
        try await client.withConnection { connection in
            try await connection.query("SELECT pg_advisory_lock(\(Self.lockKey))")
            do {
                let report = try await migrateLocked(connection)
                try await connection.query("SELECT pg_advisory_unlock(\(Self.lockKey))")
                return report
            } catch {
                _ = try? await connection.query("SELECT pg_advisory_unlock(\(Self.lockKey))")
                throw error
            }
        }
    }

    private func migrateLocked(_ connection: PostgresConnection) async throws -> Report {
        let current = try await currentVersion(connection)
        let latest = Self.latestVersion
        if current == 0 {
            try await connection.transaction { connection in
                try await connection.runScript(unsafeSQL: Self.schemaSQL)
                for migration in Self.migrations {
                    try await connection.query(
                        "INSERT INTO schema_migrations (version, name) VALUES (\(migration.version), \(migration.name))")
                }
            }
            logger.info("schema created", metadata: ["version": "\(latest)"])
            return Report(applied: Self.migrations.map(\.version), version: latest)
        }
        if current > latest {
            throw PostgresError(
                code: .server,
                message: "the database is at schema version \(current), newer than this build's \(latest); upgrade attest")
        }
        var applied: [Int] = []
        for migration in Self.migrations where migration.version > current {
            try await connection.transaction { connection in
                try await connection.runScript(unsafeSQL: migration.sql)
                try await connection.query(
                    "INSERT INTO schema_migrations (version, name) VALUES (\(migration.version), \(migration.name))")
            }
            logger.info("migration applied", metadata: ["version": "\(migration.version)", "name": "\(migration.name)"])
            applied.append(migration.version)
        }
        return Report(applied: applied, version: latest)
    }

    private func currentVersion(_ connection: PostgresConnection) async throws -> Int {
        let exists = try await connection.query("SELECT to_regclass('schema_migrations') IS NOT NULL AS present")
        guard try exists.first?.decode("present", as: Bool.self) == true else { return 0 }
        let rows = try await connection.query("SELECT coalesce(max(version), 0) AS version FROM schema_migrations")
        return try rows.first?.decode("version", as: Int.self) ?? 0
    }
}
