-- Journeys: automated message flows, each a graph of nodes joined by edges (api.md "Journey").
CREATE TABLE journeys (
  id                 serial PRIMARY KEY,
  project_id         integer NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  name               text NOT NULL CHECK (length(name) BETWEEN 1 AND 255),
  description        text,
  status             text NOT NULL CHECK (status IN ('draft', 'active', 'paused', 'archived', 'cancelled')),
  trigger_type       text NOT NULL CHECK (trigger_type ~ '^[a-z][a-z0-9_]{0,63}$'),
  trigger_event_name text CHECK (length(trigger_event_name) BETWEEN 1 AND 255),
  created_at         timestamptz NOT NULL DEFAULT clock_timestamp(),
  updated_at         timestamptz NOT NULL DEFAULT clock_timestamp(),
  -- Only an event trigger names an event, and it always does.
  CHECK ((trigger_type = 'event') = (trigger_event_name IS NOT NULL))
);
CREATE INDEX journeys_project_idx ON journeys (project_id);

-- Who may enter a journey (segments, filters, entry rules). Kept for the journey engine but
-- never returned (decisions.md), so it lives apart from everything the read queries select.
CREATE TABLE journey_audiences (
  journey_id integer PRIMARY KEY REFERENCES journeys (id) ON DELETE CASCADE,
  audience   jsonb NOT NULL
);

-- One row per node; the columns of a type are set exactly when the node has that type.
CREATE TABLE journey_nodes (
  id                            serial PRIMARY KEY,
  journey_id                    integer NOT NULL REFERENCES journeys (id) ON DELETE CASCADE,
  type                          text NOT NULL CHECK (type IN ('enter', 'delay', 'email', 'sms', 'push', 'branch', 'exit')),
  delay_duration                double precision CHECK (delay_duration >= 0),
  delay_duration_unit           text,
  delay_delivery_option         double precision,
  -- Types not shown by api.md: any JSON value, returned as stored.
  delay_property                jsonb,
  delay_property_type           jsonb,
  delay_preferred_delivery_time jsonb,
  conditions                    jsonb,
  title                         text CHECK (length(title) BETWEEN 1 AND 255),
  -- Target of the edges' foreign keys, which keep every edge inside its journey.
  UNIQUE (journey_id, id),
  CHECK ((type = 'delay') = (delay_duration IS NOT NULL AND delay_duration_unit IS NOT NULL AND delay_delivery_option IS NOT NULL)),
  CHECK (type = 'delay' OR num_nonnulls(delay_property, delay_property_type, delay_preferred_delivery_time) = 0),
  CHECK ((type = 'branch') = (conditions IS NOT NULL)),
  CHECK (type IN ('email', 'sms', 'push') OR title IS NULL),
  CHECK (type <> 'email' OR title IS NOT NULL)
);

CREATE TABLE journey_edges (
  id           serial PRIMARY KEY,
  journey_id   integer NOT NULL,
  from_node_id integer NOT NULL,
  to_node_id   integer NOT NULL,
  -- Set on (and only on) edges leaving a branch node; libs/domain/src/journey-graph.ts checks it.
  branch_index integer CHECK (branch_index >= 0),
  FOREIGN KEY (journey_id, from_node_id) REFERENCES journey_nodes (journey_id, id) ON DELETE CASCADE,
  FOREIGN KEY (journey_id, to_node_id) REFERENCES journey_nodes (journey_id, id) ON DELETE CASCADE
);
CREATE INDEX journey_edges_journey_idx ON journey_edges (journey_id);

-- The message an email, SMS or push node sends. Sender fields are email-only.
CREATE TABLE messages (
  id           serial PRIMARY KEY,
  node_id      integer NOT NULL UNIQUE REFERENCES journey_nodes (id) ON DELETE CASCADE,
  from_address text,
  reply_to     text
);

-- Localized versions of a message: metadata only.
CREATE TABLE message_contents (
  id             serial PRIMARY KEY,
  message_id     integer NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
  locale         text CHECK (length(locale) BETWEEN 1 AND 35),
  is_default     boolean NOT NULL,
  subject        text NOT NULL,
  preheader_text text NOT NULL
);
CREATE INDEX message_contents_message_idx ON message_contents (message_id);

-- Content bodies are never returned (api.md), so they are kept out of the table the read
-- queries select from: a body cannot leak through a `SELECT *` or a new column.
CREATE TABLE message_content_bodies (
  content_id integer PRIMARY KEY REFERENCES message_contents (id) ON DELETE CASCADE,
  html       text,
  text       text
);

-- The JSON of a journey's graph and of its messages list, built once at import from the tables
-- above (libs/db/src/journeys.ts). A graph never changes after import, and building its JSON
-- is most of the cost of a read, so reads send it as stored. Metadata only, like the tables it
-- is built from.
CREATE TABLE journey_documents (
  journey_id integer PRIMARY KEY REFERENCES journeys (id) ON DELETE CASCADE,
  nodes      json NOT NULL,
  edges      json NOT NULL,
  messages   json NOT NULL
);
