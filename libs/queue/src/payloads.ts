import type { IdentifyEvent } from "@cm/domain";

/** One job per gateway micro-batch: the identifies it accepted within a few milliseconds. */
export interface IdentifyJobData {
  events: IdentifyEvent[];
}
