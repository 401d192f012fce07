-- health records: laboratories' tokens, test results, exemptions, isolations and each member's status
-- Each member's health status as last recomputed from their whole record (null: no record),
-- kept on the row like roles, so that reading a session's member reads no other table.
ALTER TABLE users ADD COLUMN IF NOT EXISTS health jsonb;
-- A machine's bearer token at one campus (a laboratory's): no user stands behind it, so it
-- opens no member route; only its SHA-256 is kept.
CREATE TABLE IF NOT EXISTS machine_tokens (
    campus_id   uuid NOT NULL REFERENCES campuses (id) ON DELETE CASCADE,
    token_hash  bytea NOT NULL CHECK (length(token_hash) = 32),
    role        text NOT NULL CHECK (role IN ('lab')),
    name        text NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    revoked_at  timestamptz,
    PRIMARY KEY (campus_id, token_hash)
);
-- Test results, one per specimen: a later result for the same specimen is a correction and
-- replaces it. user_id is null while the result matches no member (a health officer matches
-- or dismisses it); subject is the identifier it came with (an email or the campus's id).
CREATE TABLE IF NOT EXISTS test_results (
    campus_id     uuid NOT NULL,
    id            uuid NOT NULL,
    specimen_id   text NOT NULL CHECK (length(specimen_id) BETWEEN 1 AND 200),
    user_id       uuid,
    subject       text NOT NULL CHECK (length(subject) BETWEEN 1 AND 320),
    test_code     text NOT NULL CHECK (test_code ~ '^[0-9]{1,7}-[0-9]$'),
    detected      boolean NOT NULL,
    collected_at  timestamptz NOT NULL,
    resulted_at   timestamptz NOT NULL,
    source        text NOT NULL CHECK (length(source) BETWEEN 1 AND 120),
    received_at   timestamptz NOT NULL DEFAULT now(),
    dismissed_at  timestamptz,
    -- A health officer ended the isolation this (positive) result started, early.
    released_at   timestamptz,
    PRIMARY KEY (campus_id, specimen_id),
    UNIQUE (campus_id, id),
    FOREIGN KEY (campus_id, user_id) REFERENCES users (campus_id, id) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS test_results_by_member ON test_results (campus_id, user_id) WHERE user_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS test_results_unmatched ON test_results (campus_id, received_at)
    WHERE user_id IS NULL AND dismissed_at IS NULL;
-- Exemptions a member asked for (medical, religious, other), with their note sealed under
-- the key-encryption key, and a health officer's decision: approved until a day, or denied.
CREATE TABLE IF NOT EXISTS exemptions (
    campus_id     uuid NOT NULL,
    user_id       uuid NOT NULL,
    id            uuid NOT NULL,
    kind          text NOT NULL CHECK (kind IN ('medical', 'religious', 'other')),
    note          bytea NOT NULL,
    requested_at  timestamptz NOT NULL DEFAULT now(),
    status        text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'approved', 'denied')),
    expires_on    date,
    reason        text NOT NULL DEFAULT '' CHECK (length(reason) <= 500),
    decided_by    text,
    decided_at    timestamptz,
    PRIMARY KEY (campus_id, user_id, id),
    UNIQUE (campus_id, id),
    FOREIGN KEY (campus_id, user_id) REFERENCES users (campus_id, id) ON DELETE CASCADE,
    CHECK ((status = 'approved') = (expires_on IS NOT NULL)),
    CHECK ((status = 'pending') = (decided_at IS NULL))
);
CREATE INDEX IF NOT EXISTS exemptions_pending ON exemptions (campus_id, requested_at) WHERE status = 'pending';
CREATE UNIQUE INDEX IF NOT EXISTS exemptions_one_pending ON exemptions (campus_id, user_id) WHERE status = 'pending';
-- Isolations and quarantines a health officer started by hand (a positive result's isolation
-- is its result's: test_results.released_at ends it early).
CREATE TABLE IF NOT EXISTS isolations (
    campus_id    uuid NOT NULL,
    user_id      uuid NOT NULL,
    id           uuid NOT NULL,
    kind         text NOT NULL CHECK (kind IN ('isolation', 'quarantine')),
    starts_on    date NOT NULL,
    ends_on      date NOT NULL CHECK (ends_on >= starts_on),
    started_by   text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    released_at  timestamptz,
    PRIMARY KEY (campus_id, user_id, id),
    UNIQUE (campus_id, id),
    FOREIGN KEY (campus_id, user_id) REFERENCES users (campus_id, id) ON DELETE CASCADE
);
DO $$
DECLARE
    tenant_table text;
BEGIN
    FOREACH tenant_table IN ARRAY ARRAY['machine_tokens', 'test_results', 'isolations', 'exemptions'] LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', tenant_table);
        EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', tenant_table);
        EXECUTE format('DROP POLICY IF EXISTS campus_isolation ON %I', tenant_table);
        EXECUTE format(
            'CREATE POLICY campus_isolation ON %I '
            'USING (campus_id = nullif(current_setting(''attest.campus_id'', true), '''')::uuid) '
            'WITH CHECK (campus_id = nullif(current_setting(''attest.campus_id'', true), '''')::uuid)',
            tenant_table);
        EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON %I TO attest_app', tenant_table);
    END LOOP;
END $$;
