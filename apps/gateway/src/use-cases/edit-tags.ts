import { toTagsOperation, type EditTagsBody, type IdentifyReply } from "@cm/domain";
import { queueOperation, type QueueDeps, type ReceivedRequest } from "./queue-operation";

/** api.md "Edit a user's tags": adds and removes tags. */
export function editTags(
  deps: QueueDeps,
  projectId: number,
  body: EditTagsBody,
  request: ReceivedRequest,
): Promise<IdentifyReply> {
  return queueOperation(deps, toTagsOperation(projectId, body, request.receivedAt), request);
}
