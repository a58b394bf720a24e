import { randomUUID } from "node:crypto";
import {
  MAX_REASON_LENGTH,
  parseSpecMessage,
  problemText,
  type QueuedOperation,
  type SpecBatch,
  type SpecMessageContext,
  type SpecRefusal,
  type SpecReply,
} from "@cm/domain";
import type { Intake } from "../deps";
import { queueInBatchOrder } from "./accept-batch";
import type { QueueDeps, ReceivedRequest } from "./queue-operation";

// The tracking spec's /v1 API (docs/tracking-spec.md): messages of Segment's and RudderStack's
// SDKs, read by the one mapping of libs/domain into the operations of Vero's users API, and
// queued as a batch of those is (accept-batch.ts).

export type SpecDeps = QueueDeps & Pick<Intake, "eventDedupWindowMs">;

/** A request whose credential is accepted. */
export interface ReceivedMessages extends ReceivedRequest {
  projectId: number;
}

export const SUCCESS: SpecReply = { success: true };

/** What a message of `request` is read with: a live source, its `sentAt` the batch's unless it gives its own. */
export function specMessageContext(
  deps: Pick<Intake, "eventDedupWindowMs">,
  request: ReceivedMessages,
  batchSentAt?: number,
): SpecMessageContext {
  return {
    projectId: request.projectId,
    receivedAt: request.receivedAt,
    source: batchSentAt === undefined ? { kind: "live" } : { kind: "live", batchSentAt },
    dedupWindowMs: deps.eventDedupWindowMs,
    newEventId: randomUUID,
  };
}

/** A message's operations queued as a batch's are (in order, stamped after what came before): a 200 means they are in Redis. */
export async function acceptSpecOperations(
  deps: QueueDeps,
  operations: QueuedOperation[],
  request: ReceivedRequest,
): Promise<SpecReply> {
  await queueInBatchOrder(
    deps,
    operations,
    request.receivedAt,
    Math.ceil(request.bytes / Math.max(operations.length, 1)),
  );
  return SUCCESS;
}

/**
 * A refused message's messageId, echoed so the sender can tell which it was: no longer than any
 * id the API keeps (255), or a batch of a few kilobytes gzipped is answered with megabytes.
 */
const messageIdOf = (message: unknown) => {
  const id = (message as { messageId?: unknown } | null)?.messageId;
  return typeof id === "string" ? { messageId: id.slice(0, 255) } : {};
};

/**
 * A batch: every message read on its own, the accepted ones queued together, answered once all
 * are in Redis. A message that cannot be read refuses itself only, and is listed with its reason:
 * the SDKs drop a batch answered 400 whole.
 */
export async function acceptSpecBatch(deps: SpecDeps, request: ReceivedMessages, batch: SpecBatch): Promise<SpecReply> {
  const context = specMessageContext(deps, request, batch.sentAt);
  const parsed = batch.messages.map((message) => parseSpecMessage(message, context));
  const accepted = parsed.flatMap((result) => (result.ok ? result.value : []));
  const share = Math.ceil(request.bytes / Math.max(batch.messages.length, 1));
  await queueInBatchOrder(deps, accepted, request.receivedAt, share);
  const refused = parsed.flatMap((result, index): SpecRefusal[] =>
    result.ok
      ? []
      : [
          {
            index,
            ...messageIdOf(batch.messages[index]),
            reason: problemText(result.problems).slice(0, MAX_REASON_LENGTH),
          },
        ],
  );
  return refused.length === 0 ? SUCCESS : { ...SUCCESS, refused };
}
