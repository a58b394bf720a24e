import {
  MAX_FUTURE_SKEW_MS,
  namedEventId,
  ownEventId,
  parseOperation,
  parseSpecMessage,
  parseTimestamp,
  problemText,
  TIMESTAMP_RULE,
  type OperationType,
  type QueuedOperation,
} from "@cm/domain";

// What `ctl import` (docs/bulk.md "Import") makes of one input record: the operations the users
// API would queue for it, each read by the very parser of its single call (parseOperation), or
// the reason the whole record is refused. Pure: no file, queue or database here.

/** What the command knows besides the record. */
export interface ImportContext {
  projectId: number;
  /** The project's topics by name, lower-cased (names are unique ignoring case). */
  topicIds: ReadonlyMap<string, number>;
  /** Now, for the future-skew check (ms). */
  now: number;
  /** When the import first started (kept in its state file): the time of events that carry none. */
  startedAt: number;
  /** Names the source, for the event ids of records that carry none (stable across resumes). */
  sourceKey: string;
}

/** A record's position: its ordinal (1-based, what resuming counts) stamps it when the file gives no time. */
export interface RecordPosition {
  ordinal: number;
}

export type Converted = { ok: true; operations: QueuedOperation[] } | { ok: false; reason: string };

/** How the columns of a CSV map to fields (flags or a `--format` preset). */
export interface CsvMapping {
  idColumn: string;
  emailColumn: string;
  phoneColumn: string | null;
  stampColumn: string | null;
  /** Set: the CSV holds events, one a row, of the user `idColumn` (or `emailColumn`) names. */
  eventNameColumn: string | null;
  eventIdColumn: string | null;
  /** Only these columns go into `data`; null: every column no other flag names. */
  dataColumns: string[] | null;
  /** Columns left out of `data` (a preset's bookkeeping columns). */
  ignoreColumns: string[];
  /** A profile's tags, added: a JSON list, or tags separated by `;` (Vero's CSV) or `,`. */
  tagsColumn: string | null;
  /** A profile's opt-out: true/false, 1/0, yes/no; only true queues an unsubscribe. */
  unsubscribedColumn: string | null;
  /** A tag that unsubscribes rather than tags (Vero's reserved `unsubscribed`). */
  unsubscribeTag: string | null;
}

/** The columns a CSV is read by when neither a preset nor a flag names others. */
export const DEFAULT_CSV_MAPPING: CsvMapping = {
  idColumn: "id",
  emailColumn: "email",
  phoneColumn: null,
  stampColumn: null,
  eventNameColumn: null,
  eventIdColumn: null,
  dataColumns: null,
  ignoreColumns: [],
  tagsColumn: null,
  unsubscribedColumn: null,
  unsubscribeTag: null,
};

class Refused extends Error {}

const iso = (t: number) => new Date(t).toISOString();

/** One operation of `type` from plain fields, stamped `t` (the API stamps with its receive time). */
function operation(
  type: OperationType,
  fields: object,
  t: number,
  context: ImportContext,
  eventId = "",
): QueuedOperation {
  // Import keeps Vero's content rule off: the event's id (from the file, or from its place in
  // it) makes a record imported twice one event, and two equal events the file holds stay two.
  const parsed = parseOperation(type, fields, {
    projectId: context.projectId,
    receivedAt: t,
    eventId,
    dedupWindowMs: 0,
  });
  if (!parsed.ok) throw new Refused(parsed.problems.map((problem) => problem.message).join("; "));
  return parsed.value;
}

