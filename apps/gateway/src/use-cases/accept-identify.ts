import { toIdentifyEvent, type IdentifyBody, type IdentifyReply } from "@cm/domain";
import { queueOperation, type QueueDeps, type ReceivedRequest } from "./queue-operation";

/** api.md "Identify a user": the body becomes a stamped event in the next micro-batch. */
export function acceptIdentify(
  deps: QueueDeps,
  projectId: number,
  body: IdentifyBody,
  request: ReceivedRequest,
): Promise<IdentifyReply> {
  return queueOperation(deps, toIdentifyEvent(projectId, body, request.receivedAt), request);
}
