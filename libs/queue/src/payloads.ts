import type { IdentifyEvent } from "@cm/domain";

/** One job per gateway micro-batch: the identifies it accepted within a few milliseconds. */
export interface IdentifyJobData {
  events: IdentifyEvent[];
  /** When the gateway stored the job (ms since the epoch), for the end-to-end lag metric. */
  acceptedAt?: number;
}
