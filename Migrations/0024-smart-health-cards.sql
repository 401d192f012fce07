-- SMART Health Cards and campus ids: trusted issuers, the doses members' cards gave, members' birth dates and campus ids
-- A member's birth date, when the campus knows it (the identity provider's `birthdate` claim,
-- `attest user add --birth-date`): compared with a card's under `shc-identity`.
ALTER TABLE users ADD COLUMN IF NOT EXISTS birth_date date;
-- A member's campus id (a student or employee number), by which a laboratory may name them.
ALTER TABLE users ADD COLUMN IF NOT EXISTS member_id text CHECK (length(member_id) BETWEEN 1 AND 100);
CREATE UNIQUE INDEX IF NOT EXISTS users_member_id ON users (campus_id, member_id) WHERE member_id IS NOT NULL;
-- The VCI Directory's issuers, shared by every campus (`attest shc directory import`): each
-- issuer's public keys and revocation lists as the signed snapshot gives them.
CREATE TABLE IF NOT EXISTS shc_directory (
    iss            text PRIMARY KEY CHECK (length(iss) BETWEEN 1 AND 500),
    canonical_iss  text CHECK (length(canonical_iss) BETWEEN 1 AND 500),
    name           text NOT NULL CHECK (length(name) BETWEEN 1 AND 300),
    jwks           jsonb NOT NULL,
    crls           jsonb NOT NULL DEFAULT '[]',
    imported_at    timestamptz NOT NULL DEFAULT now()
);
GRANT SELECT ON shc_directory TO attest_app;
-- A campus's own trusted issuers (`attest shc issuer add`): a pilot's, a test's.
CREATE TABLE IF NOT EXISTS shc_issuers (
    campus_id  uuid NOT NULL REFERENCES campuses (id) ON DELETE CASCADE,
    iss        text NOT NULL CHECK (length(iss) BETWEEN 1 AND 500),
    name       text NOT NULL CHECK (length(name) BETWEEN 1 AND 300),
    jwks       jsonb NOT NULL,
    crls       jsonb NOT NULL DEFAULT '[]',
    added_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (campus_id, iss)
);
-- Each COVID-19 dose a member's verified card gave: its CVX code, the day, the issuer and
-- when the card was verified. Never the card itself.
CREATE TABLE IF NOT EXISTS vaccinations (
    campus_id    uuid NOT NULL,
    user_id      uuid NOT NULL,
    cvx          text NOT NULL CHECK (cvx ~ '^[0-9]{1,3}$'),
    given_on     date NOT NULL,
    issuer       text NOT NULL CHECK (length(issuer) BETWEEN 1 AND 500),
    verified_at  timestamptz NOT NULL,
    PRIMARY KEY (campus_id, user_id, given_on, cvx),
    FOREIGN KEY (campus_id, user_id) REFERENCES users (campus_id, id) ON DELETE CASCADE
);
DO $$
DECLARE
    tenant_table text;
BEGIN
    FOREACH tenant_table IN ARRAY ARRAY['shc_issuers', 'vaccinations'] LOOP
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
