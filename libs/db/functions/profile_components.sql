-- The ids linked with any of `keys` in a project, in either direction and whatever their
-- stamps, as {"links": [{from, to, t}], "erasures": [{key, t}]}: every link from those ids and
-- their recorded erasures (libs/db/src/profile-links.ts linkedComponents), read by every profile
-- read and under the link lock by every delete and reidentify (record_link_operations;
-- test/db/profile-lifecycle.test.ts runs them through the worker's dispatcher).
-- Walked step by step rather than by a recursive query: Citus runs no recursive query over a
-- distributed table, nor a SQL function whose parameters reach one (docs/scaling.md, "Past one
-- Postgres"). Each step reads the links of the ids the step before found, in both directions,
-- each on its own index (a join on either key scanned the whole table); the walk ends when a
-- step finds no id it has not seen. It goes breadth first, so the ids a step reaches that are not
-- new were found by it or the step before: checked against every id found so far instead, a step
-- cost as much as those ids, and reading 50 profiles of 1,000 ids linked in chains took 44 s
-- (migration 021).
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
