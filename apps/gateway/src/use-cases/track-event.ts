import { randomUUID } from "node:crypto";
import { InvalidInput, parseTrack, type IdentifyReply } from "@cm/domain";
import type { GatewayDeps } from "../deps";
import type { AuthorizedRequest } from "../routes/users-api";
import { ACCEPTED } from "./queue-operation";

/**
 * Vero's `POST /events/track` (docs/events.md): the body becomes an event with an identity of
 * its own, in the next events micro-batch; the answer waits for that batch to be in Redis.
 */
export async function trackEvent(
  deps: Pick<GatewayDeps, "eventBatcher" | "eventDedupWindowMs">,
  request: AuthorizedRequest,
): Promise<IdentifyReply> {
  const parsed = parseTrack(request.body, {
    projectId: request.projectId,
    receivedAt: request.receivedAt,
    eventId: randomUUID(),
    dedupWindowMs: deps.eventDedupWindowMs,
    ...(request.idempotencyKey === undefined ? {} : { idempotencyKey: request.idempotencyKey }),
  });
  if (!parsed.ok) throw new InvalidInput(parsed.problems);
  await deps.eventBatcher.enqueue(parsed.value, request.bytes);
  return ACCEPTED;
}
