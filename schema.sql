-- Campus Attest: the whole schema, the readable picture of what `attest migrate` builds.
--
-- Rules (README.md, "Database", says why):
--  * Every tenant-owned table carries campus_id, and every primary and unique key starts
--    with it, so the schema distributes unchanged on Citus (distribution column campus_id).
--    `campuses` and `schema_migrations` are shared reference tables.
--  * Row-level security on every tenant-owned table admits only the rows of the campus set
--    for the current transaction (`attest.campus_id`, set with set_config(..., true)).
--    The server works as the role attest_app, which owns nothing and cannot bypass it.
--  * Applying this file twice changes nothing; `attest migrate` also records it in
--    schema_migrations and holds an advisory lock while it runs.

SET client_min_messages = warning;

-- The application role. NOLOGIN: a login role is granted it (the migrating role here;
-- in production the server's own login, see README.md, "Database").
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'attest_app') THEN
        CREATE ROLE attest_app NOLOGIN NOSUPERUSER NOBYPASSRLS;
    END IF;
EXCEPTION WHEN duplicate_object OR unique_violation THEN
    NULL; -- created concurrently by a migration of another database in this cluster
END $$;

DO $$
BEGIN
    IF NOT pg_has_role(current_user, 'attest_app', 'MEMBER') THEN
        EXECUTE format('GRANT attest_app TO %I', current_user);
    END IF;
EXCEPTION WHEN unique_violation THEN
    NULL; -- granted concurrently by a migration of another database in this cluster, by the same owner
END $$;

CREATE TABLE IF NOT EXISTS schema_migrations (
    version     integer PRIMARY KEY,
    name        text NOT NULL,
    applied_at  timestamptz NOT NULL DEFAULT now()
);

-- Reference table: one row per campus (tenant).
CREATE TABLE IF NOT EXISTS campuses (
    id                       uuid PRIMARY KEY,
    slug                     text NOT NULL UNIQUE
                             CHECK (slug ~ '^[a-z0-9][a-z0-9-]*[a-z0-9]$' AND length(slug) BETWEEN 2 AND 40),
    name                     text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    time_zone                text NOT NULL CHECK (length(time_zone) BETWEEN 1 AND 64),
    deadline_minute          integer NOT NULL DEFAULT 600 CHECK (deadline_minute BETWEEN 0 AND 1439),
    reminder_minute          integer NOT NULL DEFAULT 480 CHECK (reminder_minute BETWEEN 0 AND 1439),
    email_domains            text[] NOT NULL DEFAULT '{}',
    session_lifetime_seconds integer NOT NULL DEFAULT 2592000 CHECK (session_lifetime_seconds > 0),
    retention_days           integer NOT NULL DEFAULT 30 CHECK (retention_days BETWEEN 1 AND 3650),
    stats_min_count          integer NOT NULL DEFAULT 10 CHECK (stats_min_count >= 0),
    settings                 jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(settings) = 'object'),
    created_at               timestamptz NOT NULL DEFAULT now(),
    -- Moved on by every sign-out, role change and rename at the campus: servers keep verified
    -- sessions in memory while it stands (attest_auth_generations, below).
    auth_generation          bigint NOT NULL DEFAULT 0,
    -- The region whose community figures members see (a county FIPS code, say).
    community_region         text CHECK (community_region ~ '^[A-Za-z0-9._:-]{1,64}$'),
    -- When the campus's daily work next comes due, so that the servers find what is due in one
    -- indexed read whatever the number of campuses (attest_schedule_due, below): today's or
    -- tomorrow's reminders at the campus's reminder time, and its daily upkeep (retention,
    -- purges, rollup folding) at a minute of the small hours of its own. The epoch: due now
    -- (a new campus, a changed reminder time or zone); the day's claim keeps it once a day.
    next_reminder_at         timestamptz NOT NULL DEFAULT '1970-01-01 00:00:00+00',
    next_upkeep_at           timestamptz NOT NULL DEFAULT '1970-01-01 00:00:00+00'
);
CREATE INDEX IF NOT EXISTS campuses_next_reminder ON campuses (next_reminder_at);
CREATE INDEX IF NOT EXISTS campuses_next_upkeep ON campuses (next_upkeep_at);

-- OpenID Connect issuers a campus accepts ID tokens from.
CREATE TABLE IF NOT EXISTS campus_oidc_issuers (
    campus_id   uuid NOT NULL REFERENCES campuses (id) ON DELETE CASCADE,
    issuer      text NOT NULL CHECK (length(issuer) BETWEEN 1 AND 500),
    audiences   text[] NOT NULL CHECK (cardinality(audiences) > 0),
    jwks_url    text,
    jwks        jsonb,
    -- A campus that lists no email domains admits only issuers added with this set.
    allow_any_domain boolean NOT NULL DEFAULT false,
    -- The browser sign-in's web client: what the sign-in button says, the client ID, and the
    -- client secret sealed under the key-encryption key (SealedSecret).
    label       text CHECK (length(label) BETWEEN 1 AND 100),
    client_id   text CHECK (length(client_id) BETWEEN 1 AND 500),
    client_secret bytea,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (campus_id, issuer),
    CHECK (jwks_url IS NOT NULL OR jwks IS NOT NULL)
);

-- Which plugin of which kind a campus uses, with its settings.
CREATE TABLE IF NOT EXISTS campus_plugins (
    campus_id   uuid NOT NULL REFERENCES campuses (id) ON DELETE CASCADE,
    kind        text NOT NULL CHECK (kind IN ('badge-rule', 'testing-locations', 'sink', 'community-data', 'context')),
    plugin_id   text NOT NULL CHECK (plugin_id ~ '^[a-z0-9][a-z0-9._-]*$'),
    settings    jsonb NOT NULL DEFAULT '{}',
    -- The settings the plugin declares secret (a webhook's key, a feed URL that may carry an
    -- API key), as a JSON object sealed under the key-encryption key (SealedSecret).
    secrets     bytea,
    -- Their names, to list them without opening them.
    secret_names text[] NOT NULL DEFAULT '{}',
    enabled_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (campus_id, kind, plugin_id)
);

