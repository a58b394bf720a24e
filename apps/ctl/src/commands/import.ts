import { createHash, hash } from "node:crypto";
import { createReadStream, type ReadStream } from "node:fs";
import { open, readFile, rename, stat, truncate, writeFile, appendFile } from "node:fs/promises";
import { createInterface } from "node:readline";
import { Readable } from "node:stream";
import type { IntakeLogSettings } from "@cm/config";
import { allTopicsOfProject, profileKeySecrets, type Sql } from "@cm/db";
import type { ProfileOperation, TrackedEvent } from "@cm/domain";
import {
  addEventsToShards,
  addProfileOperationsToShards,
  everyIntakeQueue,
  IMPORT_JOB_PRIORITY,
  intakeQueues,
  producerConnection,
  type QueuesAt,
} from "@cm/queue";
import { SingleBar } from "cli-progress";
import { parse as parseCsv } from "csv-parse";
import { CliError } from "../cli-error";
import {
  checkCsvHeader,
  DEFAULT_CSV_MAPPING,
  csvRowOperations,
  exportLineOperations,
  segmentLineOperations,
  type Converted,
  type CsvMapping,
  type ImportContext,
  type RecordPosition,
} from "../import-records";
import { importIntakeLog } from "./import-intake-log";

/** Operations per job (a gateway micro-batch's size): the state file moves on after each. */
const BATCH_OPERATIONS = 500;
const STATE_VERSION = 1;
/** An import's jobs are taken after every live operation queued meanwhile, of any project. */
const yieldToLiveTraffic = { priority: IMPORT_JOB_PRIORITY };

export const IMPORT_FORMATS = ["ndjson", "csv", "vero", "segment", "customerio"] as const;
export type ImportFormat = (typeof IMPORT_FORMATS)[number];

export interface ImportOptions {
  projectId: number;
  /** A file, or null (or "-") for stdin. */
  input: string | null;
  format: ImportFormat | null;
  /** Column flags of a CSV, over the preset's. */
  columns: Partial<CsvMapping>;
  state: string | null;
  rejects: string | null;
  /** Starts from the first line, whatever the state file says. */
  restart: boolean;
}

export interface ImportSummary {
  imported: number;
  rejected: number;
  /** Records a previous run had queued already (resumed). */
  skipped: number;
  profile_operations: number;
  events: number;
  rejects: string;
}

export const IMPORT_HELP = `usage: ctl import --project ID [FILE|-] [flags]   (docs/bulk.md "Import")
  Profiles and events from NDJSON or CSV, FILE or stdin ("-" or none), queued as the API queues them,
  behind live traffic (a live operation of any project is applied before the import's backlog).
  --format ndjson|csv|vero|segment|customerio
                        ndjson: the lines of ctl export (default, or csv for a .csv FILE);
                        segment: Segment's (or RudderStack's) spec messages, one a line,
                          read as the /v1 routes read them (docs/tracking-spec.md);
                        vero, customerio: CSV with that platform's columns (docs/bulk.md)
  --state FILE          what a rerun continues from (default FILE.import-state.json; required for stdin)
  --rejects FILE        one line per refused record (default FILE.rejects.ndjson)
  --restart             start from the first line, whatever the state file says
  CSV columns:
  --id-column C         the user's id (default id)
  --email-column C      the email, and the id of a user without one (default email)
  --phone-column C      the phone number (default none)
  --stamp-column C      the time of each row (ISO 8601 or Unix seconds); without it a row loses
                        to every live update, and a later row of the file wins over an earlier one
  --event-name-column C the CSV holds events: their name (rows are profiles without it)
  --event-id-column C   the event's own id (a UUID, or any text made into one): one event whichever
                        file holds it, deduplicated as the API's extras.message_id
  --data-columns C1,C2  only these columns go into data (default: every column no flag names)
  --ignore-columns C1,C2  columns left out of data
  --tags-column C       the profile's tags, added: a JSON list, or tags separated by ; or ,
  --unsubscribed-column C  true/false, 1/0 or yes/no: true unsubscribes; false sends nothing
  The summary {imported, rejected, skipped, ...} goes to stderr; a progress bar too, on a terminal.`;

