import { readChanges, type StoredChange } from "@cm/db";
import {
  changeCursor,
  changePositionOf,
  positionBefore,
  type Change,
  type ChangeFeedRead,
  type ChangePage,
} from "@cm/domain";
import type { Store } from "../deps";
import { ChangesTrimmed, InvalidCursor } from "../errors";

/** Where a reader waiting for a change is woken (the gateway's LISTEN connection). */
export interface ChangeWaits {
  /**
   * Resolves true at a notice of a change of the project, or after `ms`; false at once when no
   * more readers may wait (the reader is then answered what it has).
   */
  wait(projectId: number, ms: number): Promise<boolean>;
}

/**
 * How long a waiting reader goes without reading again, notice or not: a notice comes at the
 * commit of a change, which is readable once every older transaction has ended too (the read
 * horizon), and no notice follows that.
 */
const RECHECK_MS = 250;

const changeOf = (projectId: number, stored: StoredChange): Change => ({
  position: changeCursor(projectId, stored.position),
  type: stored.type,
  user_id: stored.userId,
  applied_at: stored.appliedAt.toISOString(),
  change: stored.change,
});

async function readPage(deps: Store, projectId: number, { after, limit, types }: ChangeFeedRead) {
  const from = after === null ? null : changePositionOf(projectId, after);
  if (after !== null && from === null) throw new InvalidCursor();
  const read = await readChanges(deps.sql, projectId, from, limit, types);
  if (from !== null && read.trimmedThrough !== null && positionBefore(from, read.trimmedThrough)) {
    throw new ChangesTrimmed();
  }
  const page: ChangePage = {
    changes: read.changes.map((stored) => changeOf(projectId, stored)),
    next: changeCursor(projectId, read.next),
  };
  return { page, caughtUp: read.caughtUp };
}

/**
 * docs/changes.md: the project's changes after the cursor `after` (from the first kept when
 * null), in the order they were applied, and the cursor to read on from. A cursor that is not of
 * this project's feed is refused (InvalidCursor), and one from before what retention removed
 * too (ChangesTrimmed): the reader would miss changes.
 */
export async function readChangeFeed(deps: Store, projectId: number, read: ChangeFeedRead): Promise<ChangePage> {
  return (await readPage(deps, projectId, read)).page;
}

/**
 * readChangeFeed, answered as soon as there is a change after `after`, or with none after
 * `waitMs`; a reader that `changeWaits` turns away is answered at once.
 */
export async function waitForChangeFeed(
  deps: Store & { changeWaits: ChangeWaits },
  projectId: number,
  read: ChangeFeedRead,
  waitMs: number,
): Promise<ChangePage> {
  const deadline = Date.now() + waitMs;
  let after = read.after;
  for (;;) {
    const { page, caughtUp } = await readPage(deps, projectId, { ...read, after });
    const left = deadline - Date.now();
    if (page.changes.length > 0 || !caughtUp || left <= 0) return page;
    if (!(await deps.changeWaits.wait(projectId, Math.min(left, RECHECK_MS)))) return page;
    after = page.next;
  }
}
