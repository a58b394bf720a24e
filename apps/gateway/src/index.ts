export * from "./app";
export * from "./gateway";
export * from "./use-cases/errors";
export * from "./use-cases/read-profile";
