export * from "./connection";
export * from "./failed-identify-jobs";
export * from "./identify-queue";
export * from "./maintenance-queue";
export * from "./names";
export * from "./payloads";
export * from "./redis-durability";
export * from "./topic-fanout-queue";
