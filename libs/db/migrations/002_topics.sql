CREATE TABLE topics (
  id             serial PRIMARY KEY,
  project_id     integer NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  name           text NOT NULL CHECK (length(name) BETWEEN 1 AND 255),
  description    text CHECK (length(description) <= 200),
  default_status text NOT NULL CHECK (default_status IN ('subscribed', 'unsubscribed')),
  created_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
  updated_at     timestamptz NOT NULL DEFAULT clock_timestamp()
);
-- Names are unique per project ignoring case; the database decides, so concurrent renames
-- cannot both win.
CREATE UNIQUE INDEX topics_project_name_key ON topics (project_id, lower(name));
