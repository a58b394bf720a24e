-- A stamped value whose tie-breaker is its own jsonb text (null, a boolean, a safe integer, a
-- short printable ASCII string: libs/domain/src/stamp.ts breaksOwnTies) is stored without `h`,
-- {"t": ms, "v": value}: `h` repeated the value, in every row, its JSON and its WAL. The
-- tie-breaker of such a value is `(s -> 'v')::text`, exactly what `h` held, so values stored
-- before, with `h`, compare as they did. Only ties (equal `t`) read it.
-- A CASE, not a row comparison, so that the tie-breakers are worked out for ties alone: a row
-- comparison evaluates every column first, and writing out the value made every update slower.
CREATE OR REPLACE FUNCTION lww_is_newer(a jsonb, b jsonb) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN (a ->> 't')::bigint <> (b ->> 't')::bigint THEN (a ->> 't')::bigint > (b ->> 't')::bigint
              ELSE coalesce(a ->> 'h', (a -> 'v')::text) COLLATE "C" > coalesce(b ->> 'h', (b -> 'v')::text) COLLATE "C" END
$$;
