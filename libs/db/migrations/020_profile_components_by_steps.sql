-- profile_components (migration 012) compared each id a step of the walk found with every id
-- found before it (`NOT linked.key = ANY(component)`): quadratic in the ids walked. A page of the
-- profile list walks from up to 100 keys at once, and over 25 profiles of 1,000 ids that was
-- 25,000 × 25,000 comparisons, about a second of Postgres a page. The walk is breadth-first: a
-- neighbour of the ids found last is either new or one of those or of the step before (an id
-- found two steps ago had all its neighbours found by the step after it). So each step keeps its
-- neighbours that are in neither of those two steps, compared once each, after they were made
-- distinct (not once per link). Same answer, and the same kinds of statement as 012 (Citus).
CREATE OR REPLACE FUNCTION profile_components(project integer, keys text[]) RETURNS jsonb
LANGUAGE plpgsql STABLE AS $$
DECLARE
  found text[] := ARRAY(SELECT DISTINCT unnest(keys));
  before text[] := '{}';
  component text[] := found;
  neighbours text[];
BEGIN
  LOOP
    neighbours := ARRAY(
      SELECT DISTINCT linked.key
        FROM (SELECT to_key AS key FROM profile_links WHERE project_id = project AND from_key = ANY(found)
              UNION ALL
              SELECT from_key FROM profile_links WHERE project_id = project AND to_key = ANY(found)) AS linked);
    neighbours := ARRAY(SELECT n.key FROM unnest(neighbours) AS n (key)
                         WHERE NOT n.key = ANY(found) AND NOT n.key = ANY(before));
    EXIT WHEN cardinality(neighbours) = 0;
    component := component || neighbours;
    before := found;
    found := neighbours;
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
