-- Webhook endpoints (docs/webhooks.md): where the worker POSTs a project's changes, in the feed's
-- order, each endpoint from its own cursor, advanced only once the endpoint answered 2xx. An
-- operator's record, read and written by workers only: kept on the coordinator under Citus.
CREATE TABLE webhook_endpoints (
  id                         bigserial PRIMARY KEY,
  project_id                 integer NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  url                        text NOT NULL,
  -- The change types delivered; null: all of them, those added by later releases included.
  types                      text[],
  -- Signing secrets, sealed (AES-256-GCM under WEBHOOK_SECRET_KEY): an HMAC needs the secret
  -- itself. After a rotation the previous one signs too, until previous_secret_expires_at.
  secret_sealed              bytea NOT NULL,
  previous_secret_sealed     bytea,
  previous_secret_expires_at timestamptz,
  -- The feed's cursor after which the next batch starts (a new endpoint's: the feed's end then);
  -- null: from the oldest change the feed keeps.
  cursor                     text,
  state                      text NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'parked', 'revoked')),
  -- The failures of the batch now being tried: since when, how many, the last one in words.
  failing_since              timestamptz,
  failed_tries               integer NOT NULL DEFAULT 0,
  last_error                 text,
  next_try_at                timestamptz NOT NULL DEFAULT now(),
  last_delivered_at          timestamptz,
  created_at                 timestamptz NOT NULL DEFAULT now(),
  -- When it entered its state (parked or revoked).
  state_changed_at           timestamptz
);
CREATE INDEX webhook_endpoints_project_idx ON webhook_endpoints (project_id);
-- What the poll reads each time: the active endpoints due for a try.
CREATE INDEX webhook_endpoints_due_idx ON webhook_endpoints (next_try_at) WHERE state = 'active';
