import type { IdentifyReply, ProfileOperation } from "@cm/domain";
import type { GatewayDeps } from "../deps";

/** What the use cases of Vero's users API need: the batcher that queues their operations. */
export type QueueDeps = Pick<GatewayDeps, "profileOperationBatcher">;

/** When the request arrived (the operation's stamp) and the size of its body. */
export interface ReceivedRequest {
  receivedAt: number;
  bytes: number;
}

export const ACCEPTED: IdentifyReply = { status: 200, message: "Success." };

/**
 * The operation goes into the next micro-batch. The answer waits for the batch to be in Redis:
 * a 200 means the operation will be applied.
 */
export async function queueOperation(
  deps: QueueDeps,
  operation: ProfileOperation,
  request: ReceivedRequest,
): Promise<IdentifyReply> {
  await deps.profileOperationBatcher.enqueue(operation, request.bytes);
  return ACCEPTED;
}
