-- The default each profile without an explicit choice holds, by topic id: written by the
-- default fan-out (docs/topics.md). Readers still resolve a status as explicit choice, else
-- the topic's default_status; this copy lets consumers of profile rows (exports, syncs that
-- page by updated_at) see that a default change reached a profile.
ALTER TABLE profiles ADD COLUMN topic_defaults jsonb NOT NULL DEFAULT '{}';

-- One row per topic whose default has changed: the fan-out of the latest change and how far
-- it got. Each change bumps `generation`; a job only works for the generation it was queued
-- for, so a newer change supersedes it. `after_key` is the last profile key done (keyset over
-- the project's profiles), committed with the chunk that did it, so a killed worker resumes.
CREATE TABLE topic_fanouts (
  topic_id         integer PRIMARY KEY REFERENCES topics (id) ON DELETE CASCADE,
  generation       integer NOT NULL,
  after_key        text,
  chunks           integer NOT NULL DEFAULT 0,
  profiles_updated bigint NOT NULL DEFAULT 0,
  started_at       timestamptz NOT NULL DEFAULT clock_timestamp(),
  finished_at      timestamptz
);

-- The topic list pages through a project's topics by id.
CREATE INDEX topics_project_id_idx ON topics (project_id, id);
