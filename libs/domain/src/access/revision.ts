/** Dated API revisions, oldest first. A request names a date; the newest revision on or before it applies. */
export const REVISIONS = [{ date: "2023-01-01", version: "2.0.0" }] as const;

export type Revision = (typeof REVISIONS)[number];

export const LATEST_REVISION = REVISIONS[REVISIONS.length - 1] as Revision;

export type RevisionResult = { ok: true; revision: Revision } | { ok: false; message: string };

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

function isCalendarDate(text: string): boolean {
  const match = DATE.exec(text);
  if (match === null) return false;
  const date = new Date(`${text}T00:00:00Z`);
  return !Number.isNaN(date.getTime()) && date.toISOString().startsWith(text);
}

export function resolveRevision(header: string | undefined): RevisionResult {
  if (header === undefined) return { ok: true, revision: LATEST_REVISION };
  if (!isCalendarDate(header)) {
    return { ok: false, message: "revision header must be a date in the format YYYY-MM-DD" };
  }
  const applicable = REVISIONS.filter((revision) => revision.date <= header);
  const revision = applicable[applicable.length - 1];
  if (revision === undefined) {
    return { ok: false, message: `revision header names a date before the first revision (${REVISIONS[0].date})` };
  }
  return { ok: true, revision };
}
