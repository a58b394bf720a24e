import { isRefusedInput } from "@cm/db";

/**
 * Applies `operations` with `apply`. When the input is refused (by Postgres, or by our own code
 * before it: not an outage), the operations are split in halves until those refused stand
 * alone; they are passed to `refused` and every other one is applied. Other errors are thrown,
 * for the queue to retry the whole job.
 */
export async function applyIsolatingRefused<T>(
  operations: readonly T[],
  apply: (part: readonly T[]) => Promise<void>,
  refused: (operation: T, error: unknown) => void,
): Promise<void> {
  if (operations.length === 0) return;
  try {
    await apply(operations);
  } catch (error) {
    if (!isRefusedInput(error)) throw error;
    if (operations.length === 1) return refused(operations[0] as T, error);
    const middle = Math.ceil(operations.length / 2);
    await applyIsolatingRefused(operations.slice(0, middle), apply, refused);
    await applyIsolatingRefused(operations.slice(middle), apply, refused);
  }
}
