-- web push: each campus's VAPID key and its members' browser subscriptions, both sealed
-- Each campus's VAPID key (RFC 8292): its P-256 private key sealed under the key-encryption
-- key, the public key in the clear for browsers' applicationServerKey.
CREATE TABLE IF NOT EXISTS push_keys (
    campus_id    uuid NOT NULL REFERENCES campuses (id) ON DELETE CASCADE,
    private_key  bytea NOT NULL,
    public_key   text NOT NULL CHECK (public_key ~ '^[A-Za-z0-9_-]{87}$'),
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (campus_id)
);
-- A member's browsers that subscribed to push: the subscription (endpoint, p256dh, auth) sealed
-- whole, since its endpoint and secret let anyone push to that browser; found again by the
-- SHA-256 of its endpoint.
CREATE TABLE IF NOT EXISTS push_subscriptions (
    campus_id      uuid NOT NULL,
    user_id        uuid NOT NULL,
    id             uuid NOT NULL,
    endpoint_hash  bytea NOT NULL CHECK (length(endpoint_hash) = 32),
    subscription   bytea NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (campus_id, user_id, id),
    UNIQUE (campus_id, endpoint_hash),
    FOREIGN KEY (campus_id, user_id) REFERENCES users (campus_id, id) ON DELETE CASCADE
);
DO $$
DECLARE
    tenant_table text;
BEGIN
    FOREACH tenant_table IN ARRAY ARRAY['push_keys', 'push_subscriptions'] LOOP
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
