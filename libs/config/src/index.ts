export * from "./config";
export * from "./log-throttle";
export * from "./logger";
export * from "./probes";
export * from "./signals";
