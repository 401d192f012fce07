-- members' health status in a narrow table of its own
-- Each member's status (Records, DESIGN §11) moves off `users` into `member_health`: an import
-- of a laboratory's 100,000 results rewrote as many `users` rows, each new version with an
-- entry in each of the table's indexes (4.2 s of an import's 10); a row here has one.
CREATE TABLE IF NOT EXISTS member_health (
    campus_id  uuid NOT NULL,
    user_id    uuid NOT NULL,
    health     jsonb NOT NULL,
    PRIMARY KEY (campus_id, user_id),
    FOREIGN KEY (campus_id, user_id) REFERENCES users (campus_id, id) ON DELETE CASCADE
);
INSERT INTO member_health (campus_id, user_id, health)
SELECT campus_id, id, health FROM users WHERE health IS NOT NULL
ON CONFLICT DO NOTHING;
ALTER TABLE users DROP COLUMN IF EXISTS health;
ALTER TABLE member_health ENABLE ROW LEVEL SECURITY;
ALTER TABLE member_health FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS campus_isolation ON member_health;
CREATE POLICY campus_isolation ON member_health
    USING (campus_id = nullif(current_setting('attest.campus_id', true), '')::uuid)
    WITH CHECK (campus_id = nullif(current_setting('attest.campus_id', true), '')::uuid);
GRANT SELECT, INSERT, UPDATE, DELETE ON member_health TO attest_app;
