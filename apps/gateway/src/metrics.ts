import type { Queue } from "bullmq";
import { collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";

export interface GatewayMetrics {
  registry: Registry;
  httpRequestSeconds: Histogram<"method" | "route" | "status">;
  profileOperationsBatchSize: Histogram;
  eventBatchSize: Histogram;
}

const QUEUE_STATES = ["waiting", "active", "delayed", "prioritized", "failed", "completed"] as const;

/**
 * Request counts and latencies come from one histogram (its _count is the request count).
 * `bodyBytesHeld`: what the body budget holds now.
 */
export function createGatewayMetrics(queues: readonly Queue[], bodyBytesHeld: () => number): GatewayMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const registers = [registry];
  new Gauge({
    name: "bullmq_queue_jobs",
    help: "Jobs per BullMQ queue and state, read when scraped",
    labelNames: ["queue", "state"],
    registers,
    async collect() {
      for (const queue of queues) {
        const counts = await queue.getJobCounts(...QUEUE_STATES);
        for (const state of QUEUE_STATES) this.set({ queue: queue.name, state }, counts[state] ?? 0);
      }
    },
  });
  new Gauge({
    name: "body_bytes_in_flight",
    help: "Bytes of users-API bodies the gateway holds, raw and parsed (at most BODY_BYTES_IN_FLIGHT, but for one request alone)",
    registers,
    collect() {
      this.set(bodyBytesHeld());
    },
  });
  return {
    registry,
    httpRequestSeconds: new Histogram({
      name: "http_request_duration_seconds",
      help: "HTTP requests by method, route and status",
      labelNames: ["method", "route", "status"],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers,
    }),
    profileOperationsBatchSize: new Histogram({
      name: "identify_enqueue_batch_size",
      help: "Profile operations per queue write (gateway micro-batches)",
      buckets: [1, 2, 5, 10, 25, 50, 100, 250, 500, 1000],
      registers,
    }),
    eventBatchSize: new Histogram({
      name: "events_enqueue_batch_size",
      help: "Tracked events per queue write (gateway micro-batches)",
      buckets: [1, 2, 5, 10, 25, 50, 100, 250, 500, 1000],
      registers,
    }),
  };
}
