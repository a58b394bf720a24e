-- Dead letters written by workers of a release before migration 016, which run beside this
-- release's during a rolling update (docs/reliability.md, "Adjacent releases"). Such a worker
-- names no queue, error kind or operation id, which 016 made NOT NULL: its insert failed, and the
-- job holding the refused operation was tried again and again instead of keeping it as a letter
-- (test/compat/adjacent-releases.test.ts). This fills in what it leaves out as 016 did for the
-- letters kept before it (the queue from the operation's fields, the kind unknown, the hash of
-- the text), and, as this release's ON CONFLICT DO NOTHING, keeps one letter per operation
-- without an error that worker would retry on. This release's workers name all three, so the
-- trigger never fires for them. Drop it once no release before 016 can run (the release after next).
CREATE FUNCTION dead_letter_from_older_worker() RETURNS trigger LANGUAGE plpgsql AS $$
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

CREATE TRIGGER identify_dead_letters_from_older_workers
  BEFORE INSERT ON identify_dead_letters
  FOR EACH ROW WHEN (NEW.queue IS NULL OR NEW.error_kind IS NULL OR NEW.operation_id IS NULL)
  EXECUTE FUNCTION dead_letter_from_older_worker();
