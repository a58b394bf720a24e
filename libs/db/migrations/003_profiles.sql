-- Last-writer-wins registers. A stamped value is {"t": ms, "h": tie-breaker, "v": value}; the
-- larger (t, h) wins, so merging is commutative, associative and idempotent
-- (libs/domain/src/stamp.ts holds the same rule for the application side).
CREATE FUNCTION lww_is_newer(a jsonb, b jsonb) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT ((a ->> 't')::bigint, (a ->> 'h') COLLATE "C") > ((b ->> 't')::bigint, (b ->> 'h') COLLATE "C")
$$;

CREATE FUNCTION lww_newest(current_value jsonb, incoming jsonb) RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE
    WHEN incoming IS NULL THEN current_value
    WHEN current_value IS NULL OR lww_is_newer(incoming, current_value) THEN incoming
    ELSE current_value
  END
$$;

-- One row per profile holding every field as a stamped value: email, data keys, channels
-- (keyed "type:address") and explicit topic choices (keyed by topic id). A row whose
-- created_t is null has only seen update_only updates and is not a profile yet: it is kept so
-- that the outcome does not depend on the order updates arrive in.
--
-- project_id has no foreign key on purpose: every row comes from an authenticated project,
-- and the per-row key-share lock on the project row would serialise all identify writes of
-- a project. Removing a project must delete its profiles explicitly.
CREATE TABLE profiles (
  project_id    integer NOT NULL,
  key           text NOT NULL,
  external_id   text,
  created_t     bigint,
  email         jsonb,
  data          jsonb NOT NULL DEFAULT '{}',
  channels      jsonb NOT NULL DEFAULT '{}',
  topic_choices jsonb NOT NULL DEFAULT '{}',
  updated_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (project_id, key)
) WITH (fillfactor = 80); -- 006 lowers it to 50, and says why

-- Identify events a worker could not apply (for a reason other than an outage); kept for an
-- operator to inspect. The event is JSON text, as queued, so that any payload fits.
CREATE TABLE identify_dead_letters (
  id         bigserial PRIMARY KEY,
  project_id integer,
  job_id     text,
  event      text NOT NULL,
  error      text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
