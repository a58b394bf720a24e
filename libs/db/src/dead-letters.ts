import { unstorableText } from "@cm/domain";
import type { Db } from "./connect";
import { errorKind } from "./errors";

/** The operation as queued, or, when even JSON.stringify fails on it (nesting past the stack), why. */
function deadLetterText(operation: unknown): string {
  try {
    return JSON.stringify(operation);
  } catch (error) {
    return JSON.stringify({ unwritable: error instanceof Error ? error.message : String(error) });
  }
}

/**
 * The stored key of the profile the operation names (the workers key what they apply as stored,
 * libs/domain withStoredKeys), so that its erasure finds the letter; null when it names none
 * that could be stored, as a dead letter's operation may not.
 */
function profileKeyOf(operation: unknown): string | null {
  const key = (operation as { key?: unknown } | null)?.key;
  return typeof key === "string" && unstorableText(key) === null ? key : null;
}

/** The queues whose operations a dead letter may hold, and a replay puts back. */
export type DeadLetterQueue = "identify" | "events";

/**
 * Keeps an operation a worker could not apply because of its input (docs/reliability.md), until
 * an operator replays or discards it. The same operation dead-lettered again (its job applied
 * twice) is no second letter: letters are unique by a hash of the operation's text.
 */
export async function recordDeadLetter(
  sql: Db,
  letter: { projectId: number | null; jobId: string | null; queue: DeadLetterQueue; event: unknown; error: unknown },
): Promise<void> {
  const text = deadLetterText(letter.event);
  const message = letter.error instanceof Error ? letter.error.message : String(letter.error);
  await sql`
    INSERT INTO identify_dead_letters (project_id, job_id, queue, event, error, error_kind, profile_key, operation_id)
    VALUES (${letter.projectId}, ${letter.jobId}, ${letter.queue}, ${text}, ${message}, ${errorKind(letter.error)},
            ${profileKeyOf(letter.event)}, encode(sha256(convert_to(${text}, 'UTF8')), 'hex'))
    ON CONFLICT (operation_id) DO NOTHING`;
}

/** Part of an erasure: the dead letters of the erased profiles' operations go, whatever their stamp. */
export async function eraseDeadLetters(sql: Db, projectId: number, keys: readonly string[]): Promise<void> {
  await sql`
    DELETE FROM identify_dead_letters WHERE project_id = ${projectId} AND profile_key = ANY(${keys as string[]}::text[])`;
}

/** A dead letter as a data-subject export shows it. */
export interface ProfileDeadLetter {
  queue: DeadLetterQueue;
  /** The operation as it was queued. */
  operation: unknown;
  error: string;
  created_at: Date;
}

/** The dead letters of operations on these profiles' keys, oldest first. */
export async function deadLettersOfProfiles(
  sql: Db,
  projectId: number,
  keys: readonly string[],
): Promise<ProfileDeadLetter[]> {
  const rows = await sql<(Omit<ProfileDeadLetter, "operation"> & { event: string })[]>`
    SELECT queue, event, error, created_at FROM identify_dead_letters
     WHERE project_id = ${projectId} AND profile_key = ANY(${keys as string[]}::text[])
     ORDER BY id`;
  return rows.map(({ event, ...letter }) => ({ ...letter, operation: JSON.parse(event) as unknown }));
}

/** Which dead letters a replay or a discard takes: every one when nothing is given. */
export interface DeadLetterFilter {
  projectId?: number;
  queue?: DeadLetterQueue;
  /** Recorded at or after `from`, before `to`. */
  from?: Date;
  to?: Date;
  /** A Postgres error code (22P02, 23514, ...) or RefusedInput, as recorded. */
  errorKind?: string;
}

export interface DeadLetter {
  id: number;
  queue: DeadLetterQueue;
  /** The operation as it was queued, as JSON text. */
  event: string;
}

/** The next `limit` dead letters the filter takes, after the one of id `afterId`, oldest first. */
export async function findDeadLetters(
  sql: Db,
  filter: DeadLetterFilter,
  afterId: number,
  limit: number,
): Promise<DeadLetter[]> {
  return sql<DeadLetter[]>`
    SELECT id::integer AS id, queue, event
      FROM identify_dead_letters
     WHERE id > ${afterId}
       AND (${filter.projectId ?? null}::integer IS NULL OR project_id = ${filter.projectId ?? null})
       AND (${filter.queue ?? null}::text IS NULL OR queue = ${filter.queue ?? null})
       AND (${filter.from ?? null}::timestamptz IS NULL OR created_at >= ${filter.from ?? null})
       AND (${filter.to ?? null}::timestamptz IS NULL OR created_at < ${filter.to ?? null})
       AND (${filter.errorKind ?? null}::text IS NULL OR error_kind = ${filter.errorKind ?? null})
     ORDER BY id
     LIMIT ${limit}`;
}

export async function removeDeadLetters(sql: Db, ids: readonly number[]): Promise<number> {
  const rows = await sql`DELETE FROM identify_dead_letters WHERE id = ANY(${ids as number[]}::bigint[]) RETURNING 1`;
  return rows.length;
}
