import type { IntakeLogSettings } from "@cm/config";
import { intakeBody, intakeUserId, operationKind, type IntakeRecord, type QueuedOperation } from "@cm/domain";
import { appendIntakeRecords, type RedisConnection } from "@cm/queue";
import type { Converted } from "../import-records";

const operationOf = (queued: QueuedOperation | undefined): { operation: string; userId: string | null } => {
  if (queued?.queue === "profile-operations") {
    return { operation: operationKind(queued.operation), userId: queued.operation.id };
  }
  if (queued?.queue === "events") return { operation: "track", userId: queued.event.userId };
  return { operation: "import", userId: null };
};

/**
 * The import's door of the intake log (docs/intake-log.md): an entry per record, accepted or
 * refused with its reason, written with each batch the import queues. Best effort as the
 * gateways' entries are: a failed write loses its entries and stops nothing.
 */
export function importIntakeLog(
  redis: RedisConnection,
  prefix: string,
  settings: IntakeLogSettings,
  projectId: number,
) {
  const log = { redis, prefix, maxEntries: settings.maxEntries, maxAgeMs: settings.maxAgeS * 1000 };
  let records: IntakeRecord[] = [];
  return {
    /** A record read: its text as read (a line, a CSV row), and what it became. */
    note(text: string, input: unknown, converted: Converted): void {
      if (settings.maxEntries === 0) return;
      const body = intakeBody(text, settings.bodyBytes);
      const fields = converted.ok
        ? { ...operationOf(converted.operations[0]), outcome: "accepted" as const, status: 200, reason: null }
        : {
            operation: "import",
            userId: intakeUserId(input),
            outcome: "refused" as const,
            status: 400,
            reason: converted.reason,
          };
      records.push({ at: Date.now(), door: "import", ...fields, ...body });
    },
    /** Writes the entries noted since the last write. */
    async write(): Promise<void> {
      if (records.length === 0) return;
      const written = records;
      records = [];
      await appendIntakeRecords(log, new Map([[projectId, written]])).catch(() => undefined);
    },
  };
}
