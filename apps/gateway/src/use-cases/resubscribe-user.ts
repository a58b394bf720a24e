import { toSubscriptionOperation, type IdentifyReply, type UserRefBody } from "@cm/domain";
import { queueOperation, type QueueDeps, type ReceivedRequest } from "./queue-operation";

/** api.md "Unsubscribe and resubscribe": lifts the global opt-out. */
export function resubscribeUser(
  deps: QueueDeps,
  projectId: number,
  body: UserRefBody,
  request: ReceivedRequest,
): Promise<IdentifyReply> {
  return queueOperation(deps, toSubscriptionOperation(projectId, body, request.receivedAt, false), request);
}
