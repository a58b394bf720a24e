export * from "./app";
export * from "./gateway";
