-- sign-in generations: servers keep verified sessions while their campus's generation stands
ALTER TABLE campuses ADD COLUMN IF NOT EXISTS auth_generation bigint NOT NULL DEFAULT 0;
CREATE OR REPLACE FUNCTION attest_auth_generations() RETURNS TABLE (campus_id uuid, generation bigint)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public
    AS $$ SELECT id, auth_generation FROM campuses $$;
REVOKE ALL ON FUNCTION attest_auth_generations() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION attest_auth_generations() TO attest_app;
