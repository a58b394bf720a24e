-- What a profile row's data, tags and channels may hold, in bytes as Postgres stores each value
-- (jsonb, before compression: pg_column_size of the value as written), docs/profiles.md
-- "Limits", libs/domain PROFILE_MAP_BYTES. A row of the change feed holds a profile row before
-- and after a write, and nothing bounded a profile: a page of the feed, or a webhook's batch, grew
-- past what a reader can hold (issue 44). The workers' upsert (libs/db/src/profiles.ts) casts each
-- map it writes anew to its domain, so a write that would take one past its bound fails with
-- check_violation (23514): refused input, which the worker isolates and dead-letters alone.
-- Domains, not CHECK constraints on profiles: a map a write leaves alone is not measured again,
-- so a row already past a bound when this ran still takes every write that leaves that map alone.
CREATE DOMAIN profile_data AS jsonb CONSTRAINT profile_data_bytes CHECK (pg_column_size(VALUE) <= 1048576);
CREATE DOMAIN profile_tags AS jsonb CONSTRAINT profile_tags_bytes CHECK (pg_column_size(VALUE) <= 262144);
CREATE DOMAIN profile_channels AS jsonb CONSTRAINT profile_channels_bytes CHECK (pg_column_size(VALUE) <= 262144);
