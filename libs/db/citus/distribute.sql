-- Shards a migrated database with Citus (docs/scaling.md, "Past one Postgres"): run once on the
-- coordinator (`psql -f`), after `npm run ctl -- migrate`, before the workers start or on a
-- database in use (docs/scaling.md, "Moving a database in use to Citus"). The placement of every
-- table is what test/db/citus-ready.test.ts checks after each migration.
--
-- Citus creates on every node a function made after its extension, not one made before: in a
-- database migrated before Citus (docs/scaling.md, "Moving a database in use to Citus") the
-- workers' shards would be sent statements calling functions they lack (the upsert's lww_*:
-- "function … does not exist", and the worker retries for ever). Each of the schema's own
-- functions not yet on every node is made a distributed object, created on each node now and on
-- each node added later. A node checks a SQL function's body as it creates it, so a function
-- comes after those its body names (lww_newest calls lww_is_newer). An order rather than a `SET
-- LOCAL check_function_bodies = off`: Citus would pass that to the workers only inside a
-- transaction block, which the test support, running this file as one query on a pool, cannot
-- open (postgres.js refuses a BEGIN there).
DO $$
DECLARE
  f regprocedure;
BEGIN
  FOR f IN
    WITH RECURSIVE own AS (
      SELECT p.oid, p.proname, p.prosrc
        FROM pg_proc AS p
       WHERE p.pronamespace = 'public'::regnamespace
         AND NOT EXISTS (SELECT 1 FROM pg_depend AS d
                          WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e')
         AND NOT EXISTS (SELECT 1 FROM pg_dist_object AS o
                          WHERE o.classid = 'pg_proc'::regclass AND o.objid = p.oid)
    ), depth (oid, d) AS (
      SELECT oid, 0 FROM own
      UNION ALL
      -- depth.d < 10: a bound for functions that call each other
      SELECT caller.oid, depth.d + 1
        FROM depth JOIN own AS callee ON callee.oid = depth.oid
        JOIN own AS caller ON caller.oid <> callee.oid AND caller.prosrc ~ ('\m' || callee.proname || '\M')
       WHERE depth.d < 10
    )
    SELECT oid FROM depth GROUP BY oid ORDER BY max(d), oid
  LOOP
    PERFORM create_distributed_function(f);
  END LOOP;
END $$;
-- The change feed (docs/scaling.md, "The change feed on Citus"). Its capture is triggers on
-- `profiles` and `events`, which Citus distributes only with this setting, kept for the database
-- (a later migration adding a trigger to a distributed table needs it too). The triggers write
-- `changes` rows of their shard's own rows, on the same node: a trigger may not write elsewhere.
SET citus.enable_unsafe_triggers = on;
DO $$
BEGIN
  EXECUTE format('ALTER DATABASE %I SET citus.enable_unsafe_triggers = on', current_database());
END $$;
-- From here on positions are epochs' (migration 024): the changes already stored are of epoch 0,
-- read in the order one Postgres gave them, and closed, since every writer that could still add one
-- (each holds a lock on the table it writes before it writes a change) has ended.
DO $$
BEGIN
  LOCK TABLE profiles, events, profile_links, changes, change_trims IN SHARE MODE;
  UPDATE changes SET pos_epoch = 0, pos_t = 0, pos_node = 0 WHERE pos_epoch IS NULL;
  UPDATE change_trims SET pos_epoch = 0, pos_t = 0, pos_node = 0 WHERE pos_epoch IS NULL;
  INSERT INTO change_epochs (epoch, closed, bumped_at) VALUES (1, 0, now()) ON CONFLICT DO NOTHING;
END $$;
-- Read in epoch order; the one Postgres order's index is of no use any more.
CREATE INDEX IF NOT EXISTS changes_epoch_position_idx ON changes (project_id, pos_epoch, pos_t, pos_node, pos_xid, seq);
DROP INDEX IF EXISTS changes_position_idx;
-- Each node draws the sequence of the changes it stores. Citus creates a sequence on every node,
-- those added later included, when a distributed table's column takes its default from it; no
-- change is written with this default (each is given its seq, or change_position gives it).
ALTER TABLE changes ALTER COLUMN seq SET DEFAULT nextval('change_seq');

SELECT create_reference_table(t) FROM unnest(ARRAY['projects', 'credentials', 'topics', 'topic_fanouts',
  'journeys', 'journey_audiences', 'journey_nodes', 'journey_edges', 'messages', 'message_contents',
  'message_content_bodies', 'journey_documents', 'change_trims', 'change_epochs']) AS t;
SELECT create_distributed_table('profiles', 'key');
SELECT create_distributed_table('profile_erasures', 'key', colocate_with => 'profiles');
SELECT create_distributed_table('profile_links', 'from_key', colocate_with => 'profiles');
SELECT create_distributed_table('events', 'user_key', colocate_with => 'profiles');
SELECT create_distributed_table('event_keys', 'key', colocate_with => 'none');
SELECT create_distributed_table('changes', 'user_key', colocate_with => 'profiles');
