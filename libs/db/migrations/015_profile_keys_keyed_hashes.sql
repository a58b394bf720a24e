-- Profiles are keyed by a keyed hash of the user's id instead of "i:<id>" (libs/domain
-- storedProfileKey): an erasure keeps the key, its tombstone and its links, and for a user known
-- by email alone the id is the email, which an erasure must not keep (docs/profiles.md "Delete").
-- The id itself stays in external_id only while the row holds something not erased.
--
-- Each project gets its own secret, made here: 244 random bits from two version-4 UUIDs
-- (gen_random_uuid draws from the operating system's strong random source). It never changes:
-- every stored key depends on it.
ALTER TABLE projects
  ADD COLUMN profile_key_secret bytea NOT NULL
  DEFAULT decode(replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex');

-- HMAC-SHA256 (RFC 2104) with Postgres's sha256: the secret, zero-padded to the 64-byte block,
-- XORed with the inner (0x36) or outer (0x5c) pad, worked out once per project below.
CREATE FUNCTION profile_key_pad(secret bytea, pad integer) RETURNS bytea
LANGUAGE sql IMMUTABLE AS $$
  SELECT string_agg(set_byte('\x00'::bytea, 0, (CASE WHEN i < length(secret) THEN get_byte(secret, i) ELSE 0 END) # pad),
                    ''::bytea ORDER BY i)
    FROM generate_series(0, 63) AS i
$$;

CREATE FUNCTION profile_key_of(inner_pad bytea, outer_pad bytea, old_key text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
  SELECT 'h:' || translate(rtrim(encode(substr(sha256(outer_pad || sha256(inner_pad || convert_to(substr(old_key, 3), 'UTF8'))),
                                               1, 16), 'base64'), '='), '+/', '-_')
$$;

CREATE TEMPORARY TABLE profile_key_pads ON COMMIT DROP AS
  SELECT id AS project_id, profile_key_pad(profile_key_secret, 54) AS inner_pad,
         profile_key_pad(profile_key_secret, 92) AS outer_pad
    FROM projects;

-- The id a read shows is the external_id of the row its latest reidentify names: a link's new
-- id that no operation reached yet gets a row holding only that.
INSERT INTO profiles (project_id, key, external_id)
SELECT DISTINCT l.project_id, l.to_key, substr(l.to_key, 3)
  FROM profile_links AS l
 WHERE NOT EXISTS (SELECT 1 FROM profiles AS p WHERE p.project_id = l.project_id AND p.key = l.to_key);

-- Moved row by row rather than updated: Citus distributes these tables by the key, and cannot
-- update a distribution column. A row holding nothing its erasure left keeps no id.
INSERT INTO profiles (project_id, key, external_id, created_t, last_created_t, deleted_t, email, phone_number, data,
                      channels, topic_choices, topic_defaults, tags, unsubscribed, newest_t, newest_t_at,
                      write_oldest_t, updated_at)
SELECT p.project_id, profile_key_of(k.inner_pad, k.outer_pad, p.key),
       CASE WHEN p.deleted_t IS NULL
              OR lww_row_newest_t(p.created_t, p.last_created_t, p.deleted_t, p.email, p.phone_number, p.unsubscribed,
                                  p.data, p.channels, p.topic_choices, p.tags) > p.deleted_t
            THEN substr(p.key, 3) END,
       p.created_t, p.last_created_t, p.deleted_t, p.email, p.phone_number, p.data, p.channels, p.topic_choices,
       p.topic_defaults, p.tags, p.unsubscribed, p.newest_t, p.newest_t_at, p.write_oldest_t, p.updated_at
  FROM profiles AS p JOIN profile_key_pads AS k USING (project_id)
 WHERE p.key LIKE 'i:%';
DELETE FROM profiles WHERE key LIKE 'i:%';

INSERT INTO profile_links (project_id, from_key, to_key, t)
SELECT l.project_id, profile_key_of(k.inner_pad, k.outer_pad, l.from_key),
       profile_key_of(k.inner_pad, k.outer_pad, l.to_key), l.t
  FROM profile_links AS l JOIN profile_key_pads AS k USING (project_id)
 WHERE l.from_key LIKE 'i:%';
DELETE FROM profile_links WHERE from_key LIKE 'i:%';

INSERT INTO profile_erasures (project_id, key, t)
SELECT e.project_id, profile_key_of(k.inner_pad, k.outer_pad, e.key), e.t
  FROM profile_erasures AS e JOIN profile_key_pads AS k USING (project_id)
 WHERE e.key LIKE 'i:%';
DELETE FROM profile_erasures WHERE key LIKE 'i:%';

INSERT INTO events (project_id, user_key, id, name, name_key, data, source, created_at, received_at)
SELECT e.project_id, profile_key_of(k.inner_pad, k.outer_pad, e.user_key), e.id, e.name, e.name_key, e.data, e.source,
       e.created_at, e.received_at
  FROM events AS e JOIN profile_key_pads AS k USING (project_id)
 WHERE e.user_key LIKE 'i:%';
DELETE FROM events WHERE user_key LIKE 'i:%';

UPDATE identify_dead_letters AS d
   SET profile_key = profile_key_of(k.inner_pad, k.outer_pad, d.profile_key)
  FROM profile_key_pads AS k
 WHERE k.project_id = d.project_id AND d.profile_key LIKE 'i:%';

-- A fan-out under way walks the project's keys in order from its last one: it starts again
-- (writing a default twice changes nothing).
UPDATE topic_fanouts SET after_key = NULL WHERE finished_at IS NULL;

DROP FUNCTION profile_key_of(bytea, bytea, text);
DROP FUNCTION profile_key_pad(bytea, integer);
