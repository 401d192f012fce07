-- whom a reminder is for, in a column of its own: saving one's notification choices asks
-- whether today's `reminder.due` for the member is in the outbox (schema version 28), and that
-- read every row the campus's outbox keeps (a week of a campus's reminders: 130-190 ms a save at
-- 50,000 members, with the day's run waiting on the save's lock of its row). An index on the
-- payload's `userId` cannot serve it: the tables' row-level security lets a query use an index
-- only through leakproof operators, and jsonb's are not; a uuid's equality is. Only reminders
-- carry it: the events a submission writes pay for no index they do not use.
ALTER TABLE notification_outbox ADD COLUMN IF NOT EXISTS reminder_for uuid;
CREATE INDEX IF NOT EXISTS notification_outbox_reminders ON notification_outbox (campus_id, reminder_for)
    WHERE reminder_for IS NOT NULL;
-- The reminders of the last two days, campus by campus (the policies see one campus at a
-- time, under an owner that is neither superuser nor BYPASSRLS too).
DO $$
DECLARE
    campus uuid;
BEGIN
    FOR campus IN SELECT id FROM campuses LOOP
        PERFORM set_config('attest.campus_id', campus::text, true);
        UPDATE notification_outbox SET reminder_for = (payload->>'userId')::uuid
        WHERE campus_id = campus AND event = 'reminder.due' AND reminder_for IS NULL
          AND created_at > now() - interval '2 days'
          AND payload->>'userId' ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$';
    END LOOP;
    PERFORM set_config('attest.campus_id', '', true);
END $$;
