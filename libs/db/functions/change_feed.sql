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
-- the old row and the new, as one object, or null when none does (a key cleared that was not seen
-- is no change). A scalar subquery behind a CASE: a map the write left as it was, or an empty one
-- (most identifies carry no tags or topic choices), is not read at all, where a lateral subquery
-- set up its scan for every row and map.
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

-- What a statement's writes of profile rows changed, as the feed's changes: `old_rows` the rows
-- before (none for new rows: "new_rows WHERE false"), `new_rows` after, the triggers' transition
-- tables. Set-based, once per statement: a SQL function called per row cost 180 µs a row, since
-- Postgres starts its plan at each call. A row is a profile, and its values are seen, from its
-- creation (created_t) while it has one since its last erasure (the rule of libs/db/src/events.ts
-- and libs/domain profileExists); an erasure by the write leaves nothing seen of the row before
-- it, and removes every earlier change of the row's key: nothing the feed serves holds the user's
-- data from before it (docs/changes.md, "Erasure"). A row's changes are numbered in the order of
-- `ord`. A map the write leaves as it was (most identifies carry no tags or topic choices) is not
-- read: its subquery's condition holds only the row's columns, which Postgres checks first.
CREATE OR REPLACE FUNCTION profile_changes_statement(old_rows text) RETURNS text
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
      FROM new_rows AS n LEFT JOIN (SELECT * FROM %1$s) AS o ON o.project_id = n.project_id AND o.key = n.key
     -- a row whose every column read here is as it was makes no change (a write of values already held)
     WHERE o.key IS NULL
        OR (o.external_id, o.created_t, o.last_created_t, o.deleted_t, o.email, o.phone_number, o.unsubscribed,
            o.data, o.channels, o.tags, o.topic_choices, o.topic_defaults)
           IS DISTINCT FROM (n.external_id, n.created_t, n.last_created_t, n.deleted_t, n.email, n.phone_number,
                             n.unsubscribed, n.data, n.channels, n.tags, n.topic_choices, n.topic_defaults)
  ), erased AS (
    DELETE FROM changes AS c USING w
     WHERE w.erased AND c.project_id = w.project_id AND c.user_key = w.key
  ), seen AS (
    SELECT w.project_id, w.key, w.change_xid, w.user_id, w.old_since, w.new_since,
           change_visible(w.email, w.new_since) AS email, change_visible(w.old_email, w.old_since) AS old_email,
           change_visible(w.phone_number, w.new_since) AS phone_number,
           change_visible(w.old_phone_number, w.old_since) AS old_phone_number,
           %2$s AS data, %3$s AS channels, %4$s AS tags, w.old_tags,
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
           user_id, change
      FROM (SELECT s.*,
                   CASE WHEN email IS NOT NULL AND email IS DISTINCT FROM old_email
                        THEN jsonb_build_object('email', email) ELSE '{}' END ||
                   CASE WHEN phone_number IS NOT NULL AND phone_number IS DISTINCT FROM old_phone_number
                        THEN jsonb_build_object('phone_number', phone_number) ELSE '{}' END ||
                   CASE WHEN data IS NULL THEN '{}' ELSE jsonb_build_object('data', data) END ||
                   CASE WHEN channels IS NULL THEN '{}'
                        ELSE jsonb_build_object('channels', jsonb_path_query_array(channels, '$.*'))
                   END AS change
              FROM seen AS s) AS fields
     WHERE old_since IS NULL OR change <> '{}'
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
  INSERT INTO changes (project_id, pos_xid, seq, user_key, type, user_id, change)
  SELECT project_id, change_xid, nextval('change_seq'), key, type, user_id, change
    FROM (SELECT * FROM found ORDER BY project_id, key, ord) AS ordered
  $q$, old_rows, change_map_diff('data'), change_map_diff('channels'), change_map_diff('tags'),
       change_map_diff('topic_choices'))
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

-- Both profiles triggers: planned at each statement (a plan is cached per statement text, and the
-- two differ in where the rows before come from).
CREATE OR REPLACE FUNCTION changes_of_profiles() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- An upsert fires both triggers, and one of them often has no row: it plans nothing.
  IF NOT EXISTS (SELECT FROM new_rows) THEN
    RETURN NULL;
  END IF;
  EXECUTE profile_changes_statement(CASE TG_OP WHEN 'UPDATE' THEN 'old_rows' ELSE 'new_rows WHERE false' END);
  PERFORM pg_notify('changes', p::text) FROM (SELECT DISTINCT project_id FROM new_rows) AS projects (p);
  RETURN NULL;
END
$$;

-- An event's change names its row, read with the change (libs/db/src/changes.ts).
CREATE OR REPLACE FUNCTION changes_of_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO changes (project_id, pos_xid, seq, user_key, type, event_id, event_at)
  SELECT project_id, pg_current_xact_id(), nextval('change_seq'), user_key, 'event.stored', id, created_at
    FROM new_rows;
  PERFORM pg_notify('changes', p::text) FROM (SELECT DISTINCT project_id FROM new_rows) AS projects (p);
  RETURN NULL;
END
$$;
