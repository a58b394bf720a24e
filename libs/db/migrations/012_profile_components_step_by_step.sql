-- profile_components (migration 011) walked step by step instead of by a recursive query: Citus
-- runs no recursive query over a distributed table, nor a SQL function whose parameters reach
-- one (docs/scaling.md, "Past one Postgres"). Each step reads the links of the ids found by the
-- step before, in both directions, each on its own index; the walk ends when a step finds no id
-- it has not seen. Same answer: the ids linked with any of `keys`, every link from them, and
-- their recorded erasures.
CREATE OR REPLACE FUNCTION profile_components(project integer, keys text[]) RETURNS jsonb
LANGUAGE plpgsql STABLE AS $$
DECLARE
  component text[] := ARRAY(SELECT DISTINCT unnest(keys));
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
