-- A job's reidentify links and delete erasures of one project: records them (a redelivered
-- link is kept once, a key's latest erasure wins), waits for the project's lock (libs/db
-- advisory-locks.ts PROFILE_LINKS_LOCK, held until the transaction ends), then reads the
-- components of `keys` as every job that held the lock before left them. One statement, so
-- that the lock is never held across a round trip to the worker: held over three, it was what
-- a mixed drain waited on most (docs/scaling.md). In PL/pgSQL each statement takes a snapshot
-- of its own, so the read sees what was committed while the lock was awaited.
-- test/db/profile-lifecycle.test.ts runs both, and the limit, through the worker's dispatcher.
CREATE OR REPLACE FUNCTION record_link_operations(project integer, lock_id integer, links jsonb, erasures jsonb, keys text[])
RETURNS jsonb LANGUAGE plpgsql AS $$
BEGIN
  -- A link recorded now is a reidentify the change feed carries (docs/changes.md), named by the ids
  -- the links hold beside their keys (an older worker's hold none: its links go without a change).
  -- Its position is taken where its row is stored (change_position, migration 024): on Citus not
  -- here, on the coordinator.
  WITH added AS (
    INSERT INTO profile_links (project_id, from_key, to_key, t)
    SELECT project, l."from", l."to", l.t
      FROM jsonb_to_recordset(links) AS l ("from" text, "to" text, t bigint)
    ON CONFLICT DO NOTHING
    RETURNING from_key, to_key, t
  )
  INSERT INTO changes (project_id, user_key, type, user_id, change)
  SELECT project, to_key, 'user.reidentified', to_id,
         jsonb_build_object('previous_user_id', from_id)
    FROM (SELECT DISTINCT ON (a.from_key, a.to_key, a.t) a.from_key, a.to_key, a.t, l.from_id, l.to_id
            FROM added AS a
            JOIN jsonb_to_recordset(links) AS l ("from" text, "to" text, t bigint, from_id text, to_id text)
              ON l."from" = a.from_key AND l."to" = a.to_key AND l.t = a.t
           WHERE l.to_id IS NOT NULL
           ORDER BY a.from_key, a.to_key, a.t) AS linked
   ORDER BY t, from_key;
  IF FOUND THEN
    PERFORM pg_notify('changes', project::text);
  END IF;
  INSERT INTO profile_erasures AS e (project_id, key, t)
  SELECT project, x.key, max(x.t)
    FROM jsonb_to_recordset(erasures) AS x (key text, t bigint)
   GROUP BY x.key
  ON CONFLICT (project_id, key) DO UPDATE SET t = greatest(e.t, excluded.t);
  PERFORM pg_advisory_xact_lock(lock_id, project);
  RETURN profile_components(project, keys);
END
$$;

-- The same with at most `max_linked` ids linked into one profile (libs/domain MAX_LINKED_IDS,
-- docs/profiles.md "Limits"), what libs/db/src/profile-links.ts calls; the five-argument one
-- stays for the older workers of a rolling update (migration 014). Checked inside the statement
-- that records the links, under the project's lock and before the links are committed: a
-- reidentify past the limit fails the statement (SQLSTATE 22023, which the worker reads as
-- refused input), so its job is split until it stands alone and is dead-lettered, and no other
-- job ever sees its link. Checking in a statement of its own made the mixed drain walk every
-- component twice.
CREATE OR REPLACE FUNCTION record_link_operations(project integer, lock_id integer, links jsonb, erasures jsonb,
                                                  keys text[], max_linked integer)
RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  components jsonb := record_link_operations(project, lock_id, links, erasures, keys);
BEGIN
  -- The components read hold every id the job's links reach: when they are no more than the
  -- limit together, none is past it, and no walk is needed (the common case).
  IF (SELECT count(DISTINCT ids.key)
        FROM jsonb_array_elements(components -> 'links') AS l,
             LATERAL (VALUES (l ->> 'from'), (l ->> 'to')) AS ids (key)) > max_linked THEN
    IF linked_ids_exceed_any(project, ARRAY(SELECT DISTINCT l."from" FROM jsonb_to_recordset(links) AS l ("from" text)),
                             max_linked) THEN
      RAISE EXCEPTION 'a reidentify would link more than % ids into one profile', max_linked
        USING ERRCODE = '22023';
    END IF;
  END IF;
  RETURN components;
END
$$;
