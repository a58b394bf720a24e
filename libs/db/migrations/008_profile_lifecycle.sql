-- The whole profile lifecycle (docs/profiles.md): edits, tags, the global opt-out, reidentify
-- and delete. Each new column is the field of libs/domain's ProfileState of the same name, and
-- the workers' merge (libs/db/src/profiles.ts) is its mergeStates.
--
-- last_created_t: the latest stamp of an identify that may create the profile, since its last
-- erasure. Rows written before knew only the earliest, which stands in for it. A worker older
-- than this migration, still running during a rolling update, leaves it null: a row with no
-- erasure and a created_t is a profile whatever it holds (libs/db/src/profiles.ts reads it so).
-- deleted_t: the stamp of the row's last erasure; nothing stamped at or before it is kept.
-- Nullable columns without a default and a constant default rewrite no row; the update does.
ALTER TABLE profiles
  ADD COLUMN last_created_t bigint,
  ADD COLUMN deleted_t bigint,
  ADD COLUMN tags jsonb NOT NULL DEFAULT '{}',
  ADD COLUMN unsubscribed jsonb;
UPDATE profiles SET last_created_t = created_t WHERE created_t IS NOT NULL;

-- A stamped value erased at `erased_until` is gone: nothing stamped at or before an erasure is
-- kept. Simple expressions, so that Postgres inlines them into the statement that calls them.
CREATE FUNCTION lww_after(t bigint, erased_until bigint) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT erased_until IS NULL OR t > erased_until
$$;

CREATE FUNCTION lww_kept_t(t bigint, erased_until bigint) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN lww_after(t, erased_until) THEN t END
$$;

CREATE FUNCTION lww_kept(stamped jsonb, erased_until bigint) RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN lww_after((stamped ->> 't')::bigint, erased_until) THEN stamped END
$$;

-- A map of stamped values without those erased. It holds a subquery, so it is not inlined: the
-- merge calls it only when an erasure arrives, which is rare.
CREATE FUNCTION lww_kept_map(map jsonb, erased_until bigint) RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT coalesce(jsonb_object_agg(e.key, e.value), '{}')
    FROM jsonb_each(map) AS e
   WHERE lww_after((e.value ->> 't')::bigint, erased_until)
$$;

-- Reidentify links (libs/domain AliasEdge): from `t` on, from_key and to_key name one profile.
-- Links are only ever added, and every one is kept, stamps included: which ids a profile and an
-- erasure reach, and the id a profile reads under, depend on them. Traversals walk a project's
-- links from a key in both directions: the primary key serves from_key, the index to_key.
-- Like profiles (003), no foreign key to projects or profiles: a link may name ids no operation
-- has reached yet.
CREATE TABLE profile_links (
  project_id integer NOT NULL,
  from_key   text NOT NULL,
  to_key     text NOT NULL,
  t          bigint NOT NULL,
  PRIMARY KEY (project_id, from_key, to_key, t)
);
CREATE INDEX profile_links_to_key_idx ON profile_links (project_id, to_key);

-- The latest erasure of each key: a reidentify stamped at or before it, arriving later, must
-- reach the ids it links with it. A later erasure of the same key covers an earlier one (its
-- group is no smaller and its stamp erases more), so one row per key is enough.
CREATE TABLE profile_erasures (
  project_id integer NOT NULL,
  key        text NOT NULL,
  t          bigint NOT NULL,
  PRIMARY KEY (project_id, key)
);

-- The profile a dead letter's operation names, so that an erasure finds the dead letters it must
-- remove (recordDeadLetter sets it from now on). For the letters already kept it is read from the
-- text, without parsing the whole of it: a letter is often there because of what Postgres cannot
-- read (a \u0000, a lone surrogate, nesting past its parser's stack), and no row may fail the
-- migration. Every event was queued with its key second, after projectId (toIdentifyEvent), which
-- JSON.stringify keeps; the key's string literal is decoded with those two escapes replaced (a
-- key holding one names no stored profile), and keys queued as "e:<email>" are read the 007 way.
ALTER TABLE identify_dead_letters ADD COLUMN profile_key text;
UPDATE identify_dead_letters
   SET profile_key = 'i:' || substr(
         regexp_replace(substring(event from '^\{"projectId":[^,]*,"key":("(?:[^"\\]|\\.)*")'),
                        '\\u(0000|[dD][89abAB][0-9a-fA-F]{2})', '\\ufffd', 'g')::jsonb #>> '{}',
         3);
CREATE INDEX identify_dead_letters_profile_key_idx ON identify_dead_letters (project_id, profile_key);