/** The command line's values as options. */
export function importOptions(
  projectId: number,
  files: string[],
  values: Record<string, string | boolean | undefined>,
): ImportOptions {
  if (files.length > 1) throw new CliError("import takes one FILE (or - for stdin)", 2);
  const format = values.format;
  if (format !== undefined && !IMPORT_FORMATS.includes(format as ImportFormat)) {
    throw new CliError(`--format must be one of ${IMPORT_FORMATS.join(", ")}`, 2);
  }
  const text = (name: string) => (typeof values[name] === "string" ? (values[name] as string) : undefined);
  const list = (name: string) =>
    text(name)
      ?.split(",")
      .map((column) => column.trim())
      .filter((column) => column !== "");
  const columns: Partial<CsvMapping> = {};
  const flags = {
    idColumn: text("id-column"),
    emailColumn: text("email-column"),
    phoneColumn: text("phone-column"),
    stampColumn: text("stamp-column"),
    eventNameColumn: text("event-name-column"),
    eventIdColumn: text("event-id-column"),
    dataColumns: list("data-columns"),
    ignoreColumns: list("ignore-columns"),
    tagsColumn: text("tags-column"),
    unsubscribedColumn: text("unsubscribed-column"),
  };
  for (const [name, value] of Object.entries(flags)) {
    if (value !== undefined) Object.assign(columns, { [name]: value });
  }
  const profileFlags = [flags.tagsColumn, flags.unsubscribedColumn].filter((column) => column !== undefined);
  if (flags.eventNameColumn !== undefined && profileFlags.length > 0) {
    throw new CliError("--tags-column and --unsubscribed-column are for profile rows, not with --event-name-column", 2);
  }
  return {
    projectId,
    input: files[0] ?? null,
    format: (format as ImportFormat | undefined) ?? null,
    columns,
    state: text("state") ?? null,
    rejects: text("rejects") ?? null,
    restart: values.restart === true,
  };
}

/** What names the input, so that a state file is never applied to another one. */
interface SourceIdentity {
  /** Null for stdin. */
  size: number | null;
  mtimeMs: number | null;
  /** SHA-256 of its first KiB. */
  head: string;
}

/** The bytes of an input its identity's `head` hashes. */
const HEAD_BYTES = 1024;

interface ImportState {
  version: number;
  project: number;
  format: ImportFormat;
  source: SourceIdentity;
  startedAt: number;
  /** Every record up to this ordinal is queued (its jobs in Redis) or in the rejects file. */
  done: number;
  /** The rejects file's size once `done` was written: a resume cuts what came after. */
  rejectsBytes: number;
  /**
   * SHA-256 of the records up to `done` as read: a rerun goes past them only if its input's are
   * the same, since two inputs of one first KiB (stdin, a file rewritten) may differ after it.
   * Absent from the state files of earlier versions.
   */
  digest?: string;
  finished: boolean;
}

/**
 * The presets of `--format` for CSV exports, their columns read where a file has them. Vero's
 * profile CSV is `id`, `email`, one column per property and `tags`, separated by semicolons,
 * where the tag `unsubscribed` unsubscribes (its help pages); Customer.io's people export holds
 * `id`, `email`, its own `cio_id` (left out of data) and its reserved attribute `unsubscribed`.
 * docs/bulk.md says what is and is not known of each.
 */
const PRESETS: Partial<Record<ImportFormat, Partial<CsvMapping>>> = {
  vero: { tagsColumn: "tags", unsubscribeTag: "unsubscribed" },
  customerio: { ignoreColumns: ["cio_id"], unsubscribedColumn: "unsubscribed" },
};

const isCsv = (format: ImportFormat) => format === "csv" || format === "vero" || format === "customerio";

function formatOf(options: ImportOptions): ImportFormat {
  if (options.format !== null) return options.format;
  return options.input !== null && /\.csv$/i.test(options.input) ? "csv" : "ndjson";
}

const headDigest = (bytes: Buffer) => hash("sha256", bytes.subarray(0, HEAD_BYTES), "hex");

/** An input to import: what identifies it, and its bytes. */
interface Source {
  identity: SourceIdentity;
  stream: Readable;
}

async function fileSource(input: string): Promise<Source> {
  let info;
  try {
    info = await stat(input);
  } catch {
    throw new CliError(`cannot read ${input}`);
  }
  const file = await open(input, "r");
  try {
    const { buffer, bytesRead } = await file.read(Buffer.alloc(HEAD_BYTES), 0, HEAD_BYTES, 0);
    const identity = { size: info.size, mtimeMs: info.mtimeMs, head: headDigest(buffer.subarray(0, bytesRead)) };
    return { identity, stream: createReadStream(input) };
  } finally {
    await file.close();
  }
}

