-- Profiles found by email (GET /api/v2/users?email=…, docs/api.md "List users").
--
-- A stored generated column rather than an index on the expression: an update keeps its heap-only
-- (HOT) path unless the address itself changes, while an index on `email ->> 'v'` would lose it
-- whenever the email's stamp moves, which is every identify that sends the email again
-- (bench/write-cost.mjs: +6 µs of Postgres CPU and +28% WAL per such update; the column and its
-- index cost +2.8 µs and no more WAL per update, +2.0 µs and +167 bytes of WAL per new profile). Lowered under the C collation, which lowers ASCII letters only: libs/domain
-- emailLookupForm does the same, so both agree on every address whatever the database's collation.
-- Writers need not know the column, so workers of the release before keep working beside it.
-- Adding a stored column rewrites the table under an exclusive lock: 1,000,000 profiles took 4.5 s,
-- and the index 1.6 s more, on the 2-core development machine (docs/profiles.md "Upgrading").
ALTER TABLE profiles ADD COLUMN email_lookup text GENERATED ALWAYS AS (lower((email ->> 'v') COLLATE "C")) STORED;

-- key last, so that a page of one address's profiles is read in key order from the index.
CREATE INDEX profiles_email_lookup_idx ON profiles (project_id, email_lookup, key);
