export * from "./config";
export * from "./logger";
export * from "./signals";
export * from "./probes";