/** stdin, named by its first KiB, read before the rest since a pipe is read once: the stream gives it back first. */
async function stdinSource(): Promise<Source> {
  const chunks = process.stdin[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  const first: Buffer[] = [];
  let size = 0;
  while (size < HEAD_BYTES) {
    const next = await chunks.next();
    if (next.done === true) break;
    first.push(next.value);
    size += next.value.length;
  }
  async function* all(): AsyncGenerator<Buffer> {
    yield* first;
    for (let next = await chunks.next(); next.done !== true; next = await chunks.next()) yield next.value;
  }
  return {
    identity: { size: null, mtimeMs: null, head: headDigest(Buffer.concat(first)) },
    stream: Readable.from(all(), { objectMode: false }),
  };
}

async function readState(path: string): Promise<ImportState | null> {
  let text;
  try {
    text = await readFile(path, "utf8");
  } catch {
    return null;
  }
  try {
    return JSON.parse(text) as ImportState;
  } catch {
    throw new CliError(`the state file ${path} is not JSON: remove it, or give --restart, to import from the start`);
  }
}

/** Written whole, then renamed over the old one: a crash leaves one or the other, never half. */
async function writeState(path: string, state: ImportState): Promise<void> {
  await writeFile(`${path}.tmp`, JSON.stringify(state));
  await rename(`${path}.tmp`, path);
}

/** The state to continue from, or a new one; refuses a state file of another source or project. */
async function startingState(
  path: string,
  rejects: string,
  fresh: ImportState,
  restart: boolean,
): Promise<ImportState> {
  const kept = restart ? null : await readState(path);
  if (kept === null) {
    await writeFile(rejects, "");
    return fresh;
  }
  const same =
    kept.version === STATE_VERSION &&
    kept.project === fresh.project &&
    kept.format === fresh.format &&
    JSON.stringify(kept.source) === JSON.stringify(fresh.source);
  if (!same) {
    throw new CliError(
      `the state file ${path} is of another import (project, format or source differ): ` +
        "remove it, give another --state, or give --restart, to import from the start",
    );
  }
  try {
    await truncate(rejects, kept.rejectsBytes);
  } catch {
    await writeFile(rejects, "");
    kept.rejectsBytes = 0;
  }
  return kept;
}

/** One record of the input: its ordinal (what resuming counts), the line it ends on, its text. */
interface InputRecord {
  ordinal: number;
  line: number;
  /** As read (the header's with the first row of a CSV), for the state's digest. */
  text: string;
  input: unknown;
  convert(at: RecordPosition): Converted;
}

async function* ndjsonRecords(
  stream: Readable,
  convertLine: (line: unknown, at: RecordPosition) => Converted,
): AsyncGenerator<InputRecord> {
  let ordinal = 0;
  for await (const text of createInterface({ input: stream, crlfDelay: Infinity })) {
    ordinal += 1;
    if (text.trim() === "") continue;
    let value: unknown;
    let readable = true;
    try {
      value = JSON.parse(text);
    } catch {
      readable = false;
    }
    yield {
      ordinal,
      line: ordinal,
      text,
      input: readable ? value : text,
      convert: (at) => (readable ? convertLine(value, at) : { ok: false, reason: "the line is not valid JSON" }),
    };
  }
}

/** `required` names the columns the header must have: those of the flags, not of a preset. */
async function* csvRecords(
  stream: Readable,
  mapping: CsvMapping,
  required: CsvMapping,
  context: () => ImportContext,
): AsyncGenerator<InputRecord> {
  const parser = stream.pipe(
    parseCsv({ info: true, raw: true, relax_column_count: true, bom: true, skip_empty_lines: true }),
  );
  let header: string[] | null = null;
  let headerText = "";
  let ordinal = 0;
  try {
    for await (const { record, info, raw } of parser as AsyncIterable<{
      record: string[];
      info: { lines: number };
      raw: string;
    }>) {
      if (header === null) {
        header = record;
        headerText = raw;
        const problem = checkCsvHeader(header, required);
        if (problem !== null) throw new CliError(problem);
        continue;
      }
      ordinal += 1;
      const columns = header;
      const row = Object.fromEntries(columns.map((column, index) => [column, record[index] ?? ""]));
      yield {
        ordinal,
        line: info.lines,
        text: ordinal === 1 ? headerText + raw : raw,
        input: row,
        convert: (at) =>
          record.length !== columns.length
            ? { ok: false, reason: `the row has ${record.length} fields where the header has ${columns.length}` }
            : csvRowOperations(row, mapping, at, context()),
      };
    }
  } catch (error) {
    if (error instanceof CliError) throw error;
    // A CSV the parser cannot read past (an unclosed quote): what came before is queued.
    throw new CliError(`the CSV cannot be read: ${(error as Error).message}`);
  }
}

/**
 * Each record in turn. Bad input that stops the reading (a CSV the parser cannot read past)
 * first queues what was read before it, so that nothing accepted is lost and a rerun starts there.
 */
async function eachRecord(
  records: AsyncIterable<InputRecord>,
  act: (record: InputRecord) => Promise<void>,
  flush: () => Promise<void>,
): Promise<void> {
  try {
    for await (const record of records) await act(record);
  } catch (error) {
    if (error instanceof CliError) await flush();
    throw error;
  }
}

function progressBar(size: number | null): SingleBar {
  return new SingleBar({
    stream: process.stderr,
    format:
      size === null
        ? "import | {rows} rows | {rate} rows/s"
        : "import |{bar}| {percentage}% | {rows} rows | {rate} rows/s | ETA {eta_formatted}",
  });
}

/**
 * `ctl import --project ID [FILE]` (docs/bulk.md "Import"): profiles and events from NDJSON (the
 * lines of `ctl export`, or Segment's messages) or CSV, from FILE or stdin, queued as the API
 * queues them (the same jobs on the same queues, behind live traffic), a batch at a time, the
 * state file moved on after each, so that a rerun of the same command continues where the last
 * one stopped.
 */
export async function importCommand(
  sql: Sql,
  queuesAt: QueuesAt,
  options: ImportOptions,
  intakeLog: IntakeLogSettings,
): Promise<ImportSummary> {
  const { projectId } = options;
  const input = options.input === "-" ? null : options.input;
  const format = formatOf(options);
  if (input === null && options.state === null) {
    throw new CliError("--state FILE is required when importing from stdin (it is what a rerun continues from)", 2);
  }
  const statePath = options.state ?? `${input}.import-state.json`;
  const rejectsPath = options.rejects ?? `${input ?? statePath.replace(/\.json$/, "")}.rejects.ndjson`;
  const mapping: CsvMapping = { ...DEFAULT_CSV_MAPPING, ...PRESETS[format], ...options.columns };
  if (!isCsv(format) && Object.keys(options.columns).length > 0) {
    throw new CliError("column flags are for CSV input (--format csv, vero or customerio)", 2);
  }
  if (!(await profileKeySecrets(sql, [projectId])).has(projectId)) {
    throw new CliError(`project ${projectId} does not exist`);
  }
  const topics = await allTopicsOfProject(sql, projectId);
  const topicIds = new Map(topics.map((topic) => [topic.name.toLowerCase(), topic.id]));
  const source = input === null ? await stdinSource() : await fileSource(input);
  try {
    return await importSource(source, queuesAt, options, {
      intakeLog,
      projectId,
      format,
      mapping,
      statePath,
      rejectsPath,
      topicIds,
    });
  } finally {
    source.stream.destroy();
    // The stream of stdin reads it through an iterator that destroying the stream leaves waiting.
    if (input === null) process.stdin.destroy();
  }
}

/**
 * What a rerun may skip: the records up to the state's `done`, once the digest of those it read
 * is the state's. Checked at the first record past them, or at the end of a shorter input.
 */
function skippedRecordsCheck(state: ImportState, statePath: string) {
  const digest = createHash("sha256");
  let checked = state.done === 0 || state.digest === undefined;
  const check = () => {
    if (digest.copy().digest("hex") !== state.digest) {
      throw new CliError(
        `the input is not the one the state file ${statePath} was written for (its first ${state.done} records ` +
          "differ): give --restart to import it from the start, or another --state",
      );
    }
    checked = true;
  };
  return {
    read(record: InputRecord) {
      if (!checked && record.ordinal > state.done) check();
      digest.update(record.text);
      digest.update("\n");
    },
    end() {
      if (!checked) check();
    },
    /** The digest of every record read so far. */
    value: () => digest.copy().digest("hex"),
  };
}

/** What importCommand made of its options and the project. */
interface ImportPlan {
  /** What the intake log keeps of the import's records. */
  intakeLog: IntakeLogSettings;
  projectId: number;
  format: ImportFormat;
  mapping: CsvMapping;
  statePath: string;
  rejectsPath: string;
  topicIds: ReadonlyMap<string, number>;
}

async function importSource(
  source: Source,
  queuesAt: QueuesAt,
  options: ImportOptions,
  plan: ImportPlan,
): Promise<ImportSummary> {
  const { projectId, format, mapping, statePath, rejectsPath, topicIds } = plan;
  const { identity, stream } = source;
  const fresh: ImportState = {
    version: STATE_VERSION,
    project: projectId,
    format,
    source: identity,
    startedAt: Date.now(),
    done: 0,
    rejectsBytes: 0,
    finished: false,
  };
  const state = await startingState(statePath, rejectsPath, fresh, options.restart);
  const skippable = skippedRecordsCheck(state, statePath);
  const context = (): ImportContext => ({
    projectId,
    topicIds,
    now: Date.now(),
    startedAt: state.startedAt,
    sourceKey: identity.head,
  });
  const convertLine = format === "segment" ? segmentLineOperations : exportLineOperations;
  const records = isCsv(format)
    ? csvRecords(stream, mapping, { ...DEFAULT_CSV_MAPPING, ...options.columns }, context)
    : ndjsonRecords(stream, (line, at) => convertLine(line, at, context()));

  const connection = producerConnection(queuesAt.redis);
  const queues = intakeQueues(connection, queuesAt.prefix, queuesAt.shards);
  const logged = importIntakeLog(connection, queuesAt.prefix, plan.intakeLog, projectId);
  const summary: ImportSummary = {
    imported: 0,
    rejected: 0,
    skipped: 0,
    profile_operations: 0,
    events: 0,
    rejects: rejectsPath,
  };
  const pending = { profile: [] as ProfileOperation[], events: [] as TrackedEvent[], rejects: [] as string[], last: 0 };
  const bar = progressBar(identity.size);
  const started = Date.now();
  let rows = 0;
  let stopping = false;
  const stop = () => (stopping = true);
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);

  /** Queues what is pending, then writes its rejects, then moves the state on: nothing is counted before it is in Redis. */
  const flush = async () => {
    if (pending.last <= state.done) return;
    await Promise.all([
      pending.profile.length > 0
        ? addProfileOperationsToShards(queues.profileOperationsQueues, pending.profile, yieldToLiveTraffic)
        : null,
      pending.events.length > 0 ? addEventsToShards(queues.eventsQueues, pending.events, yieldToLiveTraffic) : null,
    ]);
    await logged.write();
    if (pending.rejects.length > 0) await appendFile(rejectsPath, pending.rejects.join(""));
    summary.profile_operations += pending.profile.length;
    summary.events += pending.events.length;
    state.rejectsBytes = (await stat(rejectsPath)).size;
    state.done = pending.last;
    state.digest = skippable.value();
    await writeState(statePath, state);
    Object.assign(pending, { profile: [], events: [], rejects: [] });
  };

  try {
    bar.start(identity.size ?? 0, 0, { rows: 0, rate: 0 });
    await eachRecord(
      records,
      async (record) => {
        skippable.read(record);
        if (record.ordinal <= state.done) {
          summary.skipped += 1;
          return;
        }
        const converted = record.convert({ ordinal: record.ordinal });
        logged.note(record.text, record.input, converted);
        if (converted.ok) {
          summary.imported += 1;
          for (const queued of converted.operations) {
            if (queued.queue === "profile-operations") pending.profile.push(queued.operation);
            else if (queued.queue === "events") pending.events.push(queued.event);
          }
        } else {
          summary.rejected += 1;
          pending.rejects.push(
            `${JSON.stringify({ line: record.line, reason: converted.reason, input: record.input })}\n`,
          );
        }
        pending.last = record.ordinal;
        rows += 1;
        if (
          pending.profile.length + pending.events.length >= BATCH_OPERATIONS ||
          pending.rejects.length >= BATCH_OPERATIONS
        ) {
          await flush();
          const read = (stream as ReadStream).bytesRead ?? 0;
          bar.update(read, { rows, rate: Math.round((rows * 1000) / Math.max(1, Date.now() - started)) });
          if (stopping) throw new CliError(`stopped at line ${record.line}: run the same command again to continue`);
        }
      },
      flush,
    );
    skippable.end();
    await flush();
    state.finished = true;
    await writeState(statePath, state);
    bar.update(identity.size ?? 0, { rows, rate: Math.round((rows * 1000) / Math.max(1, Date.now() - started)) });
  } finally {
    bar.stop();
    process.off("SIGINT", stop);
    process.off("SIGTERM", stop);
    await Promise.all(everyIntakeQueue(queues).map((queue) => queue.close()));
    connection.disconnect();
  }
  return summary;
}
