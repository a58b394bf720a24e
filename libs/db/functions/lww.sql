-- Last-writer-wins registers (libs/domain/src/stamp.ts holds the same rules for the application
-- side; libs/db/src/profiles.ts's merge calls these, and test/db/profile-merge.test.ts checks that
-- merge against libs/domain's mergeStates and isNewer). A stamped value is {"t": ms, "h":
-- tie-breaker, "v": value}; the larger (t, tie-breaker) wins, so merging is commutative,
-- associative and idempotent. A value whose tie-breaker is its own jsonb text (null, a boolean, a
-- safe integer, a short printable ASCII string: stamp.ts breaksOwnTies) is stored without `h`,
-- {"t": ms, "v": value}: `h` repeated the value in every row, its JSON and its WAL. Its
-- tie-breaker is `(s -> 'v')::text`, exactly what `h` held, so values stored with `h` compare as
-- they did. Only ties (equal `t`) read it.
-- A CASE, not a row comparison, so that the tie-breakers are worked out for ties alone: a row
-- comparison evaluates every column first, and writing out the value made every update slower.
CREATE OR REPLACE FUNCTION lww_is_newer(a jsonb, b jsonb) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN (a ->> 't')::bigint <> (b ->> 't')::bigint THEN (a ->> 't')::bigint > (b ->> 't')::bigint
              ELSE coalesce(a ->> 'h', (a -> 'v')::text) COLLATE "C" > coalesce(b ->> 'h', (b -> 'v')::text) COLLATE "C" END
$$;

CREATE OR REPLACE FUNCTION lww_newest(current_value jsonb, incoming jsonb) RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE
    WHEN incoming IS NULL THEN current_value
    WHEN current_value IS NULL OR lww_is_newer(incoming, current_value) THEN incoming
    ELSE current_value
  END
$$;

-- A stamped value erased at `erased_until` is gone: nothing stamped at or before an erasure is
-- kept. Simple expressions, so that Postgres inlines them into the statement that calls them.
CREATE OR REPLACE FUNCTION lww_after(t bigint, erased_until bigint) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT erased_until IS NULL OR t > erased_until
$$;

CREATE OR REPLACE FUNCTION lww_kept_t(t bigint, erased_until bigint) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN lww_after(t, erased_until) THEN t END
$$;

CREATE OR REPLACE FUNCTION lww_kept(stamped jsonb, erased_until bigint) RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN lww_after((stamped ->> 't')::bigint, erased_until) THEN stamped END
$$;

-- A map of stamped values without those erased. It holds a subquery, so it is not inlined: the
-- merge calls it only when an erasure arrives, which is rare.
CREATE OR REPLACE FUNCTION lww_kept_map(map jsonb, erased_until bigint) RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT coalesce(jsonb_object_agg(e.key, e.value), '{}')
    FROM jsonb_each(map) AS e
   WHERE lww_after((e.value ->> 't')::bigint, erased_until)
$$;

-- The newest stamp of a map of stamped values, or null for an empty map.
CREATE OR REPLACE FUNCTION lww_map_newest_t(map jsonb) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT max((e.value ->> 't')::bigint) FROM jsonb_each(map) AS e
$$;

-- The newest stamp a row of profiles holds, or null when it holds none (greatest skips nulls):
-- the merge works a row's newest_t out with it when the row's own cannot be trusted (migration
-- 009 says when).
CREATE OR REPLACE FUNCTION lww_row_newest_t(created_t bigint, last_created_t bigint, deleted_t bigint, email jsonb,
                                            phone_number jsonb, unsubscribed jsonb, data jsonb, channels jsonb,
                                            topic_choices jsonb, tags jsonb) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT greatest(created_t, last_created_t, deleted_t, (email ->> 't')::bigint, (phone_number ->> 't')::bigint,
                  (unsubscribed ->> 't')::bigint, lww_map_newest_t(data), lww_map_newest_t(channels),
                  lww_map_newest_t(topic_choices), lww_map_newest_t(tags))
$$;
