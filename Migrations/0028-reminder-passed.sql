-- the day a member's reminder had passed when they changed their time
-- A member reminded at 08:00 who then moves their time to 10:00 was reminded again at 10:00:
-- the run writes every member whose minute lies between the last run's and now's. The row now
-- keeps the campus-local day on which the member's old minute was already past when they
-- changed their choices, and that day's later runs leave them out.
ALTER TABLE member_notifications ADD COLUMN IF NOT EXISTS reminder_passed_on date;
