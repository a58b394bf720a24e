-- What lets the workers' merge (libs/db/src/profiles.ts) skip the field-by-field merge of a
-- write whose every stamp is newer than every stamp of the row: then the merge is the write laid
-- over the row (libs/domain stampBounds). Identifies mostly arrive in time order, and the
-- field-by-field merge was half of an update's cost in Postgres (docs/scaling.md).
--
-- newest_t: no stamp the row holds is newer (its values', created_t, last_created_t,
-- deleted_t); null when it holds none. Trusted only while newest_t_at equals updated_at: a
-- writer that does not keep newest_t (a worker older than this migration, still running during
-- a rolling update) sets updated_at alone, and the next merge takes the long way and works
-- newest_t out again from the row (lww_row_newest_t). Rows written before have neither.
-- write_oldest_t: the oldest stamp of the last write merged into the row. The merge reads it
-- from the incoming row (ON CONFLICT's excluded), which has no other column to carry it in.
-- Nullable columns without a default rewrite no row.
ALTER TABLE profiles
  ADD COLUMN newest_t bigint,
  ADD COLUMN newest_t_at timestamptz,
  ADD COLUMN write_oldest_t bigint;

-- The newest stamp of a map of stamped values, or null for an empty map.
CREATE FUNCTION lww_map_newest_t(map jsonb) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT max((e.value ->> 't')::bigint) FROM jsonb_each(map) AS e
$$;

-- The newest stamp a row holds, or null when it holds none (greatest skips nulls).
CREATE FUNCTION lww_row_newest_t(created_t bigint, last_created_t bigint, deleted_t bigint, email jsonb,
                                 phone_number jsonb, unsubscribed jsonb, data jsonb, channels jsonb,
                                 topic_choices jsonb, tags jsonb) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT greatest(created_t, last_created_t, deleted_t, (email ->> 't')::bigint, (phone_number ->> 't')::bigint,
                  (unsubscribed ->> 't')::bigint, lww_map_newest_t(data), lww_map_newest_t(channels),
                  lww_map_newest_t(topic_choices), lww_map_newest_t(tags))
$$;
