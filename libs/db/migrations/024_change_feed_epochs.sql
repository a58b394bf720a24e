-- The change feed past one Postgres (docs/scaling.md, "The change feed on Citus"). On one
-- Postgres a change's position stays (pos_xid, seq), read below the oldest running transaction.
-- On Citus every node has transaction ids of its own, so a change's position there is
-- (pos_epoch, pos_t, pos_node, pos_xid, seq): the feed's epoch when it was written, the node's
-- clock then (microseconds since 1970), the Citus group of the node that wrote it, its
-- transaction id there and the node's own sequence; a reader reads the epochs that are closed
-- (change_epochs.closed): every transaction that could still write one has ended. Null on one
-- Postgres, where they would cost every change row their bytes: nullable columns without a
-- default rewrite no row.
ALTER TABLE changes ADD COLUMN pos_epoch bigint, ADD COLUMN pos_t bigint, ADD COLUMN pos_node integer;
ALTER TABLE change_trims ADD COLUMN pos_epoch bigint, ADD COLUMN pos_t bigint, ADD COLUMN pos_node integer;

-- The feed's epoch: one row on Citus (libs/db/citus/distribute.sql makes it, a reference table
-- read by the capture on every node), none on one Postgres. `epoch` is the one the capture writes
-- now, `closed` the last one readers may read, `bumped_at` when `epoch` last moved.
CREATE TABLE change_epochs (
  one       boolean PRIMARY KEY DEFAULT true CHECK (one),
  epoch     bigint NOT NULL,
  closed    bigint NOT NULL,
  bumped_at timestamptz NOT NULL
);

-- Closing an epoch, per node (Citus group): the epoch it saw and its next transaction id, sampled
-- once the epoch was bumped. The epochs before `epoch` are closed on the node once its oldest
-- running transaction is at or past `next_xid`. Kept on the coordinator.
CREATE TABLE change_epoch_samples (
  group_id integer PRIMARY KEY,
  epoch    bigint NOT NULL,
  next_xid xid8 NOT NULL
);

-- A change inserted without a position (a reidentify's, recorded by record_link_operations on the
-- Citus coordinator, where neither its transaction id nor its sequence is the shard's node's) gets
-- it where its row is stored. The function is a placeholder; its body is libs/db/functions/change_feed.sql.
CREATE FUNCTION change_position() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$;
CREATE TRIGGER changes_position BEFORE INSERT ON changes
  FOR EACH ROW WHEN (NEW.pos_xid IS NULL) EXECUTE FUNCTION change_position();
