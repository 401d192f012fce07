-- an approved exemption a health officer ended reads 'ended', no longer 'denied'
-- Since 2026-11-30 a health officer may end an approved exemption (approved in error, or no
-- longer needed); it was stored as 'denied', so its member read "denied" of an exemption they
-- had held, and a retention or report could not tell a refusal from an ending. 'ended' keeps
-- it apart: no last day (as a denied one), decided_at when it ended. Those ended before this
-- version are found by their `exemption.revoke` audit entries, campus by campus (the policies
-- see one campus at a time, under an owner that is neither superuser nor BYPASSRLS too).
-- A server of an earlier version reads 'ended' as waiting while both run.
ALTER TABLE exemptions DROP CONSTRAINT IF EXISTS exemptions_status_check;
ALTER TABLE exemptions ADD CONSTRAINT exemptions_status_check
    CHECK (status IN ('pending', 'approved', 'denied', 'ended'));
DO $$
DECLARE
    campus uuid;
BEGIN
    FOR campus IN SELECT id FROM campuses LOOP
        PERFORM set_config('attest.campus_id', campus::text, true);
        UPDATE exemptions e SET status = 'ended'
        WHERE e.campus_id = campus AND e.status = 'denied'
          AND EXISTS (
              SELECT 1 FROM audit_log a
              WHERE a.campus_id = campus AND a.action = 'exemption.revoke' AND a.details->>'id' = e.id::text);
    END LOOP;
    PERFORM set_config('attest.campus_id', '', true);
END $$;
