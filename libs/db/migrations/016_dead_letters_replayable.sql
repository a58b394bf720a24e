-- Dead letters are kept until an operator replays or discards them (ctl replay, ctl discard;
-- docs/reliability.md), so each says what it needs for that:
-- queue: the queue its operation came from and goes back to (identify or events). Letters kept
-- so far are events when their text has an event's fields (eventId and userId), identify otherwise.
-- error_kind: what refused it: a Postgres error code (22P02, 23505, ...) or RefusedInput.
-- Letters kept so far say only the message: their kind is unknown.
-- operation_id: a hash of the operation's text as queued: a job applied twice (a worker died
-- after the apply) dead-letters the same operation twice, and the second is no new letter.
ALTER TABLE identify_dead_letters
  ADD COLUMN queue text,
  ADD COLUMN error_kind text,
  ADD COLUMN operation_id text;
UPDATE identify_dead_letters
   SET queue = CASE WHEN event LIKE '%"eventId":%' AND event LIKE '%"userId":%' THEN 'events' ELSE 'identify' END,
       error_kind = 'unknown',
       operation_id = encode(sha256(convert_to(event, 'UTF8')), 'hex');
DELETE FROM identify_dead_letters AS d
 USING identify_dead_letters AS earlier
 WHERE earlier.operation_id = d.operation_id AND earlier.id < d.id;
ALTER TABLE identify_dead_letters
  ALTER COLUMN queue SET NOT NULL,
  ALTER COLUMN error_kind SET NOT NULL,
  ALTER COLUMN operation_id SET NOT NULL;
CREATE UNIQUE INDEX identify_dead_letters_operation_idx ON identify_dead_letters (operation_id);
-- Replay and discard select by project and time.
CREATE INDEX identify_dead_letters_project_time_idx ON identify_dead_letters (project_id, created_at);
