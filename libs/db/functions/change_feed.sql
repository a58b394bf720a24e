-- The change feed's capture (migration 022, docs/changes.md): triggers that write one row of
-- `changes` per change, in the transaction that applies it.

-- A stamped value as the feed shows it: its value when a reader of the profile sees it (stamped at
-- or after the profile's creation `since`, libs/domain visiblePart), JSON null for a cleared one;
-- SQL null when it is not seen (not stamped since, or no profile: `since` null).
CREATE OR REPLACE FUNCTION change_visible(stamped jsonb, since bigint) RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN (stamped ->> 't')::bigint >= since THEN coalesce(stamped -> 'v', 'null') END
$$;

-- The entries of the map `map` of w (profile_changes_statement) whose seen value differs between
-- the old row and the new, as the feed shows them, as one object, or null when none does (a key
-- cleared that was not seen is no change): the tags' and topic choices' changes, rare, are built
-- from it. A scalar subquery behind a CASE: a map the write left as it was, or an empty one (most
-- identifies carry no tags or topic choices), is not read at all, where a lateral subquery set up
-- its scan for every row and map.
CREATE OR REPLACE FUNCTION change_map_diff(map text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
  SELECT format($q$
    CASE WHEN w.%1$I <> '{}' AND (w.%1$I IS DISTINCT FROM w.%2$I OR w.new_since IS DISTINCT FROM w.old_since)
    THEN (SELECT jsonb_object_agg(e.key, change_visible(e.value, w.new_since))
            FROM jsonb_each(w.%1$I) AS e
           WHERE change_visible(e.value, w.new_since) IS NOT NULL
             AND change_visible(e.value, w.new_since)
                 IS DISTINCT FROM coalesce(change_visible(w.%2$I -> e.key, w.old_since), 'null')) END
  $q$, map, 'old_' || map)
$$;

-- The entries of the map `map` of w (profile_changes_statement) that a profile's change holds,
-- still stamped (libs/domain feedChange shows them as the feed does), or null when none. A new
-- profile's change (no old_since) holds the whole map: the reading keeps the entries seen (stamped
-- at or after the profile's creation) and not cleared. A changed profile's holds the entries whose
-- seen value differs from the row's before (a key cleared that was not seen is no change): the
-- map without the keys that are no change, found key by key with jsonb_object_keys and `->`. A
-- jsonb_each and a jsonb_object_agg per row and map building the values as the feed shows them
-- cost about three times as much (bench/README.md, "Change feed"). A map the write left as it was,
-- or an empty one, is not read at all.
CREATE OR REPLACE FUNCTION change_map_entries(map text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
  SELECT format($q$
    CASE WHEN w.%1$I = '{}' THEN NULL
         WHEN w.old_since IS NULL THEN w.%1$I
         WHEN w.%1$I IS DISTINCT FROM w.%2$I OR w.new_since IS DISTINCT FROM w.old_since
         THEN nullif(w.%1$I - ARRAY(
                SELECT k FROM jsonb_object_keys(w.%1$I) AS k
                 WHERE CASE WHEN ((w.%1$I -> k -> 't')::bigint >= w.new_since) IS NOT TRUE THEN true
                            WHEN (w.%2$I -> k -> 't')::bigint >= w.old_since
                            THEN coalesce(w.%1$I -> k -> 'v', 'null') = coalesce(w.%2$I -> k -> 'v', 'null')
                            ELSE coalesce(w.%1$I -> k -> 'v', 'null') = 'null' END),
                     '{}') END
  $q$, map, 'old_' || map)
$$;

-- The register `register` of w as a profile change holds it, still stamped, when its seen value
-- differs from the row's before; null when it does not.
CREATE OR REPLACE FUNCTION change_register_entry(register text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
  SELECT format($q$
    CASE WHEN change_visible(w.%1$I, w.new_since) IS NOT NULL
          AND change_visible(w.%1$I, w.new_since) IS DISTINCT FROM change_visible(w.%2$I, w.old_since)
         THEN w.%1$I END
  $q$, register, 'old_' || register)
$$;

-- What a statement's writes of profile rows changed, as the feed's changes: `old_rows` the rows
-- before (none for new rows: "new_rows WHERE false"), `new_rows` after, the triggers' transition
-- tables. Set-based, once per statement: a SQL function called per row cost 180 µs a row, since
-- Postgres starts its plan at each call. A row is a profile, and its values are seen, from its
-- creation (created_t) while it has one since its last erasure (the rule of libs/db/src/events.ts
-- and libs/domain profileExists); an erasure by the write leaves nothing seen of the row before
-- it (and profile_changes_statements removes every earlier change of the row's key: nothing the
-- feed serves holds the user's data from before it, docs/changes.md, "Erasure"). A row's changes
-- are numbered in the order of `ord`. A map the write leaves as it was (most identifies carry no
-- tags or topic choices) is not read: its subquery's condition holds only the row's columns, which
-- Postgres checks first. A profile's change (profile.created, profile.changed) is stored as the
-- profile's creation stamp `since` and the fields that changed, still stamped, null when they did
-- not: one jsonb built, where building it as the feed shows it took a jsonb built and copied again
-- for each field.
--
-- On Citus (`on_citus`) the statement runs on a shard, and Citus cannot plan a statement that
-- reads a transition table and writes a distributed one ("could not find named tuplestore"): it
-- reads the transition tables alone and puts the changes, in position order, into `made`, which
-- changes_of_profiles writes with write_changes_on_citus.
DROP FUNCTION IF EXISTS profile_changes_statement(text);
CREATE OR REPLACE FUNCTION profile_changes_statement(old_rows text, on_citus boolean) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
  SELECT format($q$
  WITH w AS MATERIALIZED (
    SELECT n.project_id, n.key, n.change_xid, n.external_id AS user_id, o.external_id AS old_id,
           o.deleted_t IS DISTINCT FROM n.deleted_t AS erased,
           CASE WHEN o.created_t IS NOT NULL AND (o.last_created_t IS NOT NULL OR o.deleted_t IS NULL)
                 AND o.deleted_t IS NOT DISTINCT FROM n.deleted_t THEN o.created_t END AS old_since,
           CASE WHEN n.created_t IS NOT NULL AND (n.last_created_t IS NOT NULL OR n.deleted_t IS NULL)
                THEN n.created_t END AS new_since,
           o.email AS old_email, n.email, o.phone_number AS old_phone_number, n.phone_number,
           o.data AS old_data, n.data, o.channels AS old_channels, n.channels, o.tags AS old_tags, n.tags,
           o.unsubscribed AS old_unsubscribed, n.unsubscribed, o.topic_choices AS old_topic_choices,
           n.topic_choices, o.topic_defaults AS old_topic_defaults, n.topic_defaults
      FROM new_rows AS n FULL JOIN (SELECT * FROM %1$s) AS o ON o.project_id = n.project_id AND o.key = n.key
     -- a row whose every column read here is as it was makes no change (a write of values already held)
     WHERE o.key IS NULL
        OR (o.external_id, o.created_t, o.last_created_t, o.deleted_t, o.email, o.phone_number, o.unsubscribed,
            o.data, o.channels, o.tags, o.topic_choices, o.topic_defaults)
           IS DISTINCT FROM (n.external_id, n.created_t, n.last_created_t, n.deleted_t, n.email, n.phone_number,
                             n.unsubscribed, n.data, n.channels, n.tags, n.topic_choices, n.topic_defaults)
  ), seen AS (
    SELECT w.project_id, w.key, w.change_xid, w.user_id, w.old_since, w.new_since,
           %6$s AS email, %7$s AS phone_number, %2$s AS data, %3$s AS channels, %4$s AS tags, w.old_tags,
           change_visible(w.unsubscribed, w.new_since) AS unsubscribed,
           change_visible(w.old_unsubscribed, w.old_since) AS old_unsubscribed,
           %5$s AS topic_choices, w.topic_defaults, w.old_topic_defaults, w.topic_choices AS stamped_choices
      FROM w
     WHERE w.new_since IS NOT NULL
  ), found AS (
    SELECT project_id, key, change_xid, 0 AS ord, 'user.erased' AS type, old_id AS user_id, '{}'::jsonb AS change
      FROM w WHERE erased AND old_id IS NOT NULL
    UNION ALL
    SELECT project_id, key, change_xid, 1, CASE WHEN old_since IS NULL THEN 'profile.created' ELSE 'profile.changed' END,
           user_id, jsonb_build_object('since', new_since, 'email', email, 'phone_number', phone_number,
                                       'data', data, 'channels', channels)
      FROM seen
     WHERE old_since IS NULL OR email IS NOT NULL OR phone_number IS NOT NULL OR data IS NOT NULL OR channels IS NOT NULL
    UNION ALL
    SELECT s.project_id, s.key, s.change_xid, 2, 'tags.changed', s.user_id,
           jsonb_build_object('added', coalesce(jsonb_agg(d.key ORDER BY d.key) FILTER (WHERE d.value = 'true'), '[]'),
                              'removed', coalesce(jsonb_agg(d.key ORDER BY d.key) FILTER (WHERE d.value = 'false'), '[]'))
      FROM seen AS s, jsonb_each(s.tags) AS d
     -- a tag removed that was not on is no change
     WHERE s.tags IS NOT NULL AND (d.value = 'true' OR change_visible(s.old_tags -> d.key, s.old_since) = 'true')
     GROUP BY s.project_id, s.key, s.change_xid, s.user_id
    UNION ALL
    SELECT project_id, key, change_xid, 3, CASE WHEN unsubscribed = 'true' THEN 'unsubscribed' ELSE 'resubscribed' END,
           user_id, '{}'::jsonb
      FROM seen
     WHERE coalesce(unsubscribed, 'false') IS DISTINCT FROM coalesce(old_unsubscribed, 'false')
    UNION ALL
    -- Explicit choices, then the defaults a topic's default fan-out gives profiles without one.
    SELECT s.project_id, s.key, s.change_xid, 4, 'topic.choice_changed', s.user_id,
           jsonb_build_object('topic_id', c.key::bigint, 'status', c.value, 'source', 'explicit')
      FROM seen AS s, jsonb_each(s.topic_choices) AS c
     WHERE s.topic_choices IS NOT NULL
    UNION ALL
    SELECT s.project_id, s.key, s.change_xid, 4, 'topic.choice_changed', s.user_id,
           jsonb_build_object('topic_id', d.key::bigint, 'status', d.value, 'source', 'default')
      FROM seen AS s, jsonb_each(s.topic_defaults) AS d
     WHERE s.topic_defaults IS DISTINCT FROM s.old_topic_defaults AND s.old_since IS NOT NULL
       AND d.value IS DISTINCT FROM s.old_topic_defaults -> d.key
       AND change_visible(s.stamped_choices -> d.key, s.new_since) IS NULL
  )
  %8$s
  $q$, old_rows, change_map_entries('data'), change_map_entries('channels'), change_map_diff('tags'),
       change_map_diff('topic_choices'), change_register_entry('email'), change_register_entry('phone_number'),
       CASE WHEN on_citus THEN $c$
  SELECT coalesce(jsonb_agg(to_jsonb(f) ORDER BY project_id, key, ord), '[]') INTO made FROM found AS f
  $c$ ELSE $i$
  INSERT INTO changes (project_id, pos_xid, seq, user_key, type, user_id, change)
  SELECT project_id, change_xid, nextval('change_seq'), key, type, user_id, change
    FROM (SELECT * FROM found ORDER BY project_id, key, ord) AS ordered
  $i$ END)
$$;

-- Every write of a profile row records the pos_xid of its change: its transaction's, or the
-- row's last one when that is later (a transaction older than the one that wrote the row before
-- it), so that the row's changes are read in the order they were written (docs/changes.md).
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
-- event_id, event_at; in position order) as changes of `epoch` on Citus. Its rows are the rows of
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
                       event_id, event_at)
  SELECT f.project_id, epoch, t, node, greatest(pg_current_xact_id(), f.change_xid), nextval('change_seq'), f.key,
         f.type, f.user_id, f.change, f.event_id, f.event_at
    FROM (SELECT * FROM ROWS FROM (jsonb_to_recordset(made) AS (project_id integer, key text, change_xid xid8, type text,
                                                                 user_id text, change jsonb, event_id uuid,
                                                                 event_at timestamptz))
                        WITH ORDINALITY AS r (project_id, key, change_xid, type, user_id, change, event_id, event_at, n)
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