CREATE TABLE IF NOT EXISTS users (
    campus_id     uuid NOT NULL REFERENCES campuses (id) ON DELETE CASCADE,
    id            uuid NOT NULL,
    email         text NOT NULL CHECK (email = lower(email) AND email LIKE '%_@_%' AND length(email) <= 320),
    display_name  text NOT NULL DEFAULT '' CHECK (length(display_name) <= 200),
    -- A random stand-in for the user on badges: never the email.
    pseudonym     uuid NOT NULL DEFAULT gen_random_uuid(),
    oidc_issuer   text,
    oidc_subject  text,
    active        boolean NOT NULL DEFAULT true,
    created_at    timestamptz NOT NULL DEFAULT now(),
    -- What the user may do: every user is a member; grants and revocations are in the audit
    -- log. Kept on the row so that reading a session's member reads no other table.
    roles         text[] NOT NULL DEFAULT '{member}'
                  CHECK (roles <@ ARRAY['member', 'screener', 'health_officer', 'admin']::text[]),
    -- Compared with a SMART Health Card's birth date under `shc-identity` (DESIGN §11).
    birth_date    date,
    -- The campus's own id of the member (a student or employee number): a laboratory may name
    -- them by it (DESIGN §11).
    member_id     text CHECK (length(member_id) BETWEEN 1 AND 100),
    -- What the directory says of the user (SCIM, DESIGN §3): its userName (null: the email),
    -- externalId, and the other attributes of its SCIM representation it sent (name, emails,
    -- the enterprise extension's employeeNumber and department); whether the directory
    -- created or updated the user (`provisioning: scim-only` admits no one else), and when
    -- the directory last changed it.
    user_name     text CHECK (length(user_name) BETWEEN 1 AND 300),
    external_id   text CHECK (length(external_id) BETWEEN 1 AND 300),
    directory     jsonb,
    provisioned   boolean NOT NULL DEFAULT false,
    modified_at   timestamptz,
    -- When the directory deleted the user (deactivated under `scim-delete: deactivate`): gone
    -- from the directory's view until it creates them again or an operator reactivates them.
    deprovisioned_at timestamptz,
    -- The userName as compared (without case): a column of its own, so the comparison uses an
    -- index under row-level security too (an index on lower(…) is not: lower() is not leakproof).
    user_key      text GENERATED ALWAYS AS (lower(coalesce(user_name, email))) STORED,
    -- Roles held only because of directory groups (taken away when the groups no longer give
    -- them), and the groups the identity provider's `groups` claim named at the last sign-in.
    directory_roles text[] NOT NULL DEFAULT '{}',
    claimed_groups  text[] NOT NULL DEFAULT '{}',
    PRIMARY KEY (campus_id, id),
    UNIQUE (campus_id, email),
    UNIQUE (campus_id, pseudonym),
    UNIQUE (campus_id, oidc_issuer, oidc_subject)
);

-- Session tokens: only their SHA-256 hashes are stored.
CREATE TABLE IF NOT EXISTS sessions (
    campus_id   uuid NOT NULL,
    token_hash  bytea NOT NULL CHECK (length(token_hash) = 32),
    user_id     uuid NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    revoked_at  timestamptz,
    -- Minted by an operator (`attest token issue`), not signed in to by the member: such a
    -- session never opens the member's private journal, episodes, exports or links.
    by_operator boolean NOT NULL DEFAULT false,
    PRIMARY KEY (campus_id, token_hash),
    FOREIGN KEY (campus_id, user_id) REFERENCES users (campus_id, id) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS sessions_by_user ON sessions (campus_id, user_id);

-- ID tokens already exchanged for a session, kept until they expire, so that one signs in
-- once: the SHA-256 of the issuer and its jti (or of the whole token when it has none).
CREATE TABLE IF NOT EXISTS id_token_uses (
    campus_id   uuid NOT NULL REFERENCES campuses (id) ON DELETE CASCADE,
    token_id    bytea NOT NULL CHECK (length(token_id) = 32),
    expires_at  timestamptz NOT NULL,
    PRIMARY KEY (campus_id, token_id)
);

-- Nonces the server issued for a sign-in (the browser's flow), each good once for ten
-- minutes; only their SHA-256 hashes are stored.
CREATE TABLE IF NOT EXISTS sign_in_nonces (
    campus_id   uuid NOT NULL REFERENCES campuses (id) ON DELETE CASCADE,
    nonce_hash  bytea NOT NULL CHECK (length(nonce_hash) = 32),
    expires_at  timestamptz NOT NULL,
    PRIMARY KEY (campus_id, nonce_hash)
);

-- Keys that sign a campus's badge tokens; retired keys verify until their tokens expire.
-- private_key is sealed under the operator's key-encryption key (an AES-GCM envelope, see
-- SealedSecret), whose fingerprint is kek_id; NULL only for a key stored before keys were
-- sealed, which `attest serve` seals as it starts.
CREATE TABLE IF NOT EXISTS badge_keys (
    campus_id    uuid NOT NULL REFERENCES campuses (id) ON DELETE CASCADE,
    kid          text NOT NULL,
    algorithm    text NOT NULL CHECK (algorithm IN ('ES256', 'EdDSA')),
    private_key  bytea NOT NULL,
    kek_id       text,
    public_jwk   jsonb NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    retired_at   timestamptz,
    PRIMARY KEY (campus_id, kid)
);

-- The key a campus's badge subjects are made with (an HMAC of the member's pseudonym and the
-- date, so a subject changes every day), sealed like the signing keys.
CREATE TABLE IF NOT EXISTS badge_subject_keys (
    campus_id   uuid NOT NULL REFERENCES campuses (id) ON DELETE CASCADE,
    sealed      bytea NOT NULL,
    kek_id      text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (campus_id)
);

-- Versioned questionnaires; the active one is the highest version.
CREATE TABLE IF NOT EXISTS questionnaires (
    campus_id     uuid NOT NULL REFERENCES campuses (id) ON DELETE CASCADE,
    version       integer NOT NULL CHECK (version > 0),
    definition    jsonb NOT NULL CHECK (jsonb_typeof(definition) = 'object'),
    published_at  timestamptz NOT NULL DEFAULT now(),
    published_by  text NOT NULL,
    -- The members' questionnaire, or the guests' (`attest survey publish --guest`).
    audience      text NOT NULL DEFAULT 'member' CHECK (audience IN ('member', 'guest')),
    PRIMARY KEY (campus_id, version)
);

-- One attestation per member per campus-local day, which is its key. Answers are the only
-- health data and are set to NULL by the retention purge; the badge and the rollups stay.
-- `id` is the attestation's public name (a UUIDv7 made by the server); nothing looks a row
-- up by it, so it has no index of its own. `survey_version` names a row of `questionnaires`
-- with no foreign key: a version is never changed or deleted by the application (below), and
-- the server writes only the version it read there. The key's per-row check cost about 15%
-- of the submissions a second (docs/database.md).
CREATE TABLE IF NOT EXISTS attestations (
    campus_id        uuid NOT NULL,
    id               uuid NOT NULL,
    user_id          uuid NOT NULL,
    local_date       date NOT NULL,
    submitted_at     timestamptz NOT NULL,
    on_time          boolean NOT NULL,
    survey_version   integer NOT NULL,
    answers          jsonb,
    color            text NOT NULL CHECK (color IN ('green', 'yellow', 'red')),
    reason           text NOT NULL DEFAULT '',
    valid_until      timestamptz NOT NULL,
    rule_id          text NOT NULL,
    rule_version     text NOT NULL DEFAULT '',
    idempotency_key  text CHECK (length(idempotency_key) BETWEEN 1 AND 200),
    -- The SHA-256 of what the key was sent with (the questionnaire version and answers): the
    -- same key with another body is refused, not replayed (draft-ietf-httpapi-idempotency-key-header).
    idempotency_digest bytea CHECK (length(idempotency_digest) = 32),
    answers_purged_at timestamptz,
    PRIMARY KEY (campus_id, user_id, local_date),
    FOREIGN KEY (campus_id, user_id) REFERENCES users (campus_id, id) ON DELETE CASCADE
);
-- The day's follow-up list (red and yellow: about 15% of rows, so the index is that small).
CREATE INDEX IF NOT EXISTS attestations_follow_ups ON attestations (campus_id, local_date, color)
    WHERE color <> 'green';
-- The days the retention purge has still to clear; a purged row leaves it.
CREATE INDEX IF NOT EXISTS attestations_answered ON attestations (campus_id, local_date)
    WHERE answers IS NOT NULL;
-- A retried submission's key; partial, since most submissions carry none.
CREATE UNIQUE INDEX IF NOT EXISTS attestations_idempotency ON attestations (campus_id, user_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;

-- Daily rollups, kept with each write so dashboards cost O(days). A day's counts may be
-- split over several shard rows so concurrent writers do not queue on one row; readers sum.
CREATE TABLE IF NOT EXISTS daily_stats (
    campus_id   uuid NOT NULL,
    local_date  date NOT NULL,
    shard       smallint NOT NULL DEFAULT 0 CHECK (shard >= 0),
    submitted   integer NOT NULL DEFAULT 0,
    on_time     integer NOT NULL DEFAULT 0,
    late        integer NOT NULL DEFAULT 0,
    green       integer NOT NULL DEFAULT 0,
    yellow      integer NOT NULL DEFAULT 0,
    red         integer NOT NULL DEFAULT 0,
    PRIMARY KEY (campus_id, local_date, shard),
    FOREIGN KEY (campus_id) REFERENCES campuses (id) ON DELETE CASCADE
);

-- Per day, how many attestations gave each answer (boolean true, each choice option).
CREATE TABLE IF NOT EXISTS daily_answer_counts (
    campus_id    uuid NOT NULL,
    local_date   date NOT NULL,
    question_id  text NOT NULL,
    answer       text NOT NULL,
    shard        smallint NOT NULL DEFAULT 0 CHECK (shard >= 0),
    count        integer NOT NULL DEFAULT 0,
    PRIMARY KEY (campus_id, local_date, question_id, answer, shard),
    FOREIGN KEY (campus_id) REFERENCES campuses (id) ON DELETE CASCADE
);

-- Active members per campus-local day, kept as changes: +1 when a member is added (on the
-- local date of created_at) or reactivated, -1 when deactivated or deleted. A day's active
-- count is the sum of the changes up to it: O(days) for dashboards, never O(members).
-- The statements that add users write it too (UserStore.countAddedMembers): no trigger,
-- which Citus would refuse on a distributed table.
CREATE TABLE IF NOT EXISTS member_changes (
    campus_id   uuid NOT NULL REFERENCES campuses (id) ON DELETE CASCADE,
    local_date  date NOT NULL,
    change      integer NOT NULL DEFAULT 0,
    PRIMARY KEY (campus_id, local_date)
);

-- Retention: answers before purged_before are gone; last_daily_run claims the servers'
-- daily purge (one server per campus-local day).
CREATE TABLE IF NOT EXISTS purge_state (
    campus_id       uuid NOT NULL REFERENCES campuses (id) ON DELETE CASCADE,
    purged_before   date,
    last_daily_run  date,
    PRIMARY KEY (campus_id)
);

-- Reference tables: public-health figures by region, shared by every campus (public data,
-- not campus-owned), filled by `attest community import` and read by the `imported`
-- community-data provider. Daily figures, not running totals.
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

CREATE TABLE IF NOT EXISTS testing_locations (
    campus_id   uuid NOT NULL REFERENCES campuses (id) ON DELETE CASCADE,
    id          uuid NOT NULL,
    name        text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    address     text NOT NULL DEFAULT '',
    latitude    double precision NOT NULL CHECK (latitude BETWEEN -90 AND 90),
    longitude   double precision NOT NULL CHECK (longitude BETWEEN -180 AND 180),
    hours       text NOT NULL DEFAULT '',
    phone       text NOT NULL DEFAULT '',
    url         text NOT NULL DEFAULT '',
    notes       text NOT NULL DEFAULT '',
    PRIMARY KEY (campus_id, id)
);

-- Transactional outbox: written in the same transaction as the event's cause, delivered by
-- the workers of every server (FOR UPDATE SKIP LOCKED), one row per event and subscribed sink.
CREATE TABLE IF NOT EXISTS notification_outbox (
    campus_id        uuid NOT NULL REFERENCES campuses (id) ON DELETE CASCADE,
    id               uuid NOT NULL,
    event            text NOT NULL CHECK (event ~ '^[a-z]+(\.[a-z_]+)+$'),
    sink_id          text NOT NULL,
    payload          jsonb NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    attempts         integer NOT NULL DEFAULT 0,
    -- Retries stop (dead letter) once the event is older than the sink's maximum age,
    -- counted from here: the event's creation, or an operator's `attest outbox retry`.
    window_start     timestamptz NOT NULL DEFAULT now(),
    next_attempt_at  timestamptz NOT NULL DEFAULT now(),
    delivered_at     timestamptz,
    dead_at          timestamptz,
    last_error       text,
    -- The W3C traceparent of what caused the event, when it was traced (schema version 17):
    -- its delivery's span continues that trace. Random ids only, nothing about a person.
    trace_parent     text CHECK (length(trace_parent) <= 256),
    -- The member a `reminder.due` is for (schema version 29; NULL for every other event), so
    -- that saving one's choices finds whether one was reminded today by an index: one on the
    -- payload's `userId` would be of no use under row-level security (jsonb's operators are
    -- not leakproof).
    reminder_for     uuid,
    PRIMARY KEY (campus_id, id, sink_id)
);
CREATE INDEX IF NOT EXISTS notification_outbox_due ON notification_outbox (campus_id, next_attempt_at)
    WHERE delivered_at IS NULL AND dead_at IS NULL;
CREATE INDEX IF NOT EXISTS notification_outbox_reminders ON notification_outbox (campus_id, reminder_for)
    WHERE reminder_for IS NOT NULL;

-- One row per campus and local day once that day's reminders were written (by whichever
-- server got here first), so each member is reminded at most once a day.
-- A campus's reminders of a local day: `through_minute` is the last campus-local minute whose
-- reminders are written (-1: none yet; schema version 21). Each member is due at their own
-- minute (`member_notifications`), so a run writes those due after it and up to now, under
-- this row's lock: however many servers run, each member once.
CREATE TABLE IF NOT EXISTS reminder_runs (
    campus_id       uuid NOT NULL REFERENCES campuses (id) ON DELETE CASCADE,
    local_date      date NOT NULL,
    ran_at          timestamptz NOT NULL DEFAULT now(),
    reminded        integer NOT NULL DEFAULT 0,
    through_minute  smallint NOT NULL DEFAULT -1 CHECK (through_minute BETWEEN -1 AND 1439),
    -- The campus's reminder minute once a run of the day passed it (schema version 28): the
    -- day's later runs keep it, so a time the campus moves later that day reminds nobody twice.
    campus_minute   smallint CHECK (campus_minute BETWEEN 0 AND 1439),
    PRIMARY KEY (campus_id, local_date)
);

