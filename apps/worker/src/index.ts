export * from "./features/apply-profile-operations";
export * from "./features/apply-state-operations";
export * from "./features/fan-out-topic-default";
export * from "./features/profile-keys";
export * from "./queues/identify-processor";
export * from "./queues/topic-fanout-processor";
export * from "./worker";
