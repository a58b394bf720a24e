-- The API manages a project's keys and webhook endpoints (docs/api.md, "API keys", "Webhooks").

-- Their permissions, which a key may hold.
ALTER TABLE credentials DROP CONSTRAINT credentials_permissions_check;
ALTER TABLE credentials ADD CONSTRAINT credentials_permissions_check
  CHECK (permissions <@ ARRAY['campaign:read', 'campaign:write', 'profile:read', 'changes:read',
                              'keys:read', 'keys:write', 'webhooks:read', 'webhooks:write']);

-- When the try that failed with last_error ended (cleared with it once a batch is delivered): the
-- webhook list shows the last failure's time beside its words.
ALTER TABLE webhook_endpoints ADD COLUMN last_failed_at timestamptz;
