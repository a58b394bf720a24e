-- At most `max_linked` ids linked into one profile (libs/domain MAX_LINKED_IDS, docs/profiles.md
-- "Limits"). Checked inside the statement that records the links, under the project's lock and
-- before the links are committed: a reidentify past the limit fails the statement (SQLSTATE
-- 22023, which the worker reads as refused input), so its job is split until it stands alone and
-- is dead-lettered, and no other job ever sees its link. Checking in a statement of its own made
-- the mixed drain walk every component twice.

-- Whether the ids linked with `key` are more than `max_linked`; the walk stops as soon as they are.
CREATE FUNCTION linked_ids_exceed(project integer, key text, max_linked integer) RETURNS boolean
LANGUAGE plpgsql STABLE AS $$
DECLARE
  component text[] := ARRAY[key];
  found text[] := component;
BEGIN
  LOOP
    found := ARRAY(
      SELECT DISTINCT linked.key
        FROM (SELECT to_key AS key FROM profile_links WHERE project_id = project AND from_key = ANY(found)
              UNION ALL
              SELECT from_key FROM profile_links WHERE project_id = project AND to_key = ANY(found)) AS linked
       WHERE NOT linked.key = ANY(component));
    EXIT WHEN cardinality(found) = 0;
    component := component || found;
    IF cardinality(component) > max_linked THEN
      RETURN true;
    END IF;
  END LOOP;
  RETURN false;
END
$$;

-- record_link_operations (migration 011) with the limit; the five-argument version stays for
-- workers older than this migration during a rolling update.
CREATE FUNCTION record_link_operations(project integer, lock_id integer, links jsonb, erasures jsonb, keys text[],
                                       max_linked integer)
RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  components jsonb := record_link_operations(project, lock_id, links, erasures, keys);
BEGIN
  -- The components read hold every id the job's links reach: when they are no more than the
  -- limit together, none is past it, and no walk is needed (the common case).
  IF (SELECT count(DISTINCT ids.key)
        FROM jsonb_array_elements(components -> 'links') AS l,
             LATERAL (VALUES (l ->> 'from'), (l ->> 'to')) AS ids (key)) > max_linked
     AND EXISTS (SELECT 1 FROM jsonb_to_recordset(links) AS l ("from" text)
                  WHERE linked_ids_exceed(project, l."from", max_linked)) THEN
    RAISE EXCEPTION 'a reidentify would link more than % ids into one profile', max_linked
      USING ERRCODE = '22023';
  END IF;
  RETURN components;
END
$$;
