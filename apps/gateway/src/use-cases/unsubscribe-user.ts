import { toSubscriptionOperation, type IdentifyReply, type UserRefBody } from "@cm/domain";
import { queueOperation, type QueueDeps, type ReceivedRequest } from "./queue-operation";

/** api.md "Unsubscribe and resubscribe": sets the global opt-out. */
export function unsubscribeUser(
  deps: QueueDeps,
  projectId: number,
  body: UserRefBody,
  request: ReceivedRequest,
): Promise<IdentifyReply> {
  return queueOperation(deps, toSubscriptionOperation(projectId, body, request.receivedAt, true), request);
}
