-- Tracked events (docs/events.md). Range-partitioned by the day they happened (created_at, UTC):
-- the workers' maintenance job makes each day's partition ahead of time and detaches and drops
-- a day's partition once it is past EVENT_RETENTION_DAYS, instead of deleting row by row.
-- events_default takes what no day's partition covers (a backfill older than the oldest
-- partition, or a day the maintenance job has not made yet); making a day's partition moves
-- that day's rows out of it.
--
-- The one index serves the read (a user's events, newest first) and makes storing exact: a
-- unique index of a partitioned table must hold the partition key, and (project_id, user_key,
-- created_at, id) does. Every field of it is fixed when the gateway accepts the event, so a job
-- applied again finds its events already there and stores nothing. Deduplication across
-- requests (Vero's rule, idempotency keys) is event_keys' work, below.
CREATE TABLE events (
  project_id  integer NOT NULL,
  user_key    text NOT NULL,
  id          uuid NOT NULL,
  name        text NOT NULL,
  -- The name without case, spaces, underscores and dashes: what deduplication and the
  -- event_name filter compare.
  name_key    text NOT NULL,
  data        jsonb,
  source      text,
  created_at  timestamptz NOT NULL,
  received_at timestamptz NOT NULL
) PARTITION BY RANGE (created_at);
CREATE UNIQUE INDEX events_user_time_idx ON events (project_id, user_key, created_at, id);
CREATE TABLE events_default PARTITION OF events DEFAULT;

-- One row per deduplication key (a hash: of the user, the normalised name and the data or
-- check_id, or of an idempotency key) with the receive time of the last event stored under it.
-- An event is stored only when it claims its key: no row yet, or its receive time at least the
-- key's window away from the row's. Not partitioned, so that the primary key makes the claim
-- exact across every worker; the maintenance job removes expired keys.
CREATE TABLE event_keys (
  project_id integer NOT NULL,
  key        text NOT NULL,
  seen_at    bigint NOT NULL,
  expires_at bigint NOT NULL,
  PRIMARY KEY (project_id, key)
);
