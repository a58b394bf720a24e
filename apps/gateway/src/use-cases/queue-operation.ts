import { randomUUID } from "node:crypto";
import type { IdentifyReply, OperationContext, QueuedOperation } from "@cm/domain";
import type { Intake } from "../deps";

/** What the use cases of Vero's users API need: the batchers that queue their operations, one per job kind. */
export type QueueDeps = Pick<Intake, "profileOperationBatcher" | "eventBatcher">;

/** When the request arrived (the operation's stamp) and the size of its body. */
export interface ReceivedRequest {
  receivedAt: number;
  bytes: number;
}

export const ACCEPTED: IdentifyReply = { status: 200, message: "Success." };

/** What the gateway knows of a request besides its body, for reading the body into an operation. */
export function operationContext(
  deps: Pick<Intake, "eventDedupWindowMs">,
  request: { projectId: number; receivedAt: number; idempotencyKey?: string },
): OperationContext {
  return {
    projectId: request.projectId,
    receivedAt: request.receivedAt,
    eventId: randomUUID(),
    dedupWindowMs: deps.eventDedupWindowMs,
    ...(request.idempotencyKey === undefined ? {} : { idempotencyKey: request.idempotencyKey }),
  };
}

/**
 * The operation goes into the next micro-batch of its kind; settles once that batch is in Redis.
 * `bytes`: its share of the request body, which bounds the batch's size.
 */
export function queueOperation(deps: QueueDeps, operation: QueuedOperation, bytes: number): Promise<void> {
  if (operation.queue === "profile-operations") return deps.profileOperationBatcher.enqueue(operation.operation, bytes);
  if (operation.queue === "events") return deps.eventBatcher.enqueue(operation.event, bytes);
  return Promise.resolve();
}

/** One operation of Vero's users API: a 200 means it is in Redis and will be applied. */
export async function acceptOperation(
  deps: QueueDeps,
  operation: QueuedOperation,
  request: ReceivedRequest,
): Promise<IdentifyReply> {
  await queueOperation(deps, operation, request.bytes);
  return ACCEPTED;
}
