import {
  intakeCursor,
  intakeStreamIdOf,
  passesIntakeFilter,
  type IntakeLogEntry,
  type IntakeLogPage,
  type IntakeLogRead,
  type IntakeRecord,
} from "@cm/domain";
import { readIntakeRecords, type IntakeLogAt } from "@cm/queue";
import type { ChangeWaits } from "../changes/read-change-feed";
import { InvalidCursor } from "../errors";

/** Where the intake log is read: its Redis, and the age past which an entry is not shown. */
export interface IntakeLogStore {
  intakeLog: Pick<IntakeLogAt, "redis" | "prefix" | "maxAgeMs">;
}

/** Where a reader waiting for an entry is woken: by project, as the change feed's readers are. */
export type IntakeWaits = ChangeWaits;

/**
 * Entries one read goes through at most, shown or not: a filter that few entries pass costs a
 * reader a bounded read, and `next` moves past what it went through.
 */
export const INTAKE_SCANNED_MAX = 2_000;
/** Entries read from Redis at a time when a filter may leave some out. */
const FILTERED_CHUNK = 500;
/**
 * How long a waiting reader goes without reading again: a gateway wakes its own readers when
 * it writes their project's entries, and no gateway hears of another's.
 */
const RECHECK_MS = 500;

const INVALID_CURSOR = "after must be a cursor this project's intake log gave (an entry's position, or next)";

const entryOf = (projectId: number, streamId: string, record: IntakeRecord): IntakeLogEntry => ({
  position: intakeCursor(projectId, streamId),
  received_at: new Date(record.at).toISOString(),
  door: record.door,
  operation: record.operation,
  outcome: record.outcome,
  status: record.status,
  reason: record.reason,
  user_id: record.userId,
  body: record.body,
  body_truncated: record.bodyTruncated,
});

/** When the entry of a stream id was written (the ms part of its id). */
const writtenAt = (streamId: string) => Number(streamId.slice(0, streamId.indexOf("-")));

async function readPage(deps: IntakeLogStore, projectId: number, read: IntakeLogRead) {
  let last = read.after === null ? null : intakeStreamIdOf(projectId, read.after);
  if (read.after !== null && last === null) throw new InvalidCursor(INVALID_CURSOR);
  const filtered = read.door !== null || read.outcome !== null || read.userId !== null;
  // Redis trims by age approximately (whole nodes of the stream): an entry past it is not shown.
  const oldest = Date.now() - deps.intakeLog.maxAgeMs;
  const entries: IntakeLogEntry[] = [];
  let scanned = 0;
  let caughtUp = false;
  while (entries.length < read.limit && scanned < INTAKE_SCANNED_MAX) {
    const count = Math.min(filtered ? FILTERED_CHUNK : read.limit - entries.length, INTAKE_SCANNED_MAX - scanned);
    const chunk = await readIntakeRecords(deps.intakeLog, projectId, last, count);
    for (const { streamId, record } of chunk) {
      scanned += 1;
      last = streamId;
      if (writtenAt(streamId) >= oldest && passesIntakeFilter(record, read)) {
        entries.push(entryOf(projectId, streamId, record));
        if (entries.length === read.limit) break;
      }
    }
    if (chunk.length < count) {
      caughtUp = true;
      break;
    }
  }
  const page: IntakeLogPage = { entries, next: intakeCursor(projectId, last ?? "0-0") };
  return { page, caughtUp };
}

/**
 * docs/intake-log.md: the project's intake log after the cursor `after` (from the oldest entry
 * kept when null), oldest first, only the entries that pass the read's filter, and the cursor to
 * read on from. A cursor not of this project's log is refused (InvalidCursor).
 */
export async function readIntakeLog(
  deps: IntakeLogStore,
  projectId: number,
  read: IntakeLogRead,
): Promise<IntakeLogPage> {
  return (await readPage(deps, projectId, read)).page;
}

/**
 * readIntakeLog, answered as soon as there is an entry after `after` that passes the filter, or
 * with none after `waitMs`; a reader that `intakeWaits` turns away is answered at once.
 */
export async function waitForIntakeLog(
  deps: IntakeLogStore & { intakeWaits: IntakeWaits },
  projectId: number,
  read: IntakeLogRead,
  waitMs: number,
): Promise<IntakeLogPage> {
  const deadline = Date.now() + waitMs;
  let after = read.after;
  for (;;) {
    const { page, caughtUp } = await readPage(deps, projectId, { ...read, after });
    const left = deadline - Date.now();
    if (page.entries.length > 0 || !caughtUp || left <= 0) return page;
    if (!(await deps.intakeWaits.wait(projectId, Math.min(left, RECHECK_MS)))) return page;
    after = page.next;
  }
}
