import { intakeBody, intakeUserId, type BatchReply, type IntakeDoor, type SpecReply } from "@cm/domain";
import type { IntakeLogging } from "../deps";
import { toApiError } from "../errors/http-error";
import type { IntakeEntry } from "./writer";

// What each door of the intake leaves in the intake log (docs/intake-log.md): a request's entry,
// or one per operation of a batch, made from what the request read, once its answer is known.

/** What a request read, as far as it got: filled in by the users API's reading (routes/users-api.ts). */
export interface IntakeSeen {
  /** Known once its credential is: a request of no project is in no log. */
  projectId?: number;
  receivedAt: number;
  /** The credential, once accepted: no part of an entry's body. */
  token?: string;
  /** The body's text, once read. */
  text?: string;
  /** The body parsed, once it could be. */
  body?: unknown;
}

/** Where a door's requests go in the log: `accepted` and `refused` called with what the request read. */
export interface IntakeDoorLog<Reply> {
  accepted(seen: IntakeSeen, reply: Reply): void;
  refused(seen: IntakeSeen, error: unknown): void;
}

/** An entry's answer: accepted, or refused with a status and a reason. */
type Answer =
  { outcome: "accepted"; status: 200; reason: null } | { outcome: "refused"; status: number; reason: string };

const ACCEPTED: Answer = { outcome: "accepted", status: 200, reason: null };

/** The project's identify token, as a body may hold it (`auth_token`, `writeKey`), is shown as this. */
const REDACTED = "[redacted]";

/** How the entries of a door are made: the user the body names, its text, and the answer. */
type MakeEntry = (operation: string, answer: Answer, userId: string | null, text: string) => IntakeEntry;

/**
 * Made when the entries are written, the maker holds what it needs of the request and no more:
 * a request's parsed body, held on past its answer, cost the intake more than its entry did.
 */
function entryMaker(deps: IntakeLogging, door: IntakeDoor, { receivedAt, token }: IntakeSeen): MakeEntry {
  return (operation, answer, userId, text) => {
    // What an accepted delete names is being erased: its entry keeps neither, and the entries
    // before it in the same write go (docs/intake-log.md, "Erasure").
    if (operation === "delete" && answer.outcome === "accepted") {
      const record = { at: receivedAt, door, operation, ...answer, userId: null, body: "", bodyTruncated: false };
      return userId === null ? { record } : { record, erases: userId };
    }
    const shown = token === undefined || token === "" ? text : text.split(token).join(REDACTED);
    return {
      record: {
        at: receivedAt,
        door,
        operation,
        ...answer,
        userId,
        ...intakeBody(shown, deps.intakeLogBodyBytes),
      },
    };
  };
}

/** A door's log, whose accepted requests make the entries `accepted` says. */
function doorLog<Reply>(
  deps: IntakeLogging,
  door: IntakeDoor,
  operation: string,
  accepted: (seen: IntakeSeen, reply: Reply, make: MakeEntry) => (() => IntakeEntry)[],
): IntakeDoorLog<Reply> {
  return {
    accepted(seen, reply) {
      if (seen.projectId === undefined || !deps.intakeLogWriter.enabled) return;
      deps.intakeLogWriter.record(seen.projectId, accepted(seen, reply, entryMaker(deps, door, seen)));
    },
    refused(seen, error) {
      if (seen.projectId === undefined || !deps.intakeLogWriter.enabled) return;
      const answered = toApiError(error);
      const answer: Answer = {
        outcome: "refused",
        status: answered.status,
        reason: answered.options.detail ?? answered.message,
      };
      const [make, userId, text] = [entryMaker(deps, door, seen), intakeUserId(seen.body), seen.text ?? ""];
      deps.intakeLogWriter.record(seen.projectId, [() => make(operation, answer, userId, text)]);
    },
  };
}

/** A single operation of the users API (its `operationType`), or a single /v1 message (its type): one entry. */
export function singleDoorLog<Reply>(deps: IntakeLogging, door: IntakeDoor, operation: string): IntakeDoorLog<Reply> {
  return doorLog<Reply>(deps, door, operation, (seen, _reply, make) => {
    const [userId, text] = [intakeUserId(seen.body), seen.text ?? ""];
    return [() => make(operation, ACCEPTED, userId, text)];
  });
}

/** A batch's items as read: `{batch: [...]}`, whether sent as JSON or NDJSON. */
const batchItems = (body: unknown): unknown[] => {
  const batch = (body as { batch?: unknown } | null)?.batch;
  return Array.isArray(batch) ? batch : [];
};

const typeOf = (item: unknown) => {
  const type = (item as { type?: unknown } | null)?.type;
  return typeof type === "string" && type !== "" ? type.slice(0, 64) : "batch";
};

/**
 * The items of a batch that get an entry, accepted and refused each: an entry costs the intake
 * more than the operation it shows (bench/intake-log.mjs: batches of 1,000 with an entry each
 * went at 43% of the log off), and the first ones show what an integration sends.
 */
export const BATCH_ITEMS_LOGGED = 50;

/**
 * An entry per item of a batch, each answered as `answerOf` says, its body the item's JSON: the
 * first BATCH_ITEMS_LOGGED accepted and the first BATCH_ITEMS_LOGGED refused, in batch order, and
 * every accepted delete, whose entry erases what came before it in the same write.
 */
function itemEntries(seen: IntakeSeen, make: MakeEntry, answerOf: (index: number) => Answer) {
  const kept = { accepted: 0, refused: 0 };
  return batchItems(seen.body).flatMap((item, index) => {
    const answer = answerOf(index);
    const type = typeOf(item);
    if (kept[answer.outcome] >= BATCH_ITEMS_LOGGED && !(type === "delete" && answer.outcome === "accepted")) return [];
    kept[answer.outcome] += 1;
    return [() => make(type, answer, intakeUserId(item), JSON.stringify(item) ?? "")];
  });
}

/** POST /batch: an entry per operation, as `results` answers it. */
export function batchDoorLog(deps: IntakeLogging): IntakeDoorLog<BatchReply> {
  return doorLog<BatchReply>(deps, "batch", "batch", (seen, reply, make) =>
    itemEntries(seen, make, (index) => {
      const result = reply.results[index];
      return result === undefined || result.status === 200
        ? ACCEPTED
        : { outcome: "refused", status: result.status, reason: result.message };
    }),
  );
}

/** POST /v1/batch: an entry per message, refused as `refused` lists it. */
export function specBatchDoorLog(deps: IntakeLogging): IntakeDoorLog<SpecReply> {
  return doorLog<SpecReply>(deps, "v1", "batch", (seen, reply, make) => {
    const refused = new Map((reply.refused ?? []).map(({ index, reason }) => [index, reason]));
    return itemEntries(seen, make, (index) => {
      const reason = refused.get(index);
      return reason === undefined ? ACCEPTED : { outcome: "refused", status: 400, reason };
    });
  });
}
