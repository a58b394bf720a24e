-- The domains of migration 029 (what a profile row's data, tags and channels may hold), which the
-- workers' upsert casts to, on every shard on Citus (libs/db/src/profiles.ts). No table or
-- function held them, so on a database moved to Citus after it (docs/scaling.md, "Moving a
-- database in use to Citus") no node but the coordinator would have them, and every upsert sent
-- to a shard would fail and be retried for ever. This function takes them, so that
-- libs/db/citus/distribute.sql, which makes each function of the schema a distributed object,
-- makes them on every node with it (Citus creates the types of a function's signature with it),
-- and on nodes added later. It is never called.
CREATE OR REPLACE FUNCTION profile_map_domains(data profile_data, tags profile_tags, channels profile_channels)
RETURNS void LANGUAGE sql IMMUTABLE AS $$ $$;
