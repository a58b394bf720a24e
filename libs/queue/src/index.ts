export * from "./connection";
export * from "./identify-queue";
export * from "./names";
export * from "./payloads";
export * from "./topic-fanout-queue";
