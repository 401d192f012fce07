-- the member's private journal and episodes: sealed, seen by their member only; the context plugin kind
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
ALTER TABLE journal_entries ENABLE ROW LEVEL SECURITY;
ALTER TABLE journal_entries FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS campus_isolation ON journal_entries;
CREATE POLICY campus_isolation ON journal_entries
    USING (campus_id = nullif(current_setting('attest.campus_id', true), '')::uuid)
    WITH CHECK (campus_id = nullif(current_setting('attest.campus_id', true), '')::uuid);
GRANT SELECT, INSERT, UPDATE, DELETE ON journal_entries TO attest_app;
ALTER TABLE journal_audio ENABLE ROW LEVEL SECURITY;
ALTER TABLE journal_audio FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS campus_isolation ON journal_audio;
CREATE POLICY campus_isolation ON journal_audio
    USING (campus_id = nullif(current_setting('attest.campus_id', true), '')::uuid)
    WITH CHECK (campus_id = nullif(current_setting('attest.campus_id', true), '')::uuid);
GRANT SELECT, INSERT, UPDATE, DELETE ON journal_audio TO attest_app;
ALTER TABLE episodes ENABLE ROW LEVEL SECURITY;
ALTER TABLE episodes FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS campus_isolation ON episodes;
CREATE POLICY campus_isolation ON episodes
    USING (campus_id = nullif(current_setting('attest.campus_id', true), '')::uuid)
    WITH CHECK (campus_id = nullif(current_setting('attest.campus_id', true), '')::uuid);
GRANT SELECT, INSERT, UPDATE, DELETE ON episodes TO attest_app;
ALTER TABLE journal_shares ENABLE ROW LEVEL SECURITY;
ALTER TABLE journal_shares FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS campus_isolation ON journal_shares;
CREATE POLICY campus_isolation ON journal_shares
    USING (campus_id = nullif(current_setting('attest.campus_id', true), '')::uuid)
    WITH CHECK (campus_id = nullif(current_setting('attest.campus_id', true), '')::uuid);
GRANT SELECT, INSERT, UPDATE, DELETE ON journal_shares TO attest_app;
ALTER TABLE journal_share_openings ENABLE ROW LEVEL SECURITY;
ALTER TABLE journal_share_openings FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS campus_isolation ON journal_share_openings;
CREATE POLICY campus_isolation ON journal_share_openings
    USING (campus_id = nullif(current_setting('attest.campus_id', true), '')::uuid)
    WITH CHECK (campus_id = nullif(current_setting('attest.campus_id', true), '')::uuid);
GRANT SELECT, INSERT, UPDATE, DELETE ON journal_share_openings TO attest_app;
ALTER TABLE member_settings ENABLE ROW LEVEL SECURITY;
ALTER TABLE member_settings FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS campus_isolation ON member_settings;
CREATE POLICY campus_isolation ON member_settings
    USING (campus_id = nullif(current_setting('attest.campus_id', true), '')::uuid)
    WITH CHECK (campus_id = nullif(current_setting('attest.campus_id', true), '')::uuid);
GRANT SELECT, INSERT, UPDATE, DELETE ON member_settings TO attest_app;
DROP POLICY IF EXISTS member_only ON journal_entries;
CREATE POLICY member_only ON journal_entries AS RESTRICTIVE
    USING (user_id = nullif(current_setting('attest.user_id', true), '')::uuid)
    WITH CHECK (user_id = nullif(current_setting('attest.user_id', true), '')::uuid);
DROP POLICY IF EXISTS member_only ON journal_audio;
CREATE POLICY member_only ON journal_audio AS RESTRICTIVE
    USING (user_id = nullif(current_setting('attest.user_id', true), '')::uuid)
    WITH CHECK (user_id = nullif(current_setting('attest.user_id', true), '')::uuid);
DROP POLICY IF EXISTS member_only ON episodes;
CREATE POLICY member_only ON episodes AS RESTRICTIVE
    USING (user_id = nullif(current_setting('attest.user_id', true), '')::uuid)
    WITH CHECK (user_id = nullif(current_setting('attest.user_id', true), '')::uuid);
DROP POLICY IF EXISTS member_only ON journal_shares;
CREATE POLICY member_only ON journal_shares AS RESTRICTIVE
    USING (user_id = nullif(current_setting('attest.user_id', true), '')::uuid)
    WITH CHECK (user_id = nullif(current_setting('attest.user_id', true), '')::uuid);
DROP POLICY IF EXISTS member_only ON journal_share_openings;
CREATE POLICY member_only ON journal_share_openings AS RESTRICTIVE
    USING (user_id = nullif(current_setting('attest.user_id', true), '')::uuid)
    WITH CHECK (user_id = nullif(current_setting('attest.user_id', true), '')::uuid);
CREATE OR REPLACE FUNCTION attest_journal_share(wanted_campus uuid, wanted_hash bytea)
    RETURNS TABLE (user_id uuid, id uuid, from_date date, to_date date, expires_at timestamptz, revoked_at timestamptz)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public
    AS $$ SELECT user_id, id, from_date, to_date, expires_at, revoked_at FROM journal_shares
          WHERE campus_id = wanted_campus AND token_hash = wanted_hash $$;
REVOKE ALL ON FUNCTION attest_journal_share(uuid, bytea) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION attest_journal_share(uuid, bytea) TO attest_app;
ALTER TABLE campus_plugins DROP CONSTRAINT IF EXISTS campus_plugins_kind_check;
ALTER TABLE campus_plugins ADD CONSTRAINT campus_plugins_kind_check
    CHECK (kind IN ('badge-rule', 'testing-locations', 'sink', 'community-data', 'context'));
