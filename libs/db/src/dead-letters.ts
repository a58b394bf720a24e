import { unstorableText } from "@cm/domain";
import type { Db } from "./connect";

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

export async function recordDeadLetter(
  sql: Db,
  letter: { projectId: number | null; jobId: string | null; event: unknown; error: string },
): Promise<void> {
  await sql`
    INSERT INTO identify_dead_letters (project_id, job_id, event, error, profile_key)
    VALUES (${letter.projectId}, ${letter.jobId}, ${deadLetterText(letter.event)}, ${letter.error},
            ${profileKeyOf(letter.event)})`;
}

/** Part of an erasure: the dead letters of the erased profiles' operations go, whatever their stamp. */
export async function eraseDeadLetters(sql: Db, projectId: number, keys: readonly string[]): Promise<void> {
  await sql`
    DELETE FROM identify_dead_letters WHERE project_id = ${projectId} AND profile_key = ANY(${keys as string[]}::text[])`;
}
