-- a member's saved places and private health profile, each seen by that member only
-- The regions a member follows on the community page, in their order (at most 10).
CREATE TABLE IF NOT EXISTS member_places (
    campus_id   uuid NOT NULL,
    user_id     uuid NOT NULL,
    regions     text[] NOT NULL CHECK (cardinality(regions) <= 10),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (campus_id, user_id),
    FOREIGN KEY (campus_id, user_id) REFERENCES users (campus_id, id) ON DELETE CASCADE
);
-- Birth year, height and weight, sealed under the key-encryption key like the journal.
CREATE TABLE IF NOT EXISTS member_profiles (
    campus_id   uuid NOT NULL,
    user_id     uuid NOT NULL,
    sealed      bytea NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (campus_id, user_id),
    FOREIGN KEY (campus_id, user_id) REFERENCES users (campus_id, id) ON DELETE CASCADE
);
DO $$
DECLARE
    private_table text;
BEGIN
    FOREACH private_table IN ARRAY ARRAY['member_places', 'member_profiles'] LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', private_table);
        EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', private_table);
        EXECUTE format('DROP POLICY IF EXISTS campus_isolation ON %I', private_table);
        EXECUTE format(
            'CREATE POLICY campus_isolation ON %I '
            'USING (campus_id = nullif(current_setting(''attest.campus_id'', true), '''')::uuid) '
            'WITH CHECK (campus_id = nullif(current_setting(''attest.campus_id'', true), '''')::uuid)',
            private_table);
        EXECUTE format('DROP POLICY IF EXISTS member_only ON %I', private_table);
        EXECUTE format(
            'CREATE POLICY member_only ON %I AS RESTRICTIVE '
            'USING (user_id = nullif(current_setting(''attest.user_id'', true), '''')::uuid) '
            'WITH CHECK (user_id = nullif(current_setting(''attest.user_id'', true), '''')::uuid)',
            private_table);
        EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON %I TO attest_app', private_table);
    END LOOP;
END $$;
