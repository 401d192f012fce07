-- recordings sealed in chunks, each opened alone
ALTER TABLE journal_audio ALTER COLUMN sealed DROP NOT NULL;
ALTER TABLE journal_audio ADD COLUMN IF NOT EXISTS data_key bytea;
ALTER TABLE journal_audio DROP CONSTRAINT IF EXISTS journal_audio_check;
ALTER TABLE journal_audio ADD CONSTRAINT journal_audio_check CHECK ((sealed IS NULL) <> (data_key IS NULL));
CREATE TABLE IF NOT EXISTS journal_audio_chunks (
    campus_id    uuid NOT NULL,
    user_id      uuid NOT NULL,
    entry_id     uuid NOT NULL,
    chunk        integer NOT NULL CHECK (chunk BETWEEN 0 AND 1023),
    sealed       bytea NOT NULL,
    PRIMARY KEY (campus_id, user_id, entry_id, chunk),
    FOREIGN KEY (campus_id, user_id, entry_id) REFERENCES journal_audio (campus_id, user_id, entry_id) ON DELETE CASCADE
);
ALTER TABLE journal_audio_chunks ENABLE ROW LEVEL SECURITY;
ALTER TABLE journal_audio_chunks FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS campus_isolation ON journal_audio_chunks;
CREATE POLICY campus_isolation ON journal_audio_chunks
    USING (campus_id = nullif(current_setting('attest.campus_id', true), '')::uuid)
    WITH CHECK (campus_id = nullif(current_setting('attest.campus_id', true), '')::uuid);
GRANT SELECT, INSERT, UPDATE, DELETE ON journal_audio_chunks TO attest_app;
DROP POLICY IF EXISTS member_only ON journal_audio_chunks;
CREATE POLICY member_only ON journal_audio_chunks AS RESTRICTIVE
    USING (user_id = nullif(current_setting('attest.user_id', true), '')::uuid)
    WITH CHECK (user_id = nullif(current_setting('attest.user_id', true), '')::uuid);
