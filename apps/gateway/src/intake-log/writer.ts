import type { IntakeRecord } from "@cm/domain";
import { appendIntakeRecords, type IntakeLogAt } from "@cm/queue";

/** An entry to write; an accepted delete's names the user whose entries before it go (`erases`). */
export interface IntakeEntry {
  record: IntakeRecord;
  erases?: string;
}

/**
 * The records of `entries` to write, in order: those of a user a later delete among them erases
 * left out, since the worker's erasure may have read the log before they reach it.
 */
function written(entries: IntakeEntry[]): IntakeRecord[] {
  const erased = new Set<string>();
  const kept: IntakeRecord[] = [];
  for (let i = entries.length - 1; i >= 0; i -= 1) {
    const { record, erases } = entries[i] as IntakeEntry;
    if (record.userId !== null && erased.has(record.userId)) continue;
    if (erases !== undefined) erased.add(erases);
    kept.push(record);
  }
  return kept.reverse();
}

/** What the writer tells of its failures: never a record's content. */
export interface IntakeLogFailures {
  /** A write of the log failed (Redis away, full): its records are lost. */
  writeFailed(error: unknown): void;
  /** Records dropped because too many waited to be written. */
  dropped(count: number): void;
}

/** How often the records waiting are written, and how many may wait. */
export interface IntakeLogWriting {
  flushMs: number;
  maxPending: number;
}

export const INTAKE_LOG_WRITING: IntakeLogWriting = { flushMs: 50, maxPending: 20_000 };

/**
 * The intake log's writes from one gateway (docs/intake-log.md), off the requests' path: a
 * request leaves what its records are made of, and every `flushMs` the records waiting are made
 * (bodies cut, JSON written) and written together, a round trip per project. The log is best
 * effort: a request never waits for it, and a write that fails loses its records, as do records
 * past `maxPending` waiting (Redis slow). Each project written wakes its waiting readers.
 */
export class IntakeLogWriter {
  private pending = new Map<number, (() => IntakeEntry)[]>();
  private count = 0;
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly log: IntakeLogAt,
    private readonly written: (projectId: number) => void,
    private readonly failures: IntakeLogFailures,
    private readonly writing: IntakeLogWriting = INTAKE_LOG_WRITING,
  ) {}

  /** Whether the log keeps anything (INTAKE_LOG_MAX_ENTRIES above 0). */
  get enabled(): boolean {
    return this.log.maxEntries > 0;
  }

  /** Entries of the project, made when written: `make` runs later, off the request's path. */
  record(projectId: number, make: readonly (() => IntakeEntry)[]): void {
    if (!this.enabled || make.length === 0) return;
    if (this.count + make.length > this.writing.maxPending) {
      this.failures.dropped(make.length);
      return;
    }
    const of = this.pending.get(projectId);
    if (of === undefined) this.pending.set(projectId, [...make]);
    else for (const one of make) of.push(one);
    this.count += make.length;
    this.timer ??= setTimeout(() => {
      this.flushing = this.flushing.then(() => this.flush());
    }, this.writing.flushMs);
  }

  /** Writes what waits now (shutdown, tests); resolves once every write begun has settled. */
  async drain(): Promise<void> {
    if (this.timer !== null) clearTimeout(this.timer);
    this.flushing = this.flushing.then(() => this.flush());
    await this.flushing;
  }

  private async flush(): Promise<void> {
    this.timer = null;
    const taken = this.pending;
    this.pending = new Map();
    this.count = 0;
    try {
      const records = new Map<number, IntakeRecord[]>();
      for (const [projectId, makers] of taken) {
        records.set(projectId, written(makers.map((make) => make())));
      }
      if (records.size === 0) return;
      await appendIntakeRecords(this.log, records);
      for (const projectId of records.keys()) this.written(projectId);
    } catch (error) {
      this.failures.writeFailed(error);
    }
  }
}
