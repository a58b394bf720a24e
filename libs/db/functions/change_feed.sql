-- The change feed's capture (migrations 022 and 025, docs/changes.md): triggers that write, in the
-- transaction that applies it, a row of `changes` for each profile row written and each event stored.

-- A profile row as a change stores it (migration 025): `alias`'s columns as the type profile_image;
-- with `whole` false only its id and the stamps of its life, none of the user's data.
CREATE OR REPLACE FUNCTION profile_image_of(alias text, whole boolean) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN whole
    THEN format('ROW(%1$s.external_id, %1$s.created_t, %1$s.last_created_t, %1$s.deleted_t, %1$s.email, %1$s.phone_number,
                     %1$s.unsubscribed, %1$s.data, %1$s.channels, %1$s.tags, %1$s.topic_choices, %1$s.topic_defaults)::profile_image', alias)
    ELSE format('ROW(%1$s.external_id, %1$s.created_t, %1$s.last_created_t, %1$s.deleted_t,
                     NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)::profile_image', alias) END
$$;

-- What a profile row as a change stores it (profile_image) holds, in bytes as Postgres holds its
-- values uncompressed: what a read of the feed counts against a page's budget (libs/db/src/changes.ts
-- CHANGE_PAGE_BYTES). Each value is taken out of its compression (`|| '{}'` hands a map back as it
-- is, decompressed), not rendered as JSON: about a tenth of the time for values that compress well.
-- PL/pgSQL, so that the image itself is decompressed once, not again for each of its fields.
CREATE OR REPLACE FUNCTION profile_image_bytes(image profile_image) RETURNS bigint
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
BEGIN
  RETURN coalesce(octet_length(image.external_id), 0)
         + coalesce(pg_column_size(image.email || '{}'), 0) + coalesce(pg_column_size(image.phone_number || '{}'), 0)
         + coalesce(pg_column_size(image.unsubscribed || '{}'), 0) + coalesce(pg_column_size(image.data || '{}'), 0)
         + coalesce(pg_column_size(image.channels || '{}'), 0) + coalesce(pg_column_size(image.tags || '{}'), 0)
         + coalesce(pg_column_size(image.topic_choices || '{}'), 0)
         + coalesce(pg_column_size(image.topic_defaults || '{}'), 0);
END
$$;

