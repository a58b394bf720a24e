export * from "./features/apply-identify";
export * from "./features/fan-out-topic-default";
export * from "./queues/identify-worker";
export * from "./queues/topic-fanout-worker";
export * from "./worker";
