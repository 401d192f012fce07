-- security review: campuses behind row-level security, sign-in replay and nonces, sealed badge keys
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
ALTER TABLE id_token_uses ENABLE ROW LEVEL SECURITY;
ALTER TABLE id_token_uses FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS campus_isolation ON id_token_uses;
CREATE POLICY campus_isolation ON id_token_uses
    USING (campus_id = nullif(current_setting('attest.campus_id', true), '')::uuid)
    WITH CHECK (campus_id = nullif(current_setting('attest.campus_id', true), '')::uuid);
GRANT SELECT, INSERT, UPDATE, DELETE ON id_token_uses TO attest_app;
ALTER TABLE sign_in_nonces ENABLE ROW LEVEL SECURITY;
ALTER TABLE sign_in_nonces FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS campus_isolation ON sign_in_nonces;
CREATE POLICY campus_isolation ON sign_in_nonces
    USING (campus_id = nullif(current_setting('attest.campus_id', true), '')::uuid)
    WITH CHECK (campus_id = nullif(current_setting('attest.campus_id', true), '')::uuid);
GRANT SELECT, INSERT, UPDATE, DELETE ON sign_in_nonces TO attest_app;

ALTER TABLE badge_keys ADD COLUMN IF NOT EXISTS kek_id text;
CREATE TABLE IF NOT EXISTS badge_subject_keys (
    campus_id   uuid NOT NULL REFERENCES campuses (id) ON DELETE CASCADE,
    sealed      bytea NOT NULL,
    kek_id      text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (campus_id)
);
ALTER TABLE badge_subject_keys ENABLE ROW LEVEL SECURITY;
ALTER TABLE badge_subject_keys FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS campus_isolation ON badge_subject_keys;
CREATE POLICY campus_isolation ON badge_subject_keys
    USING (campus_id = nullif(current_setting('attest.campus_id', true), '')::uuid)
    WITH CHECK (campus_id = nullif(current_setting('attest.campus_id', true), '')::uuid);
GRANT SELECT, INSERT, UPDATE, DELETE ON badge_subject_keys TO attest_app;
