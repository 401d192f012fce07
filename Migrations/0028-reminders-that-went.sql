-- what of a day's reminders went: to a member who changed their time, at the campus's
-- A member reminded at 08:00 who then moves their time to 10:00 was reminded again at 10:00,
-- and a campus whose reminder time moved from 08:00 to 09:00 after 08:00 reminded everyone on
-- its time again: the run writes every member whose minute lies between the last run's and
-- now's. A member's row now keeps the campus-local day on which they had been reminded when they
-- changed their choices, and the day's run row keeps the campus's minute once a run passed it;
-- the day's later runs go by both.
ALTER TABLE member_notifications ADD COLUMN IF NOT EXISTS reminded_on date;
ALTER TABLE reminder_runs ADD COLUMN IF NOT EXISTS campus_minute smallint CHECK (campus_minute BETWEEN 0 AND 1439);
