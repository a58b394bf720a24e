-- A profile row's change_xid (migration 022) without a PL/pgSQL call for each row written: a new
-- row takes it from its default, the workers' upsert carries it to the row it updates
-- (libs/db/src/profiles.ts applyProfileWrites), and profile_change_xid() runs only for a row
-- written without the value it would give. Its calls, one for the upsert's insert of each row and
-- another for its update, cost an identify about 2 µs of Postgres (bench/README.md, "A profile's
-- write as its rows"). Each condition holds exactly when the row lacks the function's value, so
-- every other write (a topic's default fan-out, an operator's UPDATE) still gets it from the
-- function, and so does every write on Citus, where a default is the coordinator's transaction's
-- and the function's value the shard's node's. A default rewrites no row.
ALTER TABLE profiles ALTER COLUMN change_xid SET DEFAULT pg_current_xact_id();
DROP TRIGGER profiles_change_xid ON profiles;
CREATE TRIGGER profiles_change_xid_of_inserts BEFORE INSERT ON profiles
  FOR EACH ROW WHEN (NEW.change_xid IS DISTINCT FROM pg_current_xact_id())
  EXECUTE FUNCTION profile_change_xid();
CREATE TRIGGER profiles_change_xid_of_updates BEFORE UPDATE ON profiles
  FOR EACH ROW WHEN (NEW.change_xid IS DISTINCT FROM greatest(pg_current_xact_id(), OLD.change_xid))
  EXECUTE FUNCTION profile_change_xid();
