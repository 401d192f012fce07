-- roles kept on the user's row: a session's member is read from one table
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
