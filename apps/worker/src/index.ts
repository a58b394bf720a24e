export * from "./features/apply-identify";
export * from "./queues/identify-worker";
export * from "./worker";
