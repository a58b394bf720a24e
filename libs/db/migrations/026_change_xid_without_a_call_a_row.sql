-- A profile row's change_xid (migration 022) without a PL/pgSQL call for each row written: a new
-- row takes it from its default, and profile_change_xid() runs only for a row written without
-- the value it would give. Its call for each row an upsert proposes to insert (every identify's,
-- whether it then inserts or updates) cost an identify about 1.5 µs of Postgres (bench/README.md,
-- "A profile's write as its rows"). Each condition holds exactly when the row lacks the
-- function's value: an update that moves the row's transaction on still calls it, and so does a
-- write on Citus, where a default may be taken on the coordinator, in its transaction, and the
-- function's value is the shard's node's. A default rewrites no row.
ALTER TABLE profiles ALTER COLUMN change_xid SET DEFAULT pg_current_xact_id();
DROP TRIGGER profiles_change_xid ON profiles;
CREATE TRIGGER profiles_change_xid_of_inserts BEFORE INSERT ON profiles
  FOR EACH ROW WHEN (NEW.change_xid IS DISTINCT FROM pg_current_xact_id())
  EXECUTE FUNCTION profile_change_xid();
CREATE TRIGGER profiles_change_xid_of_updates BEFORE UPDATE ON profiles
  FOR EACH ROW WHEN (NEW.change_xid IS DISTINCT FROM greatest(pg_current_xact_id(), OLD.change_xid))
  EXECUTE FUNCTION profile_change_xid();