-- What a statement's writes of profile rows changed, as the feed's changes store them (migration
-- 025): a row of type profile.written for each profile row the write changed, holding the row
-- before (null for a new row) and after, the feed's changes worked out from the two when read
-- (libs/domain profileWriteChanges). `old_rows` the rows before (none for new rows: "new_rows
-- WHERE false"), `new_rows` after, the triggers' transition tables. Set-based, once per
-- statement. Left out: a row whose every column read is as it was (a write of values already
-- held), and a row that is no profile and was not erased (it makes no change of the feed). An
-- erasure's row before holds only the user's id and the stamps (nothing the feed serves holds
-- the user's data from before it, docs/changes.md, "Erasure": profile_changes_statements removes
-- every earlier change of the row's key).
--
-- On Citus (`on_citus`) the statement runs on a shard, and Citus cannot plan a statement that
-- reads a transition table and writes a distributed one ("could not find named tuplestore"): it
-- reads the transition tables alone and puts the changes, in position order, into `made`, which
-- changes_of_profiles writes with write_changes_on_citus.
DROP FUNCTION IF EXISTS profile_changes_statement(text);
CREATE OR REPLACE FUNCTION profile_changes_statement(old_rows text, on_citus boolean) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
  SELECT format($q$
  WITH written AS (
    SELECT n.project_id, n.key, n.change_xid,
           CASE WHEN o.key IS NULL THEN NULL WHEN o.deleted_t IS DISTINCT FROM n.deleted_t THEN %2$s ELSE %3$s END AS before,
           %4$s AS after
      FROM new_rows AS n FULL JOIN (SELECT * FROM %1$s) AS o ON o.project_id = n.project_id AND o.key = n.key
     WHERE (n.created_t IS NOT NULL OR o.deleted_t IS DISTINCT FROM n.deleted_t)
       AND (o.key IS NULL
            OR (o.external_id, o.created_t, o.last_created_t, o.deleted_t, o.email, o.phone_number, o.unsubscribed,
                o.data, o.channels, o.tags, o.topic_choices, o.topic_defaults)
               IS DISTINCT FROM (n.external_id, n.created_t, n.last_created_t, n.deleted_t, n.email, n.phone_number,
                                 n.unsubscribed, n.data, n.channels, n.tags, n.topic_choices, n.topic_defaults))
  )
  %5$s
  $q$, old_rows, profile_image_of('o', false), profile_image_of('o', true), profile_image_of('n', true),
       CASE WHEN on_citus THEN $c$
  SELECT coalesce(jsonb_agg(jsonb_build_object('project_id', project_id, 'key', key, 'change_xid', change_xid,
                                               'type', 'profile.written', 'before', before, 'after', after)
                            ORDER BY project_id, key), '[]')
    INTO made FROM written
  $c$ ELSE $i$
  INSERT INTO changes (project_id, pos_xid, seq, user_key, type, before, after)
  SELECT project_id, change_xid, nextval('change_seq'), key, 'profile.written', before, after
    FROM (SELECT * FROM written ORDER BY project_id, key) AS ordered
  $i$ END)
$$;

-- Every write of a profile row records the pos_xid of its change: its transaction's, or the
-- row's last one when that is later (a transaction older than the one that wrote the row before
-- it), so that the row's changes are read in the order they were written (docs/changes.md).
-- Called only for a row written without that value (the triggers' conditions, migration 026).
CREATE OR REPLACE FUNCTION profile_change_xid() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.change_xid := CASE WHEN TG_OP = 'UPDATE' THEN greatest(pg_current_xact_id(), OLD.change_xid)
                         ELSE pg_current_xact_id() END;
  RETURN NEW;
END
$$;

-- The change feed on Citus (docs/scaling.md, "The change feed on Citus", migration 024): a
-- change's position is (epoch, clock, node, transaction id, sequence), each taken where the change
-- is stored, and readers read the epochs closed.

-- This node's Citus group; only called on Citus, where pg_dist_local_group exists.
CREATE OR REPLACE FUNCTION change_node() RETURNS integer LANGUAGE plpgsql STABLE AS $$
BEGIN
  RETURN (SELECT groupid FROM pg_dist_local_group);
END
$$;

-- This node's clock, in microseconds since 1970.
CREATE OR REPLACE FUNCTION change_clock() RETURNS bigint LANGUAGE sql VOLATILE AS $$
  SELECT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint
$$;

-- Writes `made` (what a statement changed: project_id, key, change_xid, type, user_id, change,
-- event_id, event_at, before, after; in position order) as changes of `epoch` on Citus. Its rows are the rows of
-- the shard the trigger fired on, so they are stored on this node, where their transaction id and
-- sequence are taken. No notice (pg_notify) is sent: a shard's transaction is prepared for Citus's
-- two-phase commit, which a notice forbids, and a change is readable only once its epoch is closed
-- (readers read again every 250 ms, libs/app waitForChangeFeed).
CREATE OR REPLACE FUNCTION write_changes_on_citus(epoch bigint, made jsonb) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  t bigint := change_clock();
  node integer := change_node();
BEGIN
  -- A statement that changed nothing (values written again) plans no insert.
  IF coalesce(jsonb_array_length(made), 0) = 0 THEN
    RETURN;
  END IF;
  INSERT INTO changes (project_id, pos_epoch, pos_t, pos_node, pos_xid, seq, user_key, type, user_id, change,
                       event_id, event_at, before, after)
  SELECT f.project_id, epoch, t, node, greatest(pg_current_xact_id(), f.change_xid), nextval('change_seq'), f.key,
         f.type, f.user_id, f.change, f.event_id, f.event_at, f.before, f.after
    FROM (SELECT * FROM ROWS FROM (jsonb_to_recordset(made) AS (project_id integer, key text, change_xid xid8, type text,
                                                                 user_id text, change jsonb, event_id uuid,
                                                                 event_at timestamptz, before profile_image,
                                                                 after profile_image))
                        WITH ORDINALITY AS r (project_id, key, change_xid, type, user_id, change, event_id, event_at,
                                              before, after, n)
           ORDER BY n) AS f;
END
$$;

-- The epoch the capture writes now: null on one Postgres (change_epochs has no row). Read after the
-- transaction has its id on this node (the capture's rows are written by then): closing an epoch
-- relies on it (change_feed_closed).
CREATE OR REPLACE FUNCTION change_epoch() RETURNS bigint LANGUAGE sql STABLE AS $$
  SELECT epoch FROM change_epochs
$$;

-- What changes_of_profiles does for one of the two profiles triggers, `old_rows` as in
-- profile_changes_statement: it removes the earlier changes of each row the write erases, then
-- records the changes, on one Postgres (`epoch` null) and on Citus. A statement that erases
-- nothing (no row with an erasure) looks no further. One DELETE per row erased, with the index of
-- the row's key, whatever the number of rows the plan was made for (see changes_of_profiles).
CREATE OR REPLACE FUNCTION profile_changes_statements(old_rows text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
  SELECT format($q$
    IF EXISTS (SELECT FROM new_rows WHERE deleted_t IS NOT NULL) THEN
      FOR erasure IN SELECT n.project_id, n.key
                       FROM new_rows AS n FULL JOIN (SELECT * FROM %1$s) AS o ON o.project_id = n.project_id AND o.key = n.key
                      WHERE o.deleted_t IS DISTINCT FROM n.deleted_t LOOP
        DELETE FROM changes WHERE project_id = erasure.project_id AND user_key = erasure.key;
      END LOOP;
    END IF;
    IF epoch IS NULL THEN
      %2$s;
      PERFORM pg_notify('changes', p::text) FROM (SELECT DISTINCT project_id FROM new_rows) AS projects (p);
    ELSE
      %3$s;
      PERFORM write_changes_on_citus(epoch, made);
    END IF;
  $q$, old_rows, profile_changes_statement(old_rows, false), profile_changes_statement(old_rows, true))
$$;

-- Both profiles triggers' function, its statements written out (profile_changes_statements), not
-- run with EXECUTE: PL/pgSQL keeps their plans, where EXECUTE parsed and planned the big statement
-- at every write, about a seventh of the capture's time (bench/README.md, "Change feed"). Postgres
-- compiles a trigger function once per trigger, so each trigger runs only its own statements and
-- keeps its own plans (and plans only those of the path it takes: one Postgres, or Citus). A kept
-- plan is made at the trigger's first call in a session, for that call's number of rows, and
-- serves every later call: new_rows and old_rows are joined by FULL JOINs (every row is in both,
-- or only in new_rows), which Postgres runs as a hash or merge join whatever the numbers, never as
-- a nested loop that would read old_rows again for each new row of a later, larger statement.
DO $do$
BEGIN
  EXECUTE format($f$
    CREATE OR REPLACE FUNCTION changes_of_profiles() RETURNS trigger LANGUAGE plpgsql AS $b$
    DECLARE
      epoch bigint;
      made jsonb;
      erasure record;
    BEGIN
      -- An upsert fires both triggers, and one of them often has no row.
      IF NOT EXISTS (SELECT FROM new_rows) THEN
        RETURN NULL;
      END IF;
      epoch := change_epoch();
      IF TG_OP = 'UPDATE' THEN
        %s
      ELSE
        %s
      END IF;
      RETURN NULL;
    END
    $b$ $f$, profile_changes_statements('old_rows'), profile_changes_statements('new_rows WHERE false'));
END
$do$;

-- An event's change names its row, read with the change (libs/db/src/changes.ts).
CREATE OR REPLACE FUNCTION changes_of_events() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  epoch bigint := change_epoch();
BEGIN
  IF epoch IS NULL THEN
    INSERT INTO changes (project_id, pos_xid, seq, user_key, type, event_id, event_at)
    SELECT project_id, pg_current_xact_id(), nextval('change_seq'), user_key, 'event.stored', id, created_at
      FROM new_rows;
    PERFORM pg_notify('changes', p::text) FROM (SELECT DISTINCT project_id FROM new_rows) AS projects (p);
  ELSE
    PERFORM write_changes_on_citus(epoch, (
      SELECT jsonb_agg(jsonb_build_object('project_id', project_id, 'key', user_key, 'type', 'event.stored',
                                          'event_id', id, 'event_at', created_at))
        FROM new_rows));
  END IF;
  RETURN NULL;
END
$$;

-- A change inserted without a position (migration 024: a reidentify's) takes it here, where its
-- row is stored: the transaction id first, since the epoch must be read after it.
CREATE OR REPLACE FUNCTION change_position() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.pos_xid := pg_current_xact_id();
  NEW.seq := nextval('change_seq');
  NEW.pos_epoch := change_epoch();
  IF NEW.pos_epoch IS NOT NULL THEN
    NEW.pos_t := change_clock();
    NEW.pos_node := change_node();
  END IF;
  RETURN NEW;
END
$$;

-- This node's part in closing an epoch: the epoch it sees, then, in a later snapshot, its oldest
-- running transaction id and its next one. Every transaction that wrote a change of an earlier
-- epoch here had its id before it read that epoch, so before this snapshot: below `xmax`.
CREATE OR REPLACE FUNCTION change_feed_sample() RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  seen bigint := change_epoch();
  snapshot pg_snapshot;
BEGIN
  snapshot := pg_current_snapshot();
  RETURN jsonb_build_object('group', change_node(), 'epoch', seen, 'xmin', pg_snapshot_xmin(snapshot)::text,
                            'xmax', pg_snapshot_xmax(snapshot)::text);
END
$$;

-- Every node's sample (change_feed_sample), by group; null when a node did not answer.
CREATE OR REPLACE FUNCTION change_feed_samples() RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  samples jsonb;
BEGIN
  SELECT CASE WHEN bool_and(success) THEN jsonb_object_agg((result::jsonb) ->> 'group', result::jsonb) END
    INTO samples
    FROM run_command_on_all_nodes('SELECT change_feed_sample()');
  RETURN samples;
END
$$;

-- The last epoch readers may read (docs/scaling.md, "The change feed on Citus"); null on one
-- Postgres. Holding `lock_id` (the caller that cannot waits for nothing: it gets the epoch closed
-- last): moves the epoch on when it last moved `bump_after_ms` ago or more, in a transaction of
-- its own (committed, on every node, before the samples are taken); then closes the epochs of the
-- samples taken after the last move (kept across calls in change_epoch_samples): an epoch is closed
-- once, on every node, every transaction that could still write one has ended, which is waited
-- for `wait_ms` at most.
CREATE OR REPLACE FUNCTION change_feed_closed(lock_id integer, bump_after_ms integer, wait_ms integer)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  state change_epochs;
  pending jsonb;
  samples jsonb;
  closed_now bigint;
  deadline timestamptz := clock_timestamp() + make_interval(secs => wait_ms / 1000.0);
BEGIN
  SELECT * INTO state FROM change_epochs;
  IF NOT FOUND THEN
    RETURN NULL;
  END IF;
  IF NOT pg_try_advisory_xact_lock(lock_id) THEN
    RETURN state.closed;
  END IF;
  closed_now := state.closed;
  SELECT jsonb_object_agg(group_id::text, jsonb_build_object('epoch', epoch, 'xmax', next_xid::text))
    INTO pending FROM change_epoch_samples;
  IF state.bumped_at <= clock_timestamp() - make_interval(secs => bump_after_ms / 1000.0) THEN
    PERFORM run_command_on_coordinator(format(
      'UPDATE change_epochs SET epoch = epoch + 1, bumped_at = %L WHERE epoch = %s', clock_timestamp(), state.epoch));
  ELSIF pending IS NULL THEN
    -- Every epoch before the current one is closed, and the current one is not closed before it moves on.
    RETURN closed_now;
  END IF;
  -- Nothing is written before the samples: a transaction id of this one would hold the
  -- coordinator's oldest running transaction back, and so the close.
  LOOP
    samples := change_feed_samples();
    EXIT WHEN samples IS NULL;
    -- A node added or removed since: sampled again.
    IF (SELECT array_agg(g ORDER BY g) FROM jsonb_object_keys(pending) AS g)
       IS DISTINCT FROM (SELECT array_agg(g ORDER BY g) FROM jsonb_object_keys(samples) AS g) THEN
      pending := NULL;
    END IF;
    -- Every node past its sample: the epochs before the one it saw are closed.
    IF (SELECT bool_and(((samples -> g) ->> 'xmin')::xid8 >= ((pending -> g) ->> 'xmax')::xid8)
          FROM jsonb_object_keys(pending) AS g) THEN
      closed_now := greatest(closed_now, (SELECT min(((pending -> g) ->> 'epoch')::bigint) - 1
                                            FROM jsonb_object_keys(pending) AS g));
      pending := NULL;
    END IF;
    -- A sample of an epoch not yet closed is the next to wait for.
    IF pending IS NULL AND (SELECT min((s.value ->> 'epoch')::bigint) FROM jsonb_each(samples) AS s) - 1 > closed_now THEN
      pending := samples;
    END IF;
    EXIT WHEN pending IS NULL OR clock_timestamp() >= deadline;
    PERFORM pg_sleep(0.002);
  END LOOP;
  DELETE FROM change_epoch_samples;
  INSERT INTO change_epoch_samples (group_id, epoch, next_xid)
  SELECT g::integer, ((pending -> g) ->> 'epoch')::bigint, ((pending -> g) ->> 'xmax')::xid8
    FROM jsonb_object_keys(pending) AS g;
  IF closed_now > state.closed THEN
    UPDATE change_epochs SET closed = closed_now;
  END IF;
  RETURN closed_now;
END
$$;
