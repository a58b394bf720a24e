import { toReidentifyOperation, type IdentifyReply, type ReidentifyBody } from "@cm/domain";
import { ACCEPTED, queueOperation, type QueueDeps, type ReceivedRequest } from "./queue-operation";

/** api.md "Reidentify a user": from now on `id` and `new_id` name one profile, read under `new_id`. */
export async function reidentifyUser(
  deps: QueueDeps,
  projectId: number,
  body: ReidentifyBody,
  request: ReceivedRequest,
): Promise<IdentifyReply> {
  const operation = toReidentifyOperation(projectId, body, request.receivedAt);
  return operation === null ? ACCEPTED : queueOperation(deps, operation, request);
}
