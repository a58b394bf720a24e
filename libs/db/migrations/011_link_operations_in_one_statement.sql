-- The ids linked with any of `keys` in a project, in either direction and whatever their
-- stamps, as {"links": [{from, to, t}], "erasures": [{key, t}]}: every link of those ids and
-- their recorded erasures (libs/db/src/profile-links.ts linkedComponents). Each direction on
-- its own index: a join on either key scanned the whole table.
CREATE FUNCTION profile_components(project integer, keys text[]) RETURNS jsonb
LANGUAGE sql STABLE AS $$
  WITH RECURSIVE component (key) AS (
    SELECT unnest(keys)
    UNION
    SELECT linked.key
      FROM component AS c
      CROSS JOIN LATERAL (
        SELECT to_key AS key FROM profile_links WHERE project_id = project AND from_key = c.key
        UNION ALL
        SELECT from_key FROM profile_links WHERE project_id = project AND to_key = c.key
      ) AS linked
  )
  SELECT jsonb_build_object(
    'links', coalesce((SELECT jsonb_agg(jsonb_build_object('from', from_key, 'to', to_key, 't', t))
                         FROM profile_links
                        WHERE project_id = project AND from_key IN (SELECT key FROM component)), '[]'),
    'erasures', coalesce((SELECT jsonb_agg(jsonb_build_object('key', key, 't', t))
                            FROM profile_erasures
                           WHERE project_id = project AND key IN (SELECT key FROM component)), '[]'))
$$;

-- A job's reidentify links and delete erasures of one project: records them (a redelivered
-- link is kept once, a key's latest erasure wins), waits for the project's lock (libs/db
-- advisory-locks.ts PROFILE_LINKS_LOCK, held until the transaction ends), then reads the
-- components of `keys` as every job that held the lock before left them. One statement, so
-- that the lock is never held across a round trip to the worker: held over three, it was what
-- a mixed drain waited on most (docs/scaling.md). In PL/pgSQL each statement takes a snapshot
-- of its own, so the read sees what was committed while the lock was awaited.
CREATE FUNCTION record_link_operations(project integer, lock_id integer, links jsonb, erasures jsonb, keys text[])
RETURNS jsonb LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO profile_links (project_id, from_key, to_key, t)
  SELECT project, l."from", l."to", l.t
    FROM jsonb_to_recordset(links) AS l ("from" text, "to" text, t bigint)
  ON CONFLICT DO NOTHING;
  INSERT INTO profile_erasures AS e (project_id, key, t)
  SELECT project, x.key, max(x.t)
    FROM jsonb_to_recordset(erasures) AS x (key text, t bigint)
   GROUP BY x.key
  ON CONFLICT (project_id, key) DO UPDATE SET t = greatest(e.t, excluded.t);
  PERFORM pg_advisory_xact_lock(lock_id, project);
  RETURN profile_components(project, keys);
END
$$;
