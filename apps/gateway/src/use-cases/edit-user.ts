import { toEditOperation, type EditUserBody, type IdentifyReply } from "@cm/domain";
import { queueOperation, type QueueDeps, type ReceivedRequest } from "./queue-operation";

/** api.md "Edit a user": sets or clears data keys of a profile; never creates one. */
export function editUser(
  deps: QueueDeps,
  projectId: number,
  body: EditUserBody,
  request: ReceivedRequest,
): Promise<IdentifyReply> {
  return queueOperation(deps, toEditOperation(projectId, body, request.receivedAt), request);
}
