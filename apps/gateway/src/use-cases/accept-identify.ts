import { toIdentifyEvent, type IdentifyBody, type IdentifyReply } from "@cm/domain";
import type { GatewayDeps } from "../deps";

const ACCEPTED: IdentifyReply = { status: 200, message: "Success." };

/**
 * api.md "Identify a user": the body becomes a stamped event in the next micro-batch. The
 * answer waits for the batch to be in Redis: a 200 means the update will be applied.
 */
export async function acceptIdentify(
  deps: Pick<GatewayDeps, "identifyBatcher">,
  projectId: number,
  body: IdentifyBody,
  request: { receivedAt: number; bytes: number },
): Promise<IdentifyReply> {
  await deps.identifyBatcher.enqueue(toIdentifyEvent(projectId, body, request.receivedAt), request.bytes);
  return ACCEPTED;
}
