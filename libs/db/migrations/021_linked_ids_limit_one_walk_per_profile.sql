-- The limit of migration 014 checked with one walk per profile instead of one per link. When the
-- profiles a job's links reach held more than `max_linked` ids together (a job reidentifying into
-- two imported profiles), 014 walked the whole profile of every link of the job, under the
-- project's lock: a job of 500 links into two profiles of 1,000 ids took 19 s, and a project's
-- import of ten such profiles held every worker slot that long. Now each profile is walked once,
-- and each walk stops as soon as it passes the limit (docs/profiles.md, "Limits").

-- The ids linked with `key`, or null as soon as they are more than `max_linked`. Each step reads
-- the links of the ids the step before found, in both directions, each on its own index.
CREATE FUNCTION linked_ids_within(project integer, key text, max_linked integer) RETURNS text[]
LANGUAGE plpgsql STABLE AS $$
DECLARE
  component text[] := ARRAY[key];
  found text[] := component;
BEGIN
  LOOP
    found := ARRAY(
      SELECT to_key FROM profile_links WHERE project_id = project AND from_key = ANY(found)
      UNION
      SELECT from_key FROM profile_links WHERE project_id = project AND to_key = ANY(found)
      EXCEPT
      SELECT unnest(component));
    EXIT WHEN cardinality(found) = 0;
    component := component || found;
    IF cardinality(component) > max_linked THEN
      RETURN NULL;
    END IF;
  END LOOP;
  RETURN component;
END
$$;

-- Same arguments and answer as 014's, so workers of the release before call this one too.
CREATE OR REPLACE FUNCTION record_link_operations(project integer, lock_id integer, links jsonb, erasures jsonb,
                                                  keys text[], max_linked integer)
RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  components jsonb := record_link_operations(project, lock_id, links, erasures, keys);
  unchecked text[];
  component text[];
BEGIN
  -- The components read hold every id the job's links reach: when they are no more than the
  -- limit together, none is past it, and no walk is needed (the common case).
  IF (SELECT count(DISTINCT ids.key)
        FROM jsonb_array_elements(components -> 'links') AS l,
             LATERAL (VALUES (l ->> 'from'), (l ->> 'to')) AS ids (key)) > max_linked THEN
    unchecked := ARRAY(SELECT DISTINCT l."from" FROM jsonb_to_recordset(links) AS l ("from" text));
    WHILE cardinality(unchecked) > 0 LOOP
      component := linked_ids_within(project, unchecked[1], max_linked);
      IF component IS NULL THEN
        RAISE EXCEPTION 'a reidentify would link more than % ids into one profile', max_linked
          USING ERRCODE = '22023';
      END IF;
      -- The other links of this profile are checked by this walk.
      unchecked := ARRAY(SELECT unnest(unchecked) EXCEPT SELECT unnest(component));
    END LOOP;
  END IF;
  RETURN components;
END
$$;

-- Called by nothing since the function above replaced 014's.
DROP FUNCTION linked_ids_exceed(integer, text, integer);
