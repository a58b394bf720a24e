-- A profile's changes are stored as what the write did to its row (docs/changes.md, "Capture"):
-- one row of `changes` a profile row written, of type 'profile.written', holding the row before
-- (`before`, null for a new row) and after (`after`) the write, its values still stamped; the
-- feed's changes (profile.created, tags.changed, unsubscribed…) are worked out from the two when
-- read (libs/domain profileWriteChanges). Working them out in the writing transaction cost each
-- identify about twice as much (bench/README.md, "Change feed"). The rows stored before, one
-- a change, are read as they are.
--
-- A composite type, not the table's own row type (a column of which would forbid changing the
-- table), nor jsonb (building it cost the write more than the rest of the capture).
CREATE TYPE profile_image AS (
  external_id    text,
  created_t      bigint,
  last_created_t bigint,
  deleted_t      bigint,
  email          jsonb,
  phone_number   jsonb,
  unsubscribed   jsonb,
  data           jsonb,
  channels       jsonb,
  tags           jsonb,
  topic_choices  jsonb,
  topic_defaults jsonb
);

ALTER TABLE changes ADD COLUMN before profile_image, ADD COLUMN after profile_image;

-- The capture's helpers of the changes worked out in the write (libs/db/functions/change_feed.sql).
DROP FUNCTION IF EXISTS change_map_diff(text);
DROP FUNCTION IF EXISTS change_map_entries(text);
DROP FUNCTION IF EXISTS change_register_entry(text);
DROP FUNCTION IF EXISTS change_visible(jsonb, bigint);
