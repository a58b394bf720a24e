import { setTimeout as sleep } from "node:timers/promises";
import {
  inBatchOrder,
  MAX_REASON_LENGTH,
  parseBatchOperation,
  problemText,
  type BatchReply,
  type IdentifyReply,
  type QueuedOperation,
} from "@cm/domain";
import type { Intake, Observability } from "../deps";
import { IdempotencyKeyInFlight, IdempotencyKeyReused } from "./errors";
import { ACCEPTED, operationContext, queueOperation, type QueueDeps, type ReceivedRequest } from "./queue-operation";

export type BatchDeps = Intake & Pick<Observability, "logger">;

/** A batch request whose credential is accepted. */
export interface ReceivedBatch extends ReceivedRequest {
  projectId: number;
  /** The body's text, and how it was read: a retry with the same Idempotency-Key must send the same, read alike. */
  rawBody: string;
  readAs: string;
  idempotencyKey?: string;
}

/**
 * Resolves once the clock is past `t`, so that a request received after that is stamped later
 * than `t`; or after `atMostMs`, whatever the clock says, should it be set back meanwhile.
 */
async function clockPast(t: number, atMostMs: number): Promise<void> {
  const giveUp = performance.now() + atMostMs;
  while (Date.now() <= t && performance.now() < giveUp) {
    await sleep(Math.min(t + 1 - Date.now(), giveUp - performance.now()));
  }
}

/**
 * A batch's accepted operations stamped in their order (inBatchOrder) and queued in the
 * micro-batches of their kind; settles once every queue write has. A failed one fails the whole
 * request (5xx), once the others have settled, so that a retry never races them. Success also
 * waits for the clock to pass the batch's last stamp, so that what the client sends after the
 * answer comes after. `share`: each operation's share of the request body.
 */
export async function queueInBatchOrder(
  deps: QueueDeps,
  accepted: QueuedOperation[],
  receivedAt: number,
  share: number,
): Promise<void> {
  const ordered = inBatchOrder(accepted, receivedAt);
  const written = await Promise.allSettled(
    ordered.operations.map((operation) => queueOperation(deps, operation, share)),
  );
  const failed = written.find((write) => write.status === "rejected");
  if (failed !== undefined) throw failed.reason;
  await clockPast(ordered.lastStamp, ordered.lastStamp + 1 - receivedAt);
}

/** Each operation read by the reader of its single call, the valid ones queued in batch order, each refused one answered with its reason. */
async function queueBatch(deps: BatchDeps, request: ReceivedBatch, operations: unknown[]): Promise<BatchReply> {
  // Operations carry no Idempotency-Key of their own: the batch's names the batch.
  const { projectId, receivedAt } = request;
  const parsed = operations.map((operation) =>
    parseBatchOperation(operation, operationContext(deps, { projectId, receivedAt })),
  );
  const accepted = parsed.flatMap((result) => (result.ok ? [result.value] : []));
  await queueInBatchOrder(deps, accepted, receivedAt, Math.ceil(request.bytes / operations.length));
  const results = parsed.map((result): IdentifyReply =>
    result.ok ? ACCEPTED : { status: 400, message: problemText(result.problems).slice(0, MAX_REASON_LENGTH) },
  );
  return { ...ACCEPTED, results };
}

/**
 * docs/bulk.md: a batch, answered once every accepted operation is in Redis. With an
 * Idempotency-Key, a retry of an answered batch gets the same answer and queues nothing.
 */
export async function acceptBatch(deps: BatchDeps, request: ReceivedBatch, operations: unknown[]): Promise<BatchReply> {
  if (request.idempotencyKey === undefined) return queueBatch(deps, request, operations);
  const claim = await deps.idempotentReplies.claim(
    request.projectId,
    request.idempotencyKey,
    request.rawBody,
    request.readAs,
  );
  if (claim.state === "answered") return claim.reply;
  if (claim.state === "in-flight") throw new IdempotencyKeyInFlight();
  if (claim.state === "other-body") throw new IdempotencyKeyReused();
  // Whatever was queued stands even when its answer cannot be kept: a retry then queues it again.
  const keep = (reply: BatchReply | null) =>
    claim.settle(reply).catch((error: unknown) => {
      const err = error instanceof Error ? error.message : String(error);
      deps.logger.warn({ err }, "batch answer not kept for its Idempotency-Key");
    });
  let reply: BatchReply;
  try {
    reply = await queueBatch(deps, request, operations);
  } catch (error) {
    await keep(null);
    throw error;
  }
  await keep(reply);
  return reply;
}
