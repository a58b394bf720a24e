import type { ProfileOperation } from "@cm/domain";

/**
 * One job per gateway micro-batch: the identifies and other profile operations it accepted
 * within a few milliseconds (named `events` since jobs held identifies only).
 */
export interface IdentifyJobData {
  events: ProfileOperation[];
  /** When the gateway stored the job (ms since the epoch), for the end-to-end lag metric. */
  acceptedAt?: number;
}
