export * from "./connect";
export * from "./credentials";
export * from "./errors";
export * from "./migrate";
export * from "./profiles";
export * from "./projects";
export * from "./topics";
