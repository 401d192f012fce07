-- door checks counted per door and hour
CREATE TABLE IF NOT EXISTS door_counts (
    campus_id  uuid NOT NULL REFERENCES campuses (id) ON DELETE CASCADE,
    door       text NOT NULL CHECK (length(door) BETWEEN 1 AND 80),
    hour       timestamptz NOT NULL,
    verdict    text NOT NULL CHECK (verdict ~ '^[a-z][a-z-]{0,31}$'),
    guest      boolean NOT NULL DEFAULT false,
    count      integer NOT NULL CHECK (count > 0),
    PRIMARY KEY (campus_id, hour, door, verdict, guest)
);
ALTER TABLE door_counts ENABLE ROW LEVEL SECURITY;
ALTER TABLE door_counts FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS campus_isolation ON door_counts;
CREATE POLICY campus_isolation ON door_counts
    USING (campus_id = nullif(current_setting('attest.campus_id', true), '')::uuid)
    WITH CHECK (campus_id = nullif(current_setting('attest.campus_id', true), '')::uuid);
GRANT SELECT, INSERT, UPDATE, DELETE ON door_counts TO attest_app;
