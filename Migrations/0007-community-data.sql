-- community data: a campus's home region, the community-data plugin kind, shared tables of imported figures
ALTER TABLE campuses ADD COLUMN IF NOT EXISTS community_region text
    CHECK (community_region ~ '^[A-Za-z0-9._:-]{1,64}$');
ALTER TABLE campus_plugins DROP CONSTRAINT IF EXISTS campus_plugins_kind_check;
ALTER TABLE campus_plugins ADD CONSTRAINT campus_plugins_kind_check
    CHECK (kind IN ('badge-rule', 'testing-locations', 'sink', 'community-data'));
CREATE TABLE IF NOT EXISTS community_regions (
    dataset     text NOT NULL CHECK (dataset ~ '^[a-z0-9][a-z0-9._-]*$' AND length(dataset) <= 64),
    region_id   text NOT NULL CHECK (region_id ~ '^[A-Za-z0-9._:-]{1,64}$'),
    name        text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    population  bigint CHECK (population > 0),
    PRIMARY KEY (dataset, region_id)
);
CREATE TABLE IF NOT EXISTS community_days (
    dataset     text NOT NULL,
    region_id   text NOT NULL,
    day         date NOT NULL,
    new_cases   integer NOT NULL,
    new_deaths  integer NOT NULL,
    PRIMARY KEY (dataset, region_id, day),
    FOREIGN KEY (dataset, region_id) REFERENCES community_regions ON DELETE CASCADE
);
GRANT SELECT ON community_regions, community_days TO attest_app;
