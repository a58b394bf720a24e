export * from "./connection";
export * from "./failed-jobs";
export * from "./batch-queues";
export * from "./maintenance-queue";
export * from "./names";
export * from "./payloads";
export * from "./redis-durability";
export * from "./topic-fanout-queue";
