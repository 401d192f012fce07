-- Guests (DESIGN §12): a day pass for visitors without a university account.
-- A questionnaire is the members' or the guests' (`attest survey publish --guest`); versions
-- are numbered across both, so a version names one questionnaire at its campus.
ALTER TABLE questionnaires ADD COLUMN IF NOT EXISTS audience text NOT NULL DEFAULT 'member'
    CHECK (audience IN ('member', 'guest'));
-- One visit: who came (the name they gave, the address the code went to), whom they visit (a
-- member), the campus-local day it is good for; its one-time code as a keyed hash (never the
-- code), the wrong codes tried; the guest's session (a token's SHA-256) once the code or a
-- screener at a kiosk vouched; the badge the guest survey gave. No answers are kept. Purged
-- after the campus's guest retention (`guest-retention-days`, 14 by default).
CREATE TABLE IF NOT EXISTS guest_visits (
    campus_id          uuid NOT NULL REFERENCES campuses (id) ON DELETE CASCADE,
    id                 uuid NOT NULL,
    name               text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    email              text NOT NULL CHECK (length(email) BETWEEN 3 AND 320),
    email_key          bytea NOT NULL,
    host_id            uuid NOT NULL,
    local_date         date NOT NULL,
    created_at         timestamptz NOT NULL,
    code_hash          bytea,
    code_expires_at    timestamptz,
    failed_codes       integer NOT NULL DEFAULT 0 CHECK (failed_codes >= 0),
    verified_at        timestamptz,
    screener_id        uuid,
    session_hash       bytea,
    session_expires_at timestamptz,
    survey_version     integer,
    color              text CHECK (color IN ('green', 'yellow', 'red')),
    reason             text CHECK (length(reason) <= 500),
    valid_until        timestamptz,
    attested_at        timestamptz,
    PRIMARY KEY (campus_id, id),
    FOREIGN KEY (campus_id, host_id) REFERENCES users (campus_id, id) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS guest_visits_by_day ON guest_visits (campus_id, local_date);
CREATE UNIQUE INDEX IF NOT EXISTS guest_visits_by_session ON guest_visits (campus_id, session_hash) WHERE session_hash IS NOT NULL;
CREATE INDEX IF NOT EXISTS guest_visits_by_email ON guest_visits (campus_id, email_key, local_date);
ALTER TABLE guest_visits ENABLE ROW LEVEL SECURITY;
ALTER TABLE guest_visits FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS campus_isolation ON guest_visits;
CREATE POLICY campus_isolation ON guest_visits
    USING (campus_id = nullif(current_setting('attest.campus_id', true), '')::uuid)
    WITH CHECK (campus_id = nullif(current_setting('attest.campus_id', true), '')::uuid);
GRANT SELECT, INSERT, UPDATE, DELETE ON guest_visits TO attest_app;
-- The member channels tell a host their guest arrived: the channels a campus enabled with the
-- default events take it too.
UPDATE campus_plugins SET settings = jsonb_set(settings, '{events}', '["reminder.due", "guest.arrived"]'::jsonb)
WHERE kind = 'sink' AND plugin_id IN ('email', 'terminal', 'web-push') AND settings -> 'events' = '["reminder.due"]'::jsonb;
