import { toDeleteOperation, type IdentifyReply, type UserRefBody } from "@cm/domain";
import { queueOperation, type QueueDeps, type ReceivedRequest } from "./queue-operation";

/** api.md "Delete a user": erases the profile for good. */
export function deleteUser(
  deps: QueueDeps,
  projectId: number,
  body: UserRefBody,
  request: ReceivedRequest,
): Promise<IdentifyReply> {
  return queueOperation(deps, toDeleteOperation(projectId, body, request.receivedAt), request);
}
