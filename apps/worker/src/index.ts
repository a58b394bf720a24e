export * from "./metrics";
export * from "./queues/create-queue-worker";
export * from "./queues/profile-operations-processor";
export * from "./queues/topic-fanout-processor";
export * from "./worker";
