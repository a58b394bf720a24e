-- Vero's SMS field: a last-writer-wins register like email (a stamped value, or null).
-- A nullable column without a default: adding it rewrites no row.
ALTER TABLE profiles ADD COLUMN phone_number jsonb;

-- One identity space: a user identified by email only is keyed by that email as its id
-- ("i:<email>"), as Vero does, so that a later identify whose id is the email reaches the same
-- profile. Until now such users were keyed "e:<email>". Each of those rows is folded into the
-- "i:" row of the same text field by field, by the same last-writer-wins rule the workers
-- apply (libs/db/src/profiles.ts), so every stamp survives and the outcome is the one the
-- updates would have given had they always been keyed this way.
WITH moved AS (
  DELETE FROM profiles WHERE key LIKE 'e:%'
  RETURNING project_id, key, created_t, email, phone_number, data, channels, topic_choices, updated_at
)
INSERT INTO profiles AS p (project_id, key, external_id, created_t, email, phone_number, data, channels, topic_choices, updated_at)
SELECT project_id, 'i:' || substr(key, 3), substr(key, 3), created_t, email, phone_number, data, channels, topic_choices, updated_at
  FROM moved
ON CONFLICT (project_id, key) DO UPDATE SET
  external_id   = coalesce(p.external_id, excluded.external_id),
  created_t     = least(p.created_t, excluded.created_t),
  email         = lww_newest(p.email, excluded.email),
  phone_number  = lww_newest(p.phone_number, excluded.phone_number),
  data          = p.data || coalesce(
                    (SELECT jsonb_object_agg(i.key, i.value) FROM jsonb_each(excluded.data) AS i
                      WHERE NOT p.data ? i.key OR lww_is_newer(i.value, p.data -> i.key)), '{}'),
  channels      = p.channels || coalesce(
                    (SELECT jsonb_object_agg(i.key, i.value) FROM jsonb_each(excluded.channels) AS i
                      WHERE NOT p.channels ? i.key OR lww_is_newer(i.value, p.channels -> i.key)), '{}'),
  topic_choices = p.topic_choices || coalesce(
                    (SELECT jsonb_object_agg(i.key, i.value) FROM jsonb_each(excluded.topic_choices) AS i
                      WHERE NOT p.topic_choices ? i.key OR lww_is_newer(i.value, p.topic_choices -> i.key)), '{}'),
  updated_at    = greatest(p.updated_at, excluded.updated_at);

