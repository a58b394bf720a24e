import type { IntakeRecord } from "@cm/domain";
import type { RedisConnection } from "./redis-nodes";

// The intake log (docs/intake-log.md): a Redis stream per project, each entry one request as a
// door received it, kept within a count and an age. Written best effort by the gateways and
// `ctl import`, read by GET /api/v2/intake-log, cleared of a user by the erasure that reaches them.

/** Where the log is, and what it keeps (INTAKE_LOG_*). */
export interface IntakeLogAt {
  redis: RedisConnection;
  prefix: string;
  /** Entries a project keeps, about; 0: the log is off. */
  maxEntries: number;
  maxAgeMs: number;
}

/**
 * The name of a project's stream. A hash tag like the queues' (names.ts), so that on a Redis
 * Cluster the project's log is in one slot, whatever else is kept of it later.
 */
export const intakeLogKey = (prefix: string, projectId: number): string => `${prefix}:{intake-log:${projectId}}`;

/** An entry as read: its stream id and what it holds. */
export interface StoredIntakeRecord {
  streamId: string;
  record: IntakeRecord;
}

/**
 * Appends ARGV[4..] to the stream KEYS[1], each an entry of one field, the stream capped at
 * about ARGV[1] entries (Redis trims whole nodes of it, so a few more may stay); then trims the
 * entries older than the id ARGV[2], and lets the stream expire ARGV[3] ms after this write: one
 * command for many records, not one each.
 */
const APPEND = `
for i = 4, #ARGV do
  redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', 'r', ARGV[i])
end
redis.call('XTRIM', KEYS[1], 'MINID', '~', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return #ARGV - 3
`;

/** Records one script appends at most: Redis serves nothing else while it runs (a few ms). */
const APPENDED_AT_ONCE = 500;

/**
 * Appends the projects' records, each project's in scripts of its key alone (as a Redis Cluster
 * requires), all sent at once: the stream capped at about `maxEntries`, its entries older than
 * `maxAgeMs` trimmed, and the whole stream gone `maxAgeMs` after its last write.
 */
export async function appendIntakeRecords(log: IntakeLogAt, records: Map<number, IntakeRecord[]>): Promise<void> {
  const oldest = Date.now() - log.maxAgeMs;
  const appends = [...records].flatMap(([projectId, of]) =>
    Array.from({ length: Math.ceil(of.length / APPENDED_AT_ONCE) }, (_, chunk) =>
      log.redis.eval(
        APPEND,
        1,
        intakeLogKey(log.prefix, projectId),
        log.maxEntries,
        oldest,
        log.maxAgeMs,
        ...of.slice(chunk * APPENDED_AT_ONCE, (chunk + 1) * APPENDED_AT_ONCE).map((record) => JSON.stringify(record)),
      ),
    ),
  );
  await Promise.all(appends);
}

/** The one field of an entry, as APPEND writes it: the record as JSON. */
const FIELD = "r";

const storedOf = ([streamId, fields]: [string, string[]]): StoredIntakeRecord => ({
  streamId,
  record: JSON.parse(fields[fields.indexOf(FIELD) + 1] as string) as IntakeRecord,
});

/** Up to `count` entries of the project's log after the entry `after` (from the first when null), oldest first. */
export async function readIntakeRecords(
  log: Pick<IntakeLogAt, "redis" | "prefix">,
  projectId: number,
  after: string | null,
  count: number,
): Promise<StoredIntakeRecord[]> {
  const entries = await log.redis.xrange(
    intakeLogKey(log.prefix, projectId),
    after === null ? "-" : `(${after}`,
    "+",
    "COUNT",
    count,
  );
  return entries.map(storedOf);
}

/** Entries an erasure reads of a log at a time. */
const ERASE_CHUNK = 1_000;

/**
 * Removes the project's entries `erased` picks: the whole stream read a chunk at a time (it holds
 * about INTAKE_LOG_MAX_ENTRIES), each chunk's picks deleted before the next is read.
 */
export async function removeIntakeRecords(
  log: Pick<IntakeLogAt, "redis" | "prefix">,
  projectId: number,
  erased: (record: IntakeRecord) => boolean,
): Promise<number> {
  const key = intakeLogKey(log.prefix, projectId);
  let removed = 0;
  for (let after: string | null = null; ;) {
    const chunk = await readIntakeRecords(log, projectId, after, ERASE_CHUNK);
    const picked = chunk.filter(({ record }) => erased(record)).map(({ streamId }) => streamId);
    if (picked.length > 0) removed += await log.redis.xdel(key, ...picked);
    if (chunk.length < ERASE_CHUNK) return removed;
    after = (chunk[chunk.length - 1] as StoredIntakeRecord).streamId;
  }
}
