-- The walks under a project's link lock (docs/profiles.md, "Limits") bounded by the ids they
-- reach. Migration 014 checked the limit by walking the whole profile of every link of a job
-- whenever the profiles the job's links reach held more than `max_linked` ids together (a job
-- reidentifying into two imported profiles): a job of 500 links into two profiles of 1,000 and
-- 251 ids took 19 s under the lock, and a project's import of ten profiles of 1,000 ids delayed
-- another project's identify by 30 s (issue 33). Now one walk checks every profile of the job and
-- stops as soon as one passes the limit; and every walk tells a step's new ids from the last two
-- steps' alone.

-- profile_components (migration 012) with each step's new ids told from the ids of this step and
-- the one before only, instead of from every id found so far: the walk goes breadth first, so
-- the ids a step reaches that are not new were found by it or the step before. Checked against
-- every id, a step cost as much as the ids found so far: reading 50 profiles of 1,000 ids linked
-- in chains took 44 s, the walk of every profile read and of every delete and reidentify.
CREATE OR REPLACE FUNCTION profile_components(project integer, keys text[]) RETURNS jsonb
LANGUAGE plpgsql STABLE AS $$
DECLARE
  component text[] := ARRAY(SELECT DISTINCT unnest(keys));
  found text[] := component;
  found_before text[] := '{}';
  next text[];
BEGIN
  LOOP
    next := ARRAY(
      SELECT to_key FROM profile_links WHERE project_id = project AND from_key = ANY(found)
      UNION
      SELECT from_key FROM profile_links WHERE project_id = project AND to_key = ANY(found)
      EXCEPT
      SELECT unnest(found_before || found));
    EXIT WHEN cardinality(next) = 0;
    component := component || next;
    found_before := found;
    found := next;
  END LOOP;
  RETURN jsonb_build_object(
    'links', coalesce((SELECT jsonb_agg(jsonb_build_object('from', from_key, 'to', to_key, 't', t))
                         FROM profile_links
                        WHERE project_id = project AND from_key = ANY(component)), '[]'),
    'erasures', coalesce((SELECT jsonb_agg(jsonb_build_object('key', key, 't', t))
                            FROM profile_erasures
                           WHERE project_id = project AND key = ANY(component)), '[]'));
END
$$;

-- Whether the ids linked with any of `seeds` make a profile of more than `max_linked` ids. One
-- walk for all of them, step by step as profile_components walks (each step reads the links of
-- the ids the step before found, in both directions, each on its own index), so a job's check
-- takes as many steps as its longest chain of links, however many profiles it names: each id
-- carries the label of a seed it was reached from, labels that meet name one profile (`root`
-- leads each label to the smallest it met, where `size` counts the profile's ids), and the walk
-- stops as soon as one profile passes the limit. The walk goes breadth first, so the ids a step
-- reaches that are not new were found by this step or the one before.
CREATE FUNCTION linked_ids_exceed_any(project integer, seeds text[], max_linked integer) RETURNS boolean
LANGUAGE plpgsql STABLE AS $$
DECLARE
  root integer[] := ARRAY(SELECT generate_series(1, cardinality(seeds)));
  size integer[] := array_fill(1, ARRAY[cardinality(seeds)]);
  last_keys text[] := seeds;
  last_labels integer[] := root;
  before_keys text[] := '{}';
  before_labels integer[] := '{}';
  nears text[];
  fars text[];
  new_keys text[];
  new_labels integer[];
  merged_from integer[];
  merged_to integer[];
  a integer;
  b integer;
BEGIN
  LOOP
    SELECT coalesce(array_agg(l.near), '{}'), coalesce(array_agg(l.far), '{}') INTO nears, fars
      FROM (SELECT from_key AS near, to_key AS far FROM profile_links WHERE project_id = project AND from_key = ANY(last_keys)
            UNION ALL
            SELECT to_key, from_key FROM profile_links WHERE project_id = project AND to_key = ANY(last_keys)) AS l;
    WITH reached AS (
      SELECT l.far AS key, f.label
        FROM unnest(nears, fars) AS l (near, far) JOIN unnest(last_keys, last_labels) AS f (key, label) ON f.key = l.near
    ), known AS (
      SELECT * FROM unnest(before_keys || last_keys, before_labels || last_labels) AS k (key, label)
    ), met AS (
      SELECT key, label FROM reached
      UNION
      SELECT key, label FROM known WHERE key IN (SELECT key FROM reached)
    ), smallest AS (
      SELECT key, min(label) AS label FROM met GROUP BY key
    )
    SELECT found.keys, found.labels, merged.froms, merged.tos INTO new_keys, new_labels, merged_from, merged_to
      FROM (SELECT array_agg(key) AS keys, array_agg(label) AS labels
              FROM smallest WHERE key NOT IN (SELECT key FROM known)) AS found,
           (SELECT array_agg(m.label) AS froms, array_agg(s.label) AS tos
              FROM met AS m JOIN smallest AS s USING (key) WHERE m.label <> s.label) AS merged;
    FOR i IN 1 .. coalesce(cardinality(merged_from), 0) LOOP
      a := merged_from[i];
      WHILE root[a] <> a LOOP a := root[a]; END LOOP;
      b := merged_to[i];
      WHILE root[b] <> b LOOP b := root[b]; END LOOP;
      IF a <> b THEN
        root[greatest(a, b)] := least(a, b);
        size[least(a, b)] := size[a] + size[b];
        IF size[least(a, b)] > max_linked THEN
          RETURN true;
        END IF;
      END IF;
    END LOOP;
    FOR i IN 1 .. coalesce(cardinality(new_labels), 0) LOOP
      a := new_labels[i];
      WHILE root[a] <> a LOOP a := root[a]; END LOOP;
      size[a] := size[a] + 1;
      IF size[a] > max_linked THEN
        RETURN true;
      END IF;
    END LOOP;
    EXIT WHEN coalesce(cardinality(new_keys), 0) = 0;
    before_keys := last_keys;
    before_labels := last_labels;
    last_keys := new_keys;
    last_labels := new_labels;
  END LOOP;
  RETURN false;
END
$$;

-- Same arguments and answer as 014's, so workers of the release before call this one too.
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

-- Called by nothing since the function above replaced 014's.
DROP FUNCTION linked_ids_exceed(integer, text, integer);
