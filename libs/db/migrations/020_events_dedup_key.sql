-- Each event keeps the deduplication key it claimed in event_keys (docs/events.md, "Stored
-- once"), so that the erasure of the event takes its key with it: a key left behind refused the
-- same event sent after the delete (a 200, never stored) for as long as its window ran, 7 days
-- for an idempotency key. Null for an event without a key, and for one stored by a worker older
-- than this migration (its key is not removed by an erasure, and expires as before). No default:
-- adding the column rewrites nothing, on one Postgres and on Citus.
ALTER TABLE events ADD COLUMN dedup_key text;
