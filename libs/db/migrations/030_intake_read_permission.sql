-- The intake log's read (GET /api/v2/intake-log, docs/intake-log.md) needs a permission of its
-- own (intake:read), which a key may hold, beside those of migration 028.
ALTER TABLE credentials DROP CONSTRAINT credentials_permissions_check;
ALTER TABLE credentials ADD CONSTRAINT credentials_permissions_check
  CHECK (permissions <@ ARRAY['campaign:read', 'campaign:write', 'profile:read', 'changes:read',
                              'keys:read', 'keys:write', 'webhooks:read', 'webhooks:write',
                              'intake:read']);
