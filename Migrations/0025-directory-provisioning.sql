-- provisioning from the university's directory: SCIM 2.0 users and groups, roles that follow groups
-- A provisioner's token (the identity provider pushing users and groups over SCIM) joins the lab's.
ALTER TABLE machine_tokens DROP CONSTRAINT IF EXISTS machine_tokens_role_check;
ALTER TABLE machine_tokens ADD CONSTRAINT machine_tokens_role_check CHECK (role IN ('lab', 'provisioner'));
-- What the directory says of a user: its userName (null: the email), externalId, and the
-- other attributes of its SCIM representation it sent (name, emails, the enterprise
-- extension's employeeNumber and department); whether the directory created or updated the
-- user (`provisioning: scim-only` admits no one else), and when the directory last changed it.
ALTER TABLE users ADD COLUMN IF NOT EXISTS user_name text CHECK (length(user_name) BETWEEN 1 AND 300);
ALTER TABLE users ADD COLUMN IF NOT EXISTS external_id text CHECK (length(external_id) BETWEEN 1 AND 300);
ALTER TABLE users ADD COLUMN IF NOT EXISTS directory jsonb;
ALTER TABLE users ADD COLUMN IF NOT EXISTS provisioned boolean NOT NULL DEFAULT false;
ALTER TABLE users ADD COLUMN IF NOT EXISTS modified_at timestamptz;
-- When the directory deleted the user (deactivated under `scim-delete: deactivate`): gone from
-- the directory's view until it creates them again or an operator reactivates them.
ALTER TABLE users ADD COLUMN IF NOT EXISTS deprovisioned_at timestamptz;
-- Roles held only because of directory groups (taken away when the groups no longer give
-- them), and the groups the identity provider's `groups` claim named at the last sign-in.
ALTER TABLE users ADD COLUMN IF NOT EXISTS directory_roles text[] NOT NULL DEFAULT '{}';
ALTER TABLE users ADD COLUMN IF NOT EXISTS claimed_groups text[] NOT NULL DEFAULT '{}';
-- The userName as compared (without case): a column of its own, so the comparison uses an index
-- under row-level security too (an index on lower(…) is not, lower() not being leakproof).
ALTER TABLE users ADD COLUMN IF NOT EXISTS user_key text GENERATED ALWAYS AS (lower(coalesce(user_name, email))) STORED;
CREATE UNIQUE INDEX IF NOT EXISTS users_user_name ON users (campus_id, user_key);
CREATE INDEX IF NOT EXISTS users_external_id ON users (campus_id, external_id) WHERE external_id IS NOT NULL;
-- The few users a directory deleted (a creation looks for them first): found without a scan.
CREATE INDEX IF NOT EXISTS users_deprovisioned ON users (campus_id) WHERE deprovisioned_at IS NOT NULL;
-- The directory's groups at one campus, and their members.
CREATE TABLE IF NOT EXISTS directory_groups (
    campus_id     uuid NOT NULL REFERENCES campuses (id) ON DELETE CASCADE,
    id            uuid NOT NULL,
    display_name  text NOT NULL CHECK (length(display_name) BETWEEN 1 AND 300),
    external_id   text CHECK (length(external_id) BETWEEN 1 AND 300),
    created_at    timestamptz NOT NULL DEFAULT now(),
    modified_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (campus_id, id)
);
CREATE INDEX IF NOT EXISTS directory_groups_by_name ON directory_groups (campus_id, lower(display_name));
CREATE TABLE IF NOT EXISTS directory_group_members (
    campus_id  uuid NOT NULL,
    group_id   uuid NOT NULL,
    user_id    uuid NOT NULL,
    PRIMARY KEY (campus_id, group_id, user_id),
    FOREIGN KEY (campus_id, group_id) REFERENCES directory_groups (campus_id, id) ON DELETE CASCADE,
    FOREIGN KEY (campus_id, user_id) REFERENCES users (campus_id, id) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS directory_group_members_by_user ON directory_group_members (campus_id, user_id);
-- Which role a directory group gives (`attest campus roles map`): the group by displayName or
-- externalId (a SCIM group's, or a name in the `groups` claim).
CREATE TABLE IF NOT EXISTS role_mappings (
    campus_id  uuid NOT NULL REFERENCES campuses (id) ON DELETE CASCADE,
    group_key  text NOT NULL CHECK (length(group_key) BETWEEN 1 AND 300),
    role       text NOT NULL CHECK (role IN ('screener', 'health_officer', 'admin')),
    PRIMARY KEY (campus_id, group_key, role)
);
DO $$
DECLARE
    tenant_table text;
BEGIN
    FOREACH tenant_table IN ARRAY ARRAY['directory_groups', 'directory_group_members', 'role_mappings'] LOOP
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
-- The fifth door: erasing a user from the directory (SCIM DELETE under `scim-delete: erase`)
-- takes the audit entries naming them, as `attest user erase` does, though the log is
-- append-only for the application: only the current campus's rows (row-level security), only
-- entries naming that email.
CREATE OR REPLACE FUNCTION attest_forget_audited(wanted_campus uuid, wanted_email text) RETURNS bigint
    LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp
    AS $$
    WITH gone AS (
        DELETE FROM audit_log
        WHERE campus_id = wanted_campus AND (target = wanted_email OR actor = 'user:' || wanted_email)
        RETURNING 1
    )
    SELECT count(*) FROM gone
    $$;
REVOKE ALL ON FUNCTION attest_forget_audited(uuid, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION attest_forget_audited(uuid, text) TO attest_app;
