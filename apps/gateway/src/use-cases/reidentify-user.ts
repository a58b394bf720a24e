import { toReidentifyOperation, type IdentifyReply, type ReidentifyBody } from "@cm/domain";
import { queueOperation, type QueueDeps, type ReceivedRequest } from "./queue-operation";

/** api.md "Reidentify a user": from now on `id` and `new_id` name one profile, read under `new_id`. */
export function reidentifyUser(
  deps: QueueDeps,
  projectId: number,
  body: ReidentifyBody,
  request: ReceivedRequest,
): Promise<IdentifyReply> {
  return queueOperation(deps, toReidentifyOperation(projectId, body, request.receivedAt), request);
}
