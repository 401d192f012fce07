-- each member's notification preferences: channels, reminder time, quiet hours, language
-- No row: the campus's defaults (email on, push off, the campus's reminder time, no quiet
-- hours, the campus's language). Minutes are campus-local minutes after midnight.
CREATE TABLE IF NOT EXISTS member_notifications (
    campus_id        uuid NOT NULL,
    user_id          uuid NOT NULL,
    email            boolean NOT NULL DEFAULT true,
    push             boolean NOT NULL DEFAULT false,
    reminder_minute  smallint CHECK (reminder_minute BETWEEN 0 AND 1439),
    quiet_from       smallint CHECK (quiet_from BETWEEN 0 AND 1439),
    quiet_to         smallint CHECK (quiet_to BETWEEN 0 AND 1439),
    language         text CHECK (language ~ '^[a-z]{2}$'),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (campus_id, user_id),
    FOREIGN KEY (campus_id, user_id) REFERENCES users (campus_id, id) ON DELETE CASCADE,
    CHECK ((quiet_from IS NULL) = (quiet_to IS NULL) AND (quiet_from IS NULL OR quiet_from <> quiet_to))
);
ALTER TABLE member_notifications ENABLE ROW LEVEL SECURITY;
ALTER TABLE member_notifications FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS campus_isolation ON member_notifications;
CREATE POLICY campus_isolation ON member_notifications
    USING (campus_id = nullif(current_setting('attest.campus_id', true), '')::uuid)
    WITH CHECK (campus_id = nullif(current_setting('attest.campus_id', true), '')::uuid);
GRANT SELECT, INSERT, UPDATE, DELETE ON member_notifications TO attest_app;