-- Append-only record of permission changes, imports, token issues and identifiable reads.
-- A member's private journal: only the member sees it (a second, restrictive policy keyed on
-- attest.user_id, below). Title and text are sealed under the key-encryption key; the date
-- and tags stay in the clear for listing and export ranges.
CREATE TABLE IF NOT EXISTS journal_entries (
    campus_id   uuid NOT NULL,
    user_id     uuid NOT NULL,
    id          uuid NOT NULL,
    entry_date  date NOT NULL,
    tags        text[] NOT NULL DEFAULT '{}'
                CHECK (tags <@ ARRAY['symptom', 'treatment', 'quarantine', 'contact', 'place']::text[]),
    sealed      bytea NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (campus_id, user_id, id),
    FOREIGN KEY (campus_id, user_id) REFERENCES users (campus_id, id) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS journal_entries_by_date ON journal_entries (campus_id, user_id, entry_date DESC, id DESC);

-- At most one recording an entry; its type was read from its bytes. Sealed in 64 KiB chunks
-- (journal_audio_chunks) under a data key of its own, which data_key holds sealed under the
-- key-encryption key; a recording stored before chunks (schema version 15) is one envelope in
-- sealed.
CREATE TABLE IF NOT EXISTS journal_audio (
    campus_id    uuid NOT NULL,
    user_id      uuid NOT NULL,
    entry_id     uuid NOT NULL,
    content_type text NOT NULL CHECK (content_type IN ('audio/webm', 'audio/ogg', 'audio/mpeg', 'audio/mp4', 'audio/wav')),
    size         integer NOT NULL CHECK (size BETWEEN 1 AND 5242880),
    sealed       bytea,
    data_key     bytea,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (campus_id, user_id, entry_id),
    FOREIGN KEY (campus_id, user_id, entry_id) REFERENCES journal_entries (campus_id, user_id, id) ON DELETE CASCADE,
    CHECK ((sealed IS NULL) <> (data_key IS NULL))
);

-- A recording's chunks: each 64 KiB of it sealed (AES-GCM) under its data key, the nonce
-- naming the chunk's index and whether it is the last (Recordings.swift).
CREATE TABLE IF NOT EXISTS journal_audio_chunks (
    campus_id    uuid NOT NULL,
    user_id      uuid NOT NULL,
    entry_id     uuid NOT NULL,
    chunk        integer NOT NULL CHECK (chunk BETWEEN 0 AND 1023),
    sealed       bytea NOT NULL,
    PRIMARY KEY (campus_id, user_id, entry_id, chunk),
    FOREIGN KEY (campus_id, user_id, entry_id) REFERENCES journal_audio (campus_id, user_id, entry_id) ON DELETE CASCADE
);

-- Episodes (a headache, a migraine, a kind the campus adds): at most one open a kind. The
-- notes are sealed; the place is kept to a tenth of a degree; context and baseline are the
-- weather there at the start and at the same hour the day before (EnvironmentFactors).
CREATE TABLE IF NOT EXISTS episodes (
    campus_id    uuid NOT NULL,
    user_id      uuid NOT NULL,
    id           uuid NOT NULL,
    kind         text NOT NULL CHECK (kind ~ '^[a-z][a-z0-9-]{0,39}$'),
    severity     smallint NOT NULL CHECK (severity BETWEEN 0 AND 10),
    sealed       bytea NOT NULL,
    started_at   timestamptz NOT NULL,
    stopped_at   timestamptz CHECK (stopped_at >= started_at),
    auto_closed  boolean NOT NULL DEFAULT false,
    latitude     double precision CHECK (latitude BETWEEN -90 AND 90),
    longitude    double precision CHECK (longitude BETWEEN -180 AND 180),
    context      jsonb,
    baseline     jsonb,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (campus_id, user_id, id),
    FOREIGN KEY (campus_id, user_id) REFERENCES users (campus_id, id) ON DELETE CASCADE,
    CHECK ((latitude IS NULL) = (longitude IS NULL))
);
CREATE UNIQUE INDEX IF NOT EXISTS episodes_one_open ON episodes (campus_id, user_id, kind) WHERE stopped_at IS NULL;
CREATE INDEX IF NOT EXISTS episodes_by_start ON episodes (campus_id, user_id, started_at DESC, id DESC);

-- Links a member gives a clinician: a read-only view of a date range until it expires or is
-- revoked. Only the token's hash is kept; each opening is in the member's own access log.
CREATE TABLE IF NOT EXISTS journal_shares (
    campus_id   uuid NOT NULL,
    user_id     uuid NOT NULL,
    id          uuid NOT NULL,
    token_hash  bytea NOT NULL CHECK (length(token_hash) = 32),
    from_date   date NOT NULL,
    to_date     date NOT NULL CHECK (to_date >= from_date),
    expires_at  timestamptz NOT NULL,
    revoked_at  timestamptz,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (campus_id, user_id, id),
    UNIQUE (campus_id, token_hash),
    FOREIGN KEY (campus_id, user_id) REFERENCES users (campus_id, id) ON DELETE CASCADE
);

CREATE TABLE IF NOT EXISTS journal_share_openings (
    campus_id   uuid NOT NULL,
    user_id     uuid NOT NULL,
    share_id    uuid NOT NULL,
    id          uuid NOT NULL DEFAULT gen_random_uuid(),
    opened_at   timestamptz NOT NULL DEFAULT now(),
    format      text NOT NULL CHECK (format IN ('pdf', 'csv', 'json')),
    PRIMARY KEY (campus_id, user_id, id),
    FOREIGN KEY (campus_id, user_id, share_id) REFERENCES journal_shares (campus_id, user_id, id) ON DELETE CASCADE
);

-- What a member chose for their own journal and episodes: kept for this many days (by the
-- entry's date, the episode's start), or forever when null. Not private in itself: the daily
-- upkeep reads every member's choice of the campus.
CREATE TABLE IF NOT EXISTS member_settings (
    campus_id          uuid NOT NULL,
    user_id            uuid NOT NULL,
    journal_keep_days  integer CHECK (journal_keep_days BETWEEN 1 AND 3650),
    updated_at         timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (campus_id, user_id),
    FOREIGN KEY (campus_id, user_id) REFERENCES users (campus_id, id) ON DELETE CASCADE
);

-- Door checks, counted per door and hour (schema version 18): a screener names the door,
-- and each verdict the server gives there adds one to its row (the badge's colour, or why it
-- was refused; guest or member). Never who: no member, subject or token is kept. `hour` is
-- the start of the campus-local hour. A server adds its counts every few seconds.
CREATE TABLE IF NOT EXISTS door_counts (
    campus_id  uuid NOT NULL REFERENCES campuses (id) ON DELETE CASCADE,
    door       text NOT NULL CHECK (length(door) BETWEEN 1 AND 80),
    hour       timestamptz NOT NULL,
    verdict    text NOT NULL CHECK (verdict ~ '^[a-z][a-z-]{0,31}$'),
    guest      boolean NOT NULL DEFAULT false,
    count      integer NOT NULL CHECK (count > 0),
    PRIMARY KEY (campus_id, hour, door, verdict, guest)
);

-- A member's saved places and private health profile (schema version 19), each seen by
-- that member only. Places: the regions followed on the community page, in order, at most
-- 10. Profile: birth year, height and weight, sealed under the key-encryption key like the
-- journal (re-wrapped by `attest keys rotate-kek`).
CREATE TABLE IF NOT EXISTS member_places (
    campus_id   uuid NOT NULL,
    user_id     uuid NOT NULL,
    regions     text[] NOT NULL CHECK (cardinality(regions) <= 10),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (campus_id, user_id),
    FOREIGN KEY (campus_id, user_id) REFERENCES users (campus_id, id) ON DELETE CASCADE
);
CREATE TABLE IF NOT EXISTS member_profiles (
    campus_id   uuid NOT NULL,
    user_id     uuid NOT NULL,
    sealed      bytea NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (campus_id, user_id),
    FOREIGN KEY (campus_id, user_id) REFERENCES users (campus_id, id) ON DELETE CASCADE
);

-- Each member's notification preferences (schema version 20): channels, a reminder time
-- (campus-local minutes after midnight, null: the campus's), quiet hours (both or neither,
-- not equal; they may span midnight) and a language (null: the campus's). No row: the
-- defaults. Read per campus by the reminders, so not behind member_only.
CREATE TABLE IF NOT EXISTS member_notifications (
    campus_id        uuid NOT NULL,
    user_id          uuid NOT NULL,
    email            boolean NOT NULL DEFAULT true,
    push             boolean NOT NULL DEFAULT false,
    reminder_minute  smallint CHECK (reminder_minute BETWEEN 0 AND 1439),
    quiet_from       smallint CHECK (quiet_from BETWEEN 0 AND 1439),
    quiet_to         smallint CHECK (quiet_to BETWEEN 0 AND 1439),
    language         text CHECK (language ~ '^[a-z]{2}$'),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    -- The campus-local day on which the member had been reminded when they last changed their
    -- choices (schema version 28): that day's later runs leave them out, so a time moved later
    -- does not remind them twice.
    reminded_on      date,
    PRIMARY KEY (campus_id, user_id),
    FOREIGN KEY (campus_id, user_id) REFERENCES users (campus_id, id) ON DELETE CASCADE,
    CHECK ((quiet_from IS NULL) = (quiet_to IS NULL) AND (quiet_from IS NULL OR quiet_from <> quiet_to))
);

-- Each campus's VAPID key for Web Push (schema version 22, RFC 8292): the P-256 private key
-- sealed under the key-encryption key, the public key (base64url, uncompressed point) in the
-- clear for browsers' applicationServerKey.
CREATE TABLE IF NOT EXISTS push_keys (
    campus_id    uuid NOT NULL REFERENCES campuses (id) ON DELETE CASCADE,
    private_key  bytea NOT NULL,
    public_key   text NOT NULL CHECK (public_key ~ '^[A-Za-z0-9_-]{87}$'),
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (campus_id)
);

-- A member's browsers that subscribed to push: the subscription (endpoint, p256dh, auth)
-- sealed whole, since its endpoint and secret let anyone push to that browser; found again
-- by the SHA-256 of its endpoint. Read per campus by the outbox, so not behind member_only.
CREATE TABLE IF NOT EXISTS push_subscriptions (
    campus_id      uuid NOT NULL,
    user_id        uuid NOT NULL,
    id             uuid NOT NULL,
    endpoint_hash  bytea NOT NULL CHECK (length(endpoint_hash) = 32),
    subscription   bytea NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (campus_id, user_id, id),
    UNIQUE (campus_id, endpoint_hash),
    FOREIGN KEY (campus_id, user_id) REFERENCES users (campus_id, id) ON DELETE CASCADE
);

-- Health records (DESIGN §11).
-- A machine's bearer token at one campus (a laboratory's, or the directory's provisioner): no user stands behind it, so it
-- opens no member route; only its SHA-256 is kept.
CREATE TABLE IF NOT EXISTS machine_tokens (
    campus_id   uuid NOT NULL REFERENCES campuses (id) ON DELETE CASCADE,
    token_hash  bytea NOT NULL CHECK (length(token_hash) = 32),
    role        text NOT NULL CHECK (role IN ('lab', 'provisioner')),
    name        text NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    revoked_at  timestamptz,
    PRIMARY KEY (campus_id, token_hash)
);
-- Test results, one per specimen: a later result for the same specimen is a correction and
-- replaces it. user_id is null while the result matches no member (a health officer matches
-- or dismisses it); subject is the identifier it came with (an email or the campus's id).
CREATE TABLE IF NOT EXISTS test_results (
    campus_id     uuid NOT NULL,
    id            uuid NOT NULL,
    specimen_id   text NOT NULL CHECK (length(specimen_id) BETWEEN 1 AND 200),
    user_id       uuid,
    subject       text NOT NULL CHECK (length(subject) BETWEEN 1 AND 320),
    test_code     text NOT NULL CHECK (test_code ~ '^[0-9]{1,7}-[0-9]$'),
    detected      boolean NOT NULL,
    collected_at  timestamptz NOT NULL,
    resulted_at   timestamptz NOT NULL,
    source        text NOT NULL CHECK (length(source) BETWEEN 1 AND 120),
    received_at   timestamptz NOT NULL DEFAULT now(),
    dismissed_at  timestamptz,
    -- A health officer ended the isolation this (positive) result started, early.
    released_at   timestamptz,
    PRIMARY KEY (campus_id, specimen_id),
    UNIQUE (campus_id, id),
    FOREIGN KEY (campus_id, user_id) REFERENCES users (campus_id, id) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS test_results_by_member ON test_results (campus_id, user_id) WHERE user_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS test_results_unmatched ON test_results (campus_id, received_at)
    WHERE user_id IS NULL AND dismissed_at IS NULL;
-- Each member's health status as last recomputed from their whole record (no row: no record;
-- Records, DESIGN §11), in a narrow table: an import rewrites tens of thousands at once, and a
-- `users` row's every index would take each new version (schema version 27).
CREATE TABLE IF NOT EXISTS member_health (
    campus_id  uuid NOT NULL,
    user_id    uuid NOT NULL,
    health     jsonb NOT NULL,
    PRIMARY KEY (campus_id, user_id),
    FOREIGN KEY (campus_id, user_id) REFERENCES users (campus_id, id) ON DELETE CASCADE
);
-- Exemptions a member asked for (medical, religious, other), with their note sealed under
-- the key-encryption key, and a health officer's decision: approved until a day, or denied.
CREATE TABLE IF NOT EXISTS exemptions (
    campus_id     uuid NOT NULL,
    user_id       uuid NOT NULL,
    id            uuid NOT NULL,
    kind          text NOT NULL CHECK (kind IN ('medical', 'religious', 'other')),
    note          bytea NOT NULL,
    requested_at  timestamptz NOT NULL DEFAULT now(),
    -- 'ended': approved, then ended by a health officer before its last day (schema version 30).
    status        text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'approved', 'denied', 'ended')),
    expires_on    date,
    reason        text NOT NULL DEFAULT '' CHECK (length(reason) <= 500),
    decided_by    text,
    decided_at    timestamptz,
    PRIMARY KEY (campus_id, user_id, id),
    UNIQUE (campus_id, id),
    FOREIGN KEY (campus_id, user_id) REFERENCES users (campus_id, id) ON DELETE CASCADE,
    CHECK ((status = 'approved') = (expires_on IS NOT NULL)),
    CHECK ((status = 'pending') = (decided_at IS NULL))
);
CREATE INDEX IF NOT EXISTS exemptions_pending ON exemptions (campus_id, requested_at) WHERE status = 'pending';
CREATE UNIQUE INDEX IF NOT EXISTS exemptions_one_pending ON exemptions (campus_id, user_id) WHERE status = 'pending';
-- Isolations and quarantines a health officer started by hand (a positive result's isolation
-- is its result's: test_results.released_at ends it early).
CREATE TABLE IF NOT EXISTS isolations (
    campus_id    uuid NOT NULL,
    user_id      uuid NOT NULL,
    id           uuid NOT NULL,
    kind         text NOT NULL CHECK (kind IN ('isolation', 'quarantine')),
    starts_on    date NOT NULL,
    ends_on      date NOT NULL CHECK (ends_on >= starts_on),
    started_by   text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    released_at  timestamptz,
    PRIMARY KEY (campus_id, user_id, id),
    UNIQUE (campus_id, id),
    FOREIGN KEY (campus_id, user_id) REFERENCES users (campus_id, id) ON DELETE CASCADE
);
CREATE TABLE IF NOT EXISTS audit_log (
    campus_id   uuid NOT NULL REFERENCES campuses (id) ON DELETE CASCADE,
    -- No sequence (Citus distributes the log by campus); entries are ordered by at, then id,
    -- and clock_timestamp() keeps the entries of one transaction in their order.
    id          uuid NOT NULL DEFAULT gen_random_uuid(),
    at          timestamptz NOT NULL DEFAULT clock_timestamp(),
    actor       text NOT NULL,
    action      text NOT NULL,
    target      text NOT NULL DEFAULT '',
    details     jsonb NOT NULL DEFAULT '{}',
    PRIMARY KEY (campus_id, id)
);
CREATE INDEX IF NOT EXISTS audit_log_by_time ON audit_log (campus_id, at);

CREATE UNIQUE INDEX IF NOT EXISTS users_member_id ON users (campus_id, member_id) WHERE member_id IS NOT NULL;

-- SMART Health Cards (DESIGN §11).
-- The VCI Directory's issuers, shared by every campus (`attest shc directory import`): each
-- issuer's public keys and revocation lists as the signed snapshot gives them.
CREATE TABLE IF NOT EXISTS shc_directory (
    iss            text PRIMARY KEY CHECK (length(iss) BETWEEN 1 AND 500),
    canonical_iss  text CHECK (length(canonical_iss) BETWEEN 1 AND 500),
    name           text NOT NULL CHECK (length(name) BETWEEN 1 AND 300),
    jwks           jsonb NOT NULL,
    crls           jsonb NOT NULL DEFAULT '[]',
    imported_at    timestamptz NOT NULL DEFAULT now()
);
GRANT SELECT ON shc_directory TO attest_app;
-- A campus's own trusted issuers (`attest shc issuer add`): a pilot's, a test's.
CREATE TABLE IF NOT EXISTS shc_issuers (
    campus_id  uuid NOT NULL REFERENCES campuses (id) ON DELETE CASCADE,
    iss        text NOT NULL CHECK (length(iss) BETWEEN 1 AND 500),
    name       text NOT NULL CHECK (length(name) BETWEEN 1 AND 300),
    jwks       jsonb NOT NULL,
    crls       jsonb NOT NULL DEFAULT '[]',
    added_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (campus_id, iss)
);
-- Each COVID-19 dose a member's verified card gave: its CVX code, the day, the issuer and
-- when the card was verified. Never the card itself.
CREATE TABLE IF NOT EXISTS vaccinations (
    campus_id    uuid NOT NULL,
    user_id      uuid NOT NULL,
    cvx          text NOT NULL CHECK (cvx ~ '^[0-9]{1,3}$'),
    given_on     date NOT NULL,
    issuer       text NOT NULL CHECK (length(issuer) BETWEEN 1 AND 500),
    verified_at  timestamptz NOT NULL,
    PRIMARY KEY (campus_id, user_id, given_on, cvx),
    FOREIGN KEY (campus_id, user_id) REFERENCES users (campus_id, id) ON DELETE CASCADE
);

-- Provisioning from the university's directory (SCIM 2.0, DESIGN §3).
CREATE UNIQUE INDEX IF NOT EXISTS users_user_name ON users (campus_id, user_key);
CREATE INDEX IF NOT EXISTS users_external_id ON users (campus_id, external_id) WHERE external_id IS NOT NULL;
-- The few users a directory deleted (a creation looks for them first): found without a scan.
CREATE INDEX IF NOT EXISTS users_deprovisioned ON users (campus_id) WHERE deprovisioned_at IS NOT NULL;
-- The directory's groups at one campus, and their members.
CREATE TABLE IF NOT EXISTS directory_groups (
    campus_id     uuid NOT NULL REFERENCES campuses (id) ON DELETE CASCADE,
    id            uuid NOT NULL,
    display_name  text NOT NULL CHECK (length(display_name) BETWEEN 1 AND 300),
    external_id   text CHECK (length(external_id) BETWEEN 1 AND 300),
    created_at    timestamptz NOT NULL DEFAULT now(),
    modified_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (campus_id, id)
);
CREATE INDEX IF NOT EXISTS directory_groups_by_name ON directory_groups (campus_id, lower(display_name));
CREATE TABLE IF NOT EXISTS directory_group_members (
    campus_id  uuid NOT NULL,
    group_id   uuid NOT NULL,
    user_id    uuid NOT NULL,
    PRIMARY KEY (campus_id, group_id, user_id),
    FOREIGN KEY (campus_id, group_id) REFERENCES directory_groups (campus_id, id) ON DELETE CASCADE,
    FOREIGN KEY (campus_id, user_id) REFERENCES users (campus_id, id) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS directory_group_members_by_user ON directory_group_members (campus_id, user_id);
-- Which role a directory group gives (`attest campus roles map`): the group by displayName or
-- externalId (a SCIM group's, or a name in the `groups` claim).
CREATE TABLE IF NOT EXISTS role_mappings (
    campus_id  uuid NOT NULL REFERENCES campuses (id) ON DELETE CASCADE,
    group_key  text NOT NULL CHECK (length(group_key) BETWEEN 1 AND 300),
    role       text NOT NULL CHECK (role IN ('screener', 'health_officer', 'admin')),
    PRIMARY KEY (campus_id, group_key, role)
);

-- Guests (DESIGN §12): a day pass for visitors without a university account.
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

-- Row-level security: the second wall behind the application's own scoping.
DO $$
DECLARE
    tenant_table text;
BEGIN
    FOREACH tenant_table IN ARRAY ARRAY[
        'campus_oidc_issuers', 'campus_plugins', 'users', 'sessions', 'id_token_uses', 'sign_in_nonces', 'badge_keys', 'badge_subject_keys',
        'questionnaires', 'attestations', 'daily_stats', 'daily_answer_counts', 'testing_locations',
        'notification_outbox', 'reminder_runs', 'member_changes', 'purge_state', 'audit_log',
        'journal_entries', 'journal_audio', 'journal_audio_chunks', 'episodes', 'journal_shares', 'journal_share_openings', 'member_settings',
        'door_counts', 'member_places', 'member_profiles', 'member_notifications', 'push_keys', 'push_subscriptions',
        'machine_tokens', 'test_results', 'isolations', 'exemptions', 'shc_issuers', 'vaccinations',
        'directory_groups', 'directory_group_members', 'role_mappings', 'guest_visits', 'member_health'
    ] LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', tenant_table);
        EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', tenant_table);
        EXECUTE format('DROP POLICY IF EXISTS campus_isolation ON %I', tenant_table);
        EXECUTE format(
            'CREATE POLICY campus_isolation ON %I '
            'USING (campus_id = nullif(current_setting(''attest.campus_id'', true), '''')::uuid) '
            'WITH CHECK (campus_id = nullif(current_setting(''attest.campus_id'', true), '''')::uuid)',
            tenant_table);
        EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON %I TO attest_app', tenant_table);
    END LOOP;
END $$;

-- The member's own tables: besides the campus, the member a transaction names
-- (attest.user_id) is the only one whose rows it sees or writes. Restrictive: it narrows
-- campus_isolation, never widens it.
DO $$
DECLARE
    private_table text;
BEGIN
    FOREACH private_table IN ARRAY ARRAY['journal_entries', 'journal_audio', 'journal_audio_chunks', 'episodes', 'journal_shares', 'journal_share_openings',
        'member_places', 'member_profiles'] LOOP
        EXECUTE format('DROP POLICY IF EXISTS member_only ON %I', private_table);
        EXECUTE format(
            'CREATE POLICY member_only ON %I AS RESTRICTIVE '
            'USING (user_id = nullif(current_setting(''attest.user_id'', true), '''')::uuid) '
            'WITH CHECK (user_id = nullif(current_setting(''attest.user_id'', true), '''')::uuid)',
            private_table);
    END LOOP;
END $$;

-- The audit log is append-only for the application.
REVOKE UPDATE, DELETE ON audit_log FROM attest_app;
-- So are questionnaires: a published version is what its attestations were answered against.
REVOKE UPDATE, DELETE ON questionnaires FROM attest_app;

-- Campuses: a transaction with campus A set sees and changes row A only. Not FORCEd: the
-- owner (migrations, an operator's `attest campus list`) sees every row. The application
-- never deletes a campus (a cascade would take its append-only audit log with it).
ALTER TABLE campuses ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS campus_isolation ON campuses;
CREATE POLICY campus_isolation ON campuses
    USING (id = nullif(current_setting('attest.campus_id', true), '')::uuid)
    WITH CHECK (id = nullif(current_setting('attest.campus_id', true), '')::uuid);
REVOKE DELETE ON campuses FROM attest_app;
GRANT SELECT, INSERT, UPDATE ON campuses TO attest_app;

-- The two reads of campuses that come before a campus is known, each a named door through
-- the wall: a request's slug resolved to its campus, and the list operators' commands go
-- through (`campus list`, `purge`, `keys rotate-kek`; the servers' background work finds due
-- campuses through the doors of version 16, below). SECURITY DEFINER runs them as the owner.
CREATE OR REPLACE FUNCTION attest_campus_by_slug(wanted text) RETURNS SETOF campuses
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp
    AS $$ SELECT * FROM campuses WHERE slug = wanted $$;
CREATE OR REPLACE FUNCTION attest_campus_directory() RETURNS SETOF campuses
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp
    AS $$ SELECT * FROM campuses ORDER BY slug $$;
REVOKE ALL ON FUNCTION attest_campus_by_slug(text), attest_campus_directory() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION attest_campus_by_slug(text), attest_campus_directory() TO attest_app;
-- The third door: every campus's sign-in generation, which each server polls every second.
CREATE OR REPLACE FUNCTION attest_auth_generations() RETURNS TABLE (campus_id uuid, generation bigint)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp
    AS $$ SELECT id, auth_generation FROM campuses $$;
REVOKE ALL ON FUNCTION attest_auth_generations() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION attest_auth_generations() TO attest_app;
-- The fourth door: a shared link's token (its hash) at a campus, to the share it names, for
-- a clinician who has no session. Nothing but the share's own row comes through, and only
-- while its member is active. It sets what the policies read (the campus, the link's hash)
-- for its own statement only (it puts back what was set before as it returns; an error aborts
-- the transaction), so it works under an owner that is neither superuser nor BYPASSRLS, as
-- managed PostgreSQL gives (which may not name these settings in a SET clause).
CREATE OR REPLACE FUNCTION attest_journal_share(wanted_campus uuid, wanted_hash bytea)
    RETURNS TABLE (user_id uuid, id uuid, from_date date, to_date date, expires_at timestamptz, revoked_at timestamptz)
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, public, pg_temp
    AS $$
    DECLARE
        campus_before text := current_setting('attest.campus_id', true);
        hash_before text := current_setting('attest.share_hash', true);
    BEGIN
        PERFORM set_config('attest.campus_id', wanted_campus::text, true);
        PERFORM set_config('attest.share_hash', encode(wanted_hash, 'hex'), true);
        RETURN QUERY
            SELECT s.user_id, s.id, s.from_date, s.to_date, s.expires_at, s.revoked_at
            FROM journal_shares s JOIN users u ON u.campus_id = s.campus_id AND u.id = s.user_id
            WHERE s.campus_id = wanted_campus AND s.token_hash = wanted_hash AND u.active;
        PERFORM set_config('attest.campus_id', coalesce(campus_before, ''), true);
        PERFORM set_config('attest.share_hash', coalesce(hash_before, ''), true);
    END $$;
REVOKE ALL ON FUNCTION attest_journal_share(uuid, bytea) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION attest_journal_share(uuid, bytea) TO attest_app;
-- A link's own row is what that door reads: besides its member, a transaction that names the
-- link's hash (attest.share_hash) sees it, and may change or delete nothing through it.
DROP POLICY IF EXISTS member_only ON journal_shares;
CREATE POLICY member_only ON journal_shares AS RESTRICTIVE
    USING (user_id = nullif(current_setting('attest.user_id', true), '')::uuid
           OR token_hash = decode(nullif(current_setting('attest.share_hash', true), ''), 'hex'))
    WITH CHECK (user_id = nullif(current_setting('attest.user_id', true), '')::uuid);
DROP POLICY IF EXISTS member_only_delete ON journal_shares;
CREATE POLICY member_only_delete ON journal_shares AS RESTRICTIVE FOR DELETE
    USING (user_id = nullif(current_setting('attest.user_id', true), '')::uuid);

-- section: the workers' doors (Migrations/0016-work-by-due-time.sql holds the same)
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
-- The fifth door: erasing a user from the directory (SCIM DELETE under `scim-delete: erase`)
-- takes the audit entries naming them, as `attest user erase` does, though the log is
-- append-only for the application: only the current campus's rows (row-level security), only
-- entries naming that email.
CREATE OR REPLACE FUNCTION attest_forget_audited(wanted_campus uuid, wanted_email text) RETURNS bigint
    LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp
    AS $$
    WITH gone AS (
        DELETE FROM audit_log
        WHERE campus_id = wanted_campus AND (target = wanted_email OR actor = 'user:' || wanted_email)
        RETURNING 1
    )
    SELECT count(*) FROM gone
    $$;
REVOKE ALL ON FUNCTION attest_forget_audited(uuid, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION attest_forget_audited(uuid, text) TO attest_app;
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

GRANT SELECT ON schema_migrations TO attest_app;
-- Community figures are public: the servers read them; only the owner imports.
GRANT SELECT ON community_regions, community_days TO attest_app;
GRANT USAGE ON SCHEMA public TO attest_app;
GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO attest_app;
