-- attestations keyed by member and day; partial date indexes
ALTER TABLE attestations DROP CONSTRAINT attestations_pkey;
ALTER TABLE attestations DROP CONSTRAINT attestations_campus_id_user_id_local_date_key;
ALTER TABLE attestations ADD PRIMARY KEY (campus_id, user_id, local_date);
DROP INDEX attestations_by_day_color;
CREATE INDEX attestations_follow_ups ON attestations (campus_id, local_date, color)
    WHERE color <> 'green';
CREATE INDEX attestations_answered ON attestations (campus_id, local_date)
    WHERE answers IS NOT NULL;
