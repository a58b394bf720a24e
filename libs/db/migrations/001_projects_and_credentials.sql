-- Projects are tenants; every other row belongs to exactly one.
CREATE TABLE projects (
  id         serial PRIMARY KEY,
  name       text NOT NULL CHECK (length(name) BETWEEN 1 AND 255),
  created_at timestamptz NOT NULL DEFAULT now()
);

-- Identify auth tokens and API keys. Only a SHA-256 of the secret part is kept; the token
-- itself carries the row id, so a lookup is by primary key and the hash is compared in
-- constant time by the application.
CREATE TABLE credentials (
  id          bigserial PRIMARY KEY,
  project_id  integer NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  kind        text NOT NULL CHECK (kind IN ('auth_token', 'api_key')),
  secret_hash bytea NOT NULL CHECK (length(secret_hash) = 32),
  permissions text[] NOT NULL DEFAULT '{}'
              CHECK (permissions <@ ARRAY['campaign:read', 'campaign:write', 'profile:read']),
  created_at  timestamptz NOT NULL DEFAULT now(),
  revoked_at  timestamptz
);
CREATE INDEX credentials_project_idx ON credentials (project_id);
