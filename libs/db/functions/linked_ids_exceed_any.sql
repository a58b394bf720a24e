-- Whether the ids linked with any of `seeds` make a profile of more than `max_linked` ids
-- (libs/domain MAX_LINKED_IDS, docs/profiles.md "Limits"; record_link_operations checks it). One
-- walk for all of them, step by step as profile_components walks (each step reads the links of
-- the ids the step before found, in both directions, each on its own index), so a job's check
-- takes as many steps as its longest chain of links, however many profiles it names: each id
-- carries the label of a seed it was reached from, labels that meet name one profile (`root`
-- leads each label to the smallest it met, where `size` counts the profile's ids), and the walk
-- stops as soon as one profile passes the limit. The walk goes breadth first, so the ids a step
-- reaches that are not new were found by this step or the one before. Walking each link's
-- profile whole took 19 s under the lock for a job of 500 links into two profiles of 1,000 and
-- 251 ids (migration 021).
CREATE OR REPLACE FUNCTION linked_ids_exceed_any(project integer, seeds text[], max_linked integer) RETURNS boolean
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
