-- Shards a migrated database with Citus (docs/scaling.md, "Past one Postgres"): run once on the
-- coordinator, after `npm run ctl -- migrate` and before the workers start. The placement of
-- every table is what test/db/citus-ready.test.ts checks after each migration.
SELECT create_reference_table(t) FROM unnest(ARRAY['projects', 'credentials', 'topics', 'topic_fanouts',
  'journeys', 'journey_audiences', 'journey_nodes', 'journey_edges', 'messages', 'message_contents',
  'message_content_bodies', 'journey_documents']) AS t;
SELECT create_distributed_table('profiles', 'key');
SELECT create_distributed_table('profile_erasures', 'key', colocate_with => 'profiles');
SELECT create_distributed_table('profile_links', 'from_key', colocate_with => 'profiles');
SELECT create_distributed_table('events', 'user_key', colocate_with => 'profiles');
SELECT create_distributed_table('event_keys', 'key', colocate_with => 'none');
