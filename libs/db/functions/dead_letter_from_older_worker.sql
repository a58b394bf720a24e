-- Dead letters written by workers of a release before migration 016, which run beside this
-- release's during a rolling update (docs/reliability.md, "Adjacent releases"); the trigger that
-- calls it is migration 019's, which says why. It fills in what such a worker leaves out as 016
-- did for the letters kept before it (the queue from the operation's fields, the kind unknown,
-- the hash of the text), and, as this release's ON CONFLICT DO NOTHING, keeps one letter per
-- operation (test/compat/adjacent-releases.test.ts). Dropped with its trigger, by a migration,
-- once no release before 016 can run.
CREATE OR REPLACE FUNCTION dead_letter_from_older_worker() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.queue := coalesce(NEW.queue,
    CASE WHEN NEW.event LIKE '%"eventId":%' AND NEW.event LIKE '%"userId":%' THEN 'events' ELSE 'identify' END);
  NEW.error_kind := coalesce(NEW.error_kind, 'unknown');
  NEW.operation_id := coalesce(NEW.operation_id, encode(sha256(convert_to(NEW.event, 'UTF8')), 'hex'));
  IF EXISTS (SELECT 1 FROM identify_dead_letters WHERE operation_id = NEW.operation_id) THEN
    RETURN NULL;
  END IF;
  RETURN NEW;
END
$$;
