-- work found by due time: each campus's next reminder and upkeep, and the workers' doors
ALTER TABLE campuses ADD COLUMN IF NOT EXISTS next_reminder_at timestamptz NOT NULL DEFAULT '1970-01-01 00:00:00+00';
ALTER TABLE campuses ADD COLUMN IF NOT EXISTS next_upkeep_at timestamptz NOT NULL DEFAULT '1970-01-01 00:00:00+00';
CREATE INDEX IF NOT EXISTS campuses_next_reminder ON campuses (next_reminder_at);
CREATE INDEX IF NOT EXISTS campuses_next_upkeep ON campuses (next_upkeep_at);
-- section: the workers' doors (migration 16 applies this section as it is here)
-- The doors of the servers' background work: which campuses have work due, in one read
-- whatever their number (docs/architecture.md, "How the workers find their work").
-- Each campus with undelivered outbox rows and its earliest next attempt: a skip scan of
-- notification_outbox_due, as many probes as such campuses (none when all is delivered).
CREATE OR REPLACE FUNCTION attest_outbox_due() RETURNS TABLE (campus_id uuid, due_at timestamptz)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp
    AS $$
    WITH RECURSIVE pending(campus) AS (
        (SELECT o.campus_id FROM notification_outbox o
         WHERE o.delivered_at IS NULL AND o.dead_at IS NULL ORDER BY o.campus_id LIMIT 1)
        UNION ALL
        SELECT (SELECT o.campus_id FROM notification_outbox o
                WHERE o.delivered_at IS NULL AND o.dead_at IS NULL AND o.campus_id > p.campus
                ORDER BY o.campus_id LIMIT 1)
        FROM pending p WHERE p.campus IS NOT NULL
    )
    SELECT p.campus, (SELECT min(o.next_attempt_at) FROM notification_outbox o
                      WHERE o.campus_id = p.campus AND o.delivered_at IS NULL AND o.dead_at IS NULL)
    FROM pending p WHERE p.campus IS NOT NULL
    $$;
-- The campuses whose reminders ('reminder') or daily upkeep ('upkeep') are due by due_by (at
-- most at_most of them, the longest due first), and the one due next after it.
CREATE OR REPLACE FUNCTION attest_schedule_due(work text, due_by timestamptz, at_most integer)
    RETURNS TABLE (campus_id uuid, due_at timestamptz)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp
    AS $$
    (SELECT c.id, c.next_reminder_at FROM campuses c
     WHERE work = 'reminder' AND c.next_reminder_at <= due_by ORDER BY c.next_reminder_at LIMIT at_most)
    UNION ALL
    (SELECT c.id, c.next_reminder_at FROM campuses c
     WHERE work = 'reminder' AND c.next_reminder_at > due_by ORDER BY c.next_reminder_at LIMIT 1)
    UNION ALL
    (SELECT c.id, c.next_upkeep_at FROM campuses c
     WHERE work = 'upkeep' AND c.next_upkeep_at <= due_by ORDER BY c.next_upkeep_at LIMIT at_most)
    UNION ALL
    (SELECT c.id, c.next_upkeep_at FROM campuses c
     WHERE work = 'upkeep' AND c.next_upkeep_at > due_by ORDER BY c.next_upkeep_at LIMIT 1)
    $$;
-- What a server checks as it starts, in one read: the campuses holding a badge key in the clear
-- or under a key-encryption key other than kek_ids, or plugin settings stored before secrets
-- were sealed that may hold one (a member named like one of secret_words: the server decides).
CREATE OR REPLACE FUNCTION attest_sealing_census(kek_ids text[], secret_words text[])
    RETURNS TABLE (campus_id uuid)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp
    AS $$
    SELECT k.campus_id FROM badge_keys k WHERE k.kek_id IS NULL OR k.kek_id <> ALL (kek_ids)
    UNION
    SELECT s.campus_id FROM badge_subject_keys s WHERE s.kek_id <> ALL (kek_ids)
    UNION
    SELECT p.campus_id FROM campus_plugins p
    WHERE p.secrets IS NULL AND EXISTS (SELECT 1 FROM unnest(secret_words) w WHERE strpos(lower(p.settings::text), w) > 0)
    $$;
REVOKE ALL ON FUNCTION attest_outbox_due(), attest_schedule_due(text, timestamptz, integer), attest_sealing_census(text[], text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION attest_outbox_due(), attest_schedule_due(text, timestamptz, integer), attest_sealing_census(text[], text[]) TO attest_app;
-- Those doors read across campuses as the schema's owner, whom the forced row-level security
-- would show one campus at a time: the owner (and only it) may read every row of the tables
-- they read. It could lift the forcing itself; the application's role still sees one campus.
DO $$
DECLARE
    scanned_table text;
BEGIN
    FOREACH scanned_table IN ARRAY ARRAY['notification_outbox', 'badge_keys', 'badge_subject_keys', 'campus_plugins'] LOOP
        EXECUTE format('DROP POLICY IF EXISTS owner_reads ON %I', scanned_table);
        EXECUTE format('CREATE POLICY owner_reads ON %I FOR SELECT TO %I USING (true)', scanned_table, current_user);
    END LOOP;
END $$;
-- end of section
