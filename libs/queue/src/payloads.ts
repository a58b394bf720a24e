import type { ProfileOperation } from "@cm/domain";

/**
 * One job per gateway micro-batch: the identifies and other profile operations it accepted
 * within a few milliseconds. Named `events` since jobs held only identifies: jobs queued by
 * older gateways still read the same.
 */
export interface IdentifyJobData {
  events: ProfileOperation[];
  /** When the gateway stored the job (ms since the epoch), for the end-to-end lag metric. */
  acceptedAt?: number;
}
