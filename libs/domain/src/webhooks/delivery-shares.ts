/**
 * A try of a batch that took this long, answered or not, paces its endpoint (docs/webhooks.md,
 * "What a bad endpoint costs"): receivers that store a batch and answer are done in a few hundred
 * milliseconds; one that takes seconds is holding a slot it could be sharing.
 */
export const SLOW_TRY_MS = 1_000;

/** How many of a worker's delivery slots one project, and the paced endpoints all together, may hold at once. */
export interface DeliveryShares {
  project: number;
  paced: number;
}

/**
 * Half of a worker's `concurrency` slots each (at least one): a project, or every slow or failing
 * endpoint together, leaves the other half to the rest, whatever its endpoints do.
 */
export function deliveryShares(concurrency: number): DeliveryShares {
  const half = Math.max(1, Math.floor(concurrency / 2));
  return { project: half, paced: half };
}

/** Whether an endpoint is paced: its current batch has failed, or its last try was slow. */
export function isPaced(endpoint: { failedTries: number; lastTryMs: number | null }): boolean {
  return endpoint.failedTries > 0 || (endpoint.lastTryMs ?? 0) >= SLOW_TRY_MS;
}

/**
 * How long after a batch answered 2xx in `tryMs` the endpoint's next try waits: none when it
 * answered quickly; as long again when it was slow, so that a slow endpoint holds a slot half the
 * time at most and the others of its project take their turn meanwhile. (A failed try waits out
 * the retry backoff instead.)
 */
export function paceAfterTry(tryMs: number): number {
  return tryMs >= SLOW_TRY_MS ? tryMs : 0;
}
