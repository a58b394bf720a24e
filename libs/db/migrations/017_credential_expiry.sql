-- A rotated credential keeps working until expires_at, so that integrations can switch to the
-- new one without losing a request (ctl key rotate, docs/operations.md); null: until revoked.
-- A nullable column without a default rewrites no row.
ALTER TABLE credentials ADD COLUMN expires_at timestamptz;
