export * from "./credential-token";
export * from "./identify";
export * from "./json";
export * from "./permissions";
export * from "./profile-state";
export * from "./revision";
export * from "./stamp";
export * from "./topic";
