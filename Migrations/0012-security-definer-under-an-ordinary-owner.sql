-- SECURITY DEFINER functions that work under an ordinary owner; search_path ending in pg_temp; links stop with their member
ALTER FUNCTION attest_campus_by_slug(text) SET search_path = pg_catalog, public, pg_temp;
ALTER FUNCTION attest_campus_directory() SET search_path = pg_catalog, public, pg_temp;
ALTER FUNCTION attest_auth_generations() SET search_path = pg_catalog, public, pg_temp;
DROP FUNCTION IF EXISTS attest_journal_share(uuid, bytea);
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
