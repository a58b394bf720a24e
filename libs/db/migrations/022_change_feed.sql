-- The change feed (docs/changes.md): one row per change, written by triggers in the transaction
-- that applies it, whichever path writes (the workers, the topic fan-out, ctl import).
--
-- A change's position is (pos_xid, seq): the transaction that made it, then a sequence. A reader
-- reads only changes whose pos_xid is below the oldest transaction still running
-- (pg_snapshot_xmin), so that a change committed later can only come after what it read
-- (docs/changes.md, "Why nothing is skipped").
--
-- profiles.change_xid: the pos_xid of the row's last change, set on every write of the row by
-- profile_change_xid() (libs/db/functions/change_feed.sql). A transaction writing a profile after
-- a younger one committed it gives its change the younger one's xid, so that one user's changes
-- come in the order they were applied. A nullable column without a default rewrites no row.
ALTER TABLE profiles ADD COLUMN change_xid xid8;

-- No cache: a backend's cached values would break the order of seq across transactions, which
-- the per-user order relies on (a writer waiting on a row lock draws its value after the holder).
CREATE SEQUENCE change_seq;

-- project_id and user_key (the profile's stored key, a keyed hash) find a user's changes for its
-- erasure. user_id is the user's id as the change names it; an event's is its profile's, read
-- with the event. change: what changed, as the feed serves it (null for an event: its row is read
-- at read time, so that the erasure of the event takes it out of the feed too).
CREATE TABLE changes (
  project_id integer NOT NULL,
  pos_xid    xid8 NOT NULL,
  seq        bigint NOT NULL,
  user_key   text NOT NULL,
  type       text NOT NULL,
  user_id    text,
  applied_at timestamptz NOT NULL DEFAULT now(),
  change     jsonb,
  event_id   uuid,
  event_at   timestamptz
);
CREATE INDEX changes_position_idx ON changes (project_id, pos_xid, seq);
CREATE INDEX changes_user_idx ON changes (project_id, user_key);

-- The position through which a project's changes were removed by retention: a cursor before it
-- is refused (410) instead of silently skipping what was removed.
CREATE TABLE change_trims (
  project_id integer PRIMARY KEY,
  pos_xid    xid8 NOT NULL,
  seq        bigint NOT NULL,
  trimmed_at timestamptz NOT NULL
);

-- The triggers. A trigger names its function as it is made, so the functions exist here as
-- placeholders; their bodies are libs/db/functions/change_feed.sql, applied after the migrations.
CREATE FUNCTION profile_change_xid() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$;
CREATE FUNCTION changes_of_profiles() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
CREATE FUNCTION changes_of_events() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;

CREATE TRIGGER profiles_change_xid BEFORE INSERT OR UPDATE ON profiles
  FOR EACH ROW EXECUTE FUNCTION profile_change_xid();
CREATE TRIGGER profiles_changes_of_inserts AFTER INSERT ON profiles
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION changes_of_profiles();
CREATE TRIGGER profiles_changes_of_updates AFTER UPDATE ON profiles
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION changes_of_profiles();
CREATE TRIGGER events_changes AFTER INSERT ON events
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION changes_of_events();

-- The feed's read needs a permission of its own (changes:read), which a key may hold.
ALTER TABLE credentials DROP CONSTRAINT credentials_permissions_check;
ALTER TABLE credentials ADD CONSTRAINT credentials_permissions_check
  CHECK (permissions <@ ARRAY['campaign:read', 'campaign:write', 'profile:read', 'changes:read']);
