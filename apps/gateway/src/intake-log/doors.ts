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

/** How the entries of a door are made: what the body names and holds, and the answer. */
type MakeEntry = (operation: string, answer: Answer, body: unknown, text: string) => IntakeEntry;

function entryMaker(deps: IntakeLogging, door: IntakeDoor, seen: IntakeSeen): MakeEntry {
  return (operation, answer, body, text) => {
    const userId = intakeUserId(body);
    // What an accepted delete names is being erased: its entry keeps neither, and the entries
    // before it in the same write go (docs/intake-log.md, "Erasure").
    if (operation === "delete" && answer.outcome === "accepted") {
      const record = { at: seen.receivedAt, door, operation, ...answer, userId: null, body: "", bodyTruncated: false };
      return userId === null ? { record } : { record, erases: userId };
    }
    const shown = seen.token === undefined || seen.token === "" ? text : text.split(seen.token).join(REDACTED);
    return {
      record: {
        at: seen.receivedAt,
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
      deps.intakeLogWriter.record(seen.projectId, [
        () => {
          const answered = toApiError(error);
          const answer: Answer = {
            outcome: "refused",
            status: answered.status,
            reason: answered.options.detail ?? answered.message,
          };
          return entryMaker(deps, door, seen)(operation, answer, seen.body, seen.text ?? "");
        },
      ]);
    },
  };
}

/** A single operation of the users API (its `operationType`), or a single /v1 message (its type): one entry. */
export function singleDoorLog<Reply>(deps: IntakeLogging, door: IntakeDoor, operation: string): IntakeDoorLog<Reply> {
  return doorLog<Reply>(deps, door, operation, (seen, _reply, make) => [
    () => make(operation, ACCEPTED, seen.body, seen.text ?? ""),
  ]);
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

/** One entry per item of a batch, each answered as `answerOf` says, its body the item's JSON. */
const itemEntries = (seen: IntakeSeen, make: MakeEntry, answerOf: (index: number) => Answer) =>
  batchItems(seen.body).map(
    (item, index) => () => make(typeOf(item), answerOf(index), item, JSON.stringify(item) ?? ""),
  );

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
