-- reminders due per member minute: how far through its local day a campus's reminders are written
ALTER TABLE reminder_runs ADD COLUMN IF NOT EXISTS through_minute smallint NOT NULL DEFAULT -1
    CHECK (through_minute BETWEEN -1 AND 1439);
-- A day claimed before this version was written whole.
UPDATE reminder_runs SET through_minute = 1439 WHERE through_minute = -1;
