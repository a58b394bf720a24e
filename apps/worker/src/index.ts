export * from "./features/apply-identify";
export * from "./features/fan-out-topic-default";
export * from "./queues/identify-processor";
export * from "./queues/topic-fanout-processor";
export * from "./worker";