/** A time of the file: ISO 8601 with a zone or Unix seconds, at most 5 minutes ahead. */
function fileTime(value: unknown, name: string, context: ImportContext): number {
  const t = typeof value === "string" || typeof value === "number" ? parseTimestamp(value) : null;
  if (t === null) throw new Refused(`${name} must be ${TIMESTAMP_RULE}`);
  if (t > context.now + MAX_FUTURE_SKEW_MS) throw new Refused(`${name} must not be more than 5 minutes in the future`);
  return t;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The longest extras.message_id the API takes. */
const MAX_MESSAGE_ID = 255;

/**
 * An event's id, and the extras that deduplicate it. One that carries its own id (`own`: Segment's
 * messageId, a CSV's event id, in the field `name`) is one event whichever file holds it: its id
 * is made of that id alone (a UUID kept), and it is deduplicated as the API's track with that
 * `extras.message_id` (docs/events.md), against the same event sent live too. One without is
 * named by its `place` in the source.
 */
function eventIdentity(own: string | undefined, name: string, place: string, context: ImportContext) {
  if (own === undefined) return { eventId: namedEventId(context.sourceKey, place), extras: {} };
  if (own.length > MAX_MESSAGE_ID) throw new Refused(`${name} must be at most ${MAX_MESSAGE_ID} characters`);
  return { eventId: ownEventId(own), extras: { message_id: own } };
}

function converted(convert: () => QueuedOperation[]): Converted {
  try {
    return { ok: true, operations: convert() };
  } catch (error) {
    if (error instanceof Refused) return { ok: false, reason: error.message };
    throw error;
  }
}

const fieldsOf = (line: unknown): Record<string, unknown> => {
  if (line === null || typeof line !== "object" || Array.isArray(line))
    throw new Refused("a line must be a JSON object");
  return line as Record<string, unknown>;
};

/** Topic choices by name, as the target project numbers them; an unknown name refuses the line. */
function topicChoices(topics: unknown, context: ImportContext) {
  if (topics === undefined || topics === null) return [];
  if (typeof topics !== "object" || Array.isArray(topics))
    throw new Refused("topics must be an object of name: status");
  return Object.entries(topics as Record<string, unknown>).map(([name, status]) => {
    const id = context.topicIds.get(name.toLowerCase());
    if (id === undefined) {
      throw new Refused(`topic "${name}" does not exist in project ${context.projectId}; create it (ctl topic create)`);
    }
    return { id, status };
  });
}

/**
 * A profile line of `ctl export` (ExportedProfileLine). Its `created_at` stamps its creation and
 * the reidentifies of its `previous_ids`, its `updated_at` every value; a line without them is
 * stamped by its position.
 */
function profileLineOperations(line: Record<string, unknown>, at: RecordPosition, context: ImportContext) {
  const updated = line.updated_at === undefined ? at.ordinal : fileTime(line.updated_at, "updated_at", context);
  const created =
    line.created_at === undefined ? updated : Math.min(updated, fileTime(line.created_at, "created_at", context));
  const { id } = line;
  const operations: QueuedOperation[] = [];
  const previous = line.previous_ids ?? [];
  if (!Array.isArray(previous)) throw new Refused("previous_ids must be a list of ids");
  // Each old id is a profile, then linked to `id`: its row keeps the old id, as the source's did.
  for (const old of previous) {
    operations.push(operation("identify", { id: old }, created, context));
    operations.push(operation("reidentify", { id: old, new_id: id }, created, context));
  }
  if (created < updated) operations.push(operation("identify", { id }, created, context));
  const topics = topicChoices(line.topics, context);
  operations.push(
    operation(
      "identify",
      {
        id,
        email: line.email,
        phone_number: line.phone_number,
        channels: line.channels,
        data: line.data,
        ...(topics.length > 0 ? { preferences: { topics } } : {}),
      },
      updated,
      context,
    ),
  );
  const tags = line.tags ?? [];
  if (!Array.isArray(tags)) throw new Refused("tags must be a list");
  if (tags.length > 0) operations.push(operation("tags", { id, add: tags }, updated, context));
  if (line.unsubscribed !== undefined && line.unsubscribed !== null && typeof line.unsubscribed !== "boolean") {
    throw new Refused("unsubscribed must be true or false");
  }
  // false is every profile's state until an unsubscribe, so it sends nothing: a resubscribe for
  // it was a third of an import's operations, and an export line cannot tell a profile never
  // unsubscribed apart from one resubscribed: it has no news to override the target's unsubscribe.
  if (line.unsubscribed === true) operations.push(operation("unsubscribe", { id }, updated, context));
  return operations;
}

/** An event line of `ctl export` (ExportedEventLine): its time, its id, its receive time kept. */
function eventLineOperations(line: Record<string, unknown>, at: RecordPosition, context: ImportContext) {
  const t = line.created_at === undefined ? context.startedAt : fileTime(line.created_at, "created_at", context);
  const received = line.received_at === undefined ? t : Math.max(t, fileTime(line.received_at, "received_at", context));
  const eventId =
    typeof line.id === "string" && UUID.test(line.id)
      ? line.id.toLowerCase()
      : namedEventId(context.sourceKey, `line ${at.ordinal}`);
  const body = {
    identity: { id: line.user_id },
    event_name: line.event_name,
    data: line.data,
    extras: { created_at: iso(t), ...(typeof line.source === "string" ? { source: line.source } : {}) },
  };
  return [operation("track", body, received, context, eventId)];
}

/** One line of the NDJSON `ctl export` writes: `type` "profile" or "event". */
export function exportLineOperations(line: unknown, at: RecordPosition, context: ImportContext): Converted {
  return converted(() => {
    const fields = fieldsOf(line);
    if (fields.type === "profile") return profileLineOperations(fields, at, context);
    if (fields.type === "event") return eventLineOperations(fields, at, context);
    throw new Refused('type must be "profile" or "event"');
  });
}

/**
 * One message of Segment's (or RudderStack's) spec, as their archives hold them, read as the
 * gateway's /v1 routes read it (libs/domain parseSpecMessage, docs/tracking-spec.md): their
 * `timestamp` is the time, corrected when the platform received it. A profile operation without
 * a time is stamped by its position, an event without one when the import started.
 */
export function segmentLineOperations(line: unknown, at: RecordPosition, context: ImportContext): Converted {
  const parsed = parseSpecMessage(line, {
    projectId: context.projectId,
    receivedAt: context.now,
    source: { kind: "archive", untimedProfileAt: at.ordinal, untimedEventAt: context.startedAt },
    dedupWindowMs: 0,
    newEventId: () => namedEventId(context.sourceKey, `line ${at.ordinal}`),
  });
  return parsed.ok ? { ok: true, operations: parsed.value } : { ok: false, reason: problemText(parsed.problems) };
}

/** The CSV header checked against the mapping: the columns it names must be there. */
export function checkCsvHeader(header: readonly string[], mapping: CsvMapping): string | null {
  const named = [
    mapping.stampColumn,
    mapping.eventNameColumn,
    mapping.eventIdColumn,
    mapping.phoneColumn,
    mapping.tagsColumn,
    mapping.unsubscribedColumn,
    ...(mapping.dataColumns ?? []),
  ];
  const missing = named.filter((column): column is string => column !== null && !header.includes(column));
  if (!header.includes(mapping.idColumn) && !header.includes(mapping.emailColumn)) {
    missing.unshift(`${mapping.idColumn} or ${mapping.emailColumn}`);
  }
  return missing.length === 0 ? null : `the CSV header has no column ${missing.join(", ")}`;
}

/** A cell of tags: a JSON list (kept for the tags edit to check), or tags separated by `;` or `,`. */
function tagsCell(value: string, column: string): unknown[] {
  if (!value.trimStart().startsWith("[")) {
    return value
      .split(/[;,]/)
      .map((tag) => tag.trim())
      .filter((tag) => tag !== "");
  }
  let list: unknown;
  try {
    list = JSON.parse(value);
  } catch {
    list = null;
  }
  if (!Array.isArray(list)) throw new Refused(`${column} must be a JSON list of tags, or tags separated by ; or ,`);
  return list;
}

/** An opt-out cell, as spreadsheets and exports write a boolean. */
function unsubscribedCell(value: string, column: string): boolean {
  const word = value.trim().toLowerCase();
  if (["true", "1", "yes"].includes(word)) return true;
  if (["false", "0", "no"].includes(word)) return false;
  throw new Refused(`${column} must be true, false, 1, 0, yes or no; it is ${JSON.stringify(value)}`);
}

/**
 * One CSV row (its header's names → its cells). An empty cell is a value not given. `data` is
 * every column no flag names (or `--data-columns`), as text: CSV has no types.
 */
export function csvRowOperations(
  row: Readonly<Record<string, string>>,
  mapping: CsvMapping,
  at: RecordPosition,
  context: ImportContext,
): Converted {
  return converted(() => {
    const cell = (column: string | null) => (column === null || row[column] === "" ? undefined : row[column]);
    const events = mapping.eventNameColumn !== null;
    // An event row names its user only: a preset's tags column of an event file is its data.
    const profileColumns = events ? [] : [mapping.tagsColumn, mapping.unsubscribedColumn];
    const named = new Set(
      [
        mapping.idColumn,
        mapping.emailColumn,
        mapping.phoneColumn,
        mapping.stampColumn,
        mapping.eventNameColumn,
        mapping.eventIdColumn,
        ...profileColumns,
        ...mapping.ignoreColumns,
      ].filter((column) => column !== null),
    );
    const dataColumns = mapping.dataColumns ?? Object.keys(row).filter((column) => !named.has(column));
    const data = Object.fromEntries(dataColumns.flatMap((column) => (row[column] ? [[column, row[column]]] : [])));
    const stamp = cell(mapping.stampColumn);
    const id = cell(mapping.idColumn);
    const email = cell(mapping.emailColumn);
    if (events) {
      const t = stamp === undefined ? context.startedAt : fileTime(stamp, mapping.stampColumn as string, context);
      const event = eventIdentity(
        cell(mapping.eventIdColumn),
        mapping.eventIdColumn as string,
        `row ${at.ordinal}`,
        context,
      );
      const body = {
        identity: { id, email },
        event_name: cell(mapping.eventNameColumn),
        data,
        extras: { created_at: iso(t), ...event.extras },
      };
      return [operation("track", body, t, context, event.eventId)];
    }
    const t = stamp === undefined ? at.ordinal : fileTime(stamp, mapping.stampColumn as string, context);
    const operations = [
      operation("identify", { id, email, phone_number: cell(mapping.phoneColumn), data }, t, context),
    ];
    const tagsText = cell(mapping.tagsColumn);
    const tags = tagsText === undefined ? [] : tagsCell(tagsText, mapping.tagsColumn as string);
    const unsubscribedText = cell(mapping.unsubscribedColumn);
    const unsubscribed =
      (unsubscribedText !== undefined && unsubscribedCell(unsubscribedText, mapping.unsubscribedColumn as string)) ||
      (mapping.unsubscribeTag !== null && tags.includes(mapping.unsubscribeTag));
    const added = tags.filter((tag) => tag !== mapping.unsubscribeTag);
    if (added.length > 0) operations.push(operation("tags", { id, email, add: added }, t, context));
    // As an export line's unsubscribed: false, a false cell sends nothing: it cannot tell a
    // profile never unsubscribed from one resubscribed, and must not undo the target's unsubscribe.
    if (unsubscribed) operations.push(operation("unsubscribe", { id, email }, t, context));
    return operations;
  });
}
