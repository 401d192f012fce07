-- Citus-ready: no triggers on users (member counts written by the statements that add members), audit_log ids without a sequence
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
