import type { tags } from "typia";
import { compactJsonBytesAtMost, jsonObjectFields, MAX_BODY_BYTES } from "../kernel/json";
import type { Parsed } from "../kernel/problems";
import {
  OPERATION_TYPES,
  parseOperation,
  type BatchOperation,
  type OperationContext,
  type OperationType,
  type QueuedOperation,
} from "./operation-requests";

// POST /batch (docs/bulk.md): many operations of Vero's users API in one request, each read on
// its own by the reader of its single call, so that one bad item refuses itself only.

/** The most operations one batch may hold. */
export const MAX_BATCH_OPERATIONS = 1_000;
/** The largest batch body (413 past it); every other users-API body keeps MAX_BODY_BYTES. */
export const MAX_BATCH_BODY_BYTES = 5 * 1024 * 1024;

/** A JSON batch body. Not validated as a whole: each operation is read on its own (parseBatchOperation). */
export interface BatchBody {
  batch: BatchOperation[] & tags.MinItems<1> & tags.MaxItems<1000>;
}

/** A line of an NDJSON batch that is not JSON: its operation is refused, the others are read. */
export class UnreadableLine {
  constructor(readonly line: number) {}
}

/**
 * NDJSON, one operation a line, read as the JSON body `{batch: [...]}` would be; blank lines are
 * no operation. Lines past the limit are counted, not parsed: the batch is refused whole.
 */
export function batchFromLines(text: string): { batch: unknown[] } {
  const batch: unknown[] = [];
  text.split("\n").forEach((line, index) => {
    if (line.trim() === "") return;
    if (batch.length >= MAX_BATCH_OPERATIONS) batch.push(null);
    else {
      try {
        batch.push(JSON.parse(line));
      } catch {
        batch.push(new UnreadableLine(index + 1));
      }
    }
  });
  return { batch };
}

/** The operations of a batch body, or why the request as a whole is refused. */
export function batchOperations(body: unknown): Parsed<unknown[]> {
  const batch = jsonObjectFields(body)?.batch;
  if (!Array.isArray(batch)) {
    const message = "body must be a JSON object with a batch list of operations, or NDJSON with one operation a line";
    return { ok: false, problems: [{ path: "", message }] };
  }
  if (batch.length === 0 || batch.length > MAX_BATCH_OPERATIONS) {
    const message = `batch must hold 1 to ${MAX_BATCH_OPERATIONS} operations; it holds ${batch.length}`;
    return { ok: false, problems: [{ path: "batch", message }] };
  }
  return { ok: true, value: batch };
}

const isOperationType = (type: unknown): type is OperationType => OPERATION_TYPES.includes(type as OperationType);
const TYPES_TEXT = OPERATION_TYPES.map((type) => JSON.stringify(type)).join(", ");

/**
 * Whether an operation (read, so nested within bounds), written as compact JSON, is larger than
 * its single call's body may be: a batch holds each operation to its single call's limits.
 * Counted without writing it first, for nearly every operation is far below the limit.
 */
export function isOversizedOperation(item: unknown): boolean {
  return compactJsonBytesAtMost(item) > MAX_BODY_BYTES && Buffer.byteLength(JSON.stringify(item)) > MAX_BODY_BYTES;
}

const OVERSIZED = `operation is larger than ${MAX_BODY_BYTES / 1024} KiB, the most a single call's body may hold`;

/** One operation of a batch, read by the reader of its single call, or the problems that refuse it. */
export function parseBatchOperation(item: unknown, context: OperationContext): Parsed<QueuedOperation> {
  if (item instanceof UnreadableLine) {
    return { ok: false, problems: [{ path: "", message: `line ${item.line} is not valid JSON` }] };
  }
  const fields = jsonObjectFields(item);
  if (fields === null) return { ok: false, problems: [{ path: "", message: "an operation must be a JSON object" }] };
  if (!isOperationType(fields.type)) {
    const message = `type ${fields.type === undefined ? "is required and " : ""}must be one of ${TYPES_TEXT}`;
    return { ok: false, problems: [{ path: "type", message }] };
  }
  const parsed = parseOperation(fields.type, fields, context);
  return parsed.ok && isOversizedOperation(fields)
    ? { ok: false, problems: [{ path: "", message: OVERSIZED }] }
    : parsed;
}

/** The profiles an operation changes, by key: an operation of one of them is ordered with the others. */
function profilesOf(operation: QueuedOperation): string[] {
  if (operation.queue === "events") return [operation.event.key];
  if (operation.queue === "none") return [];
  const { key } = operation.operation;
  return operation.operation.op === "reidentify" ? [key, operation.operation.newKey] : [key];
}

/** Stamped at its place in the batch, unless it carries an earlier time of its own (extras.created_at). */
function stampedAt(operation: QueuedOperation, receivedAt: number, place: number): QueuedOperation {
  if (operation.queue === "profile-operations" && operation.operation.t >= receivedAt)
    return { ...operation, operation: { ...operation.operation, t: place } };
  if (operation.queue === "events" && operation.event.t >= receivedAt)
    return { ...operation, event: { ...operation.event, t: place } };
  return operation;
}

const stampOf = (operation: QueuedOperation): number | null =>
  operation.queue === "profile-operations"
    ? operation.operation.t
    : operation.queue === "events"
      ? operation.event.t
      : null;

/** A batch's operations as stamped, and the latest stamp among them: its answer waits until the clock is past it. */
export interface OrderedBatch {
  operations: QueuedOperation[];
  lastStamp: number;
}

/**
 * A batch is ordered as if its operations arrived one after another at its arrival, after every
 * request answered before it (docs/bulk.md). Stamped with the receive time, a profile's
 * operations would tie, and ties are broken by value, not by order; stamped before it, they
 * would lose to requests answered before the batch. So a profile's k-th operation (from 0) is
 * stamped receivedAt + 1 + k ms, after anything received by then, and the batch is answered
 * only once the clock is past its last stamp (lastStamp), so that any request sent after the
 * answer is stamped later. An operation touching several profiles (a reidentify: both ids)
 * comes after the operations of each. Stamps stay whole milliseconds, as every stored stamp is.
 */
export function inBatchOrder(operations: QueuedOperation[], receivedAt: number): OrderedBatch {
  const nextPlace = new Map<string, number>();
  const first = receivedAt + 1;
  const ordered = operations.map((operation) => {
    const profiles = profilesOf(operation);
    const place = Math.max(first, ...profiles.map((key) => nextPlace.get(key) ?? first));
    for (const key of profiles) nextPlace.set(key, place + 1);
    return stampedAt(operation, receivedAt, place);
  });
  return { operations: ordered, lastStamp: Math.max(receivedAt, ...ordered.map((op) => stampOf(op) ?? receivedAt)) };
}
