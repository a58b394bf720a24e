// The public entry of @cm/domain, layer by layer (docs/code.md "libs/domain"): the kernel imports
// nothing else of the domain, a concept imports the kernel and the concepts listed before it,
// requests and resources sit on top. Files within the package import each other, never this one.
export * from "./kernel/id-pages";
export * from "./kernel/json";
export * from "./kernel/problems";
export type { QueryValues } from "./kernel/query-values";
export * from "./kernel/resource-id";
export * from "./kernel/stamp";
export * from "./kernel/time";
export * from "./kernel/validation-problems";

export * from "./access/credential-token";
export * from "./access/key-bodies";
export * from "./access/permissions";
export * from "./access/revision";
export * from "./access/token-bucket";

export * from "./topics/topic";
export * from "./topics/topic-bodies";

export * from "./journeys/journey";
export * from "./journeys/journey-graph";

export * from "./profiles/aliases";
export * from "./profiles/identify";
export * from "./profiles/profile-bounds";
export * from "./profiles/profile-keys";
export * from "./profiles/profile-lists";
export * from "./profiles/profile-operations";
export * from "./profiles/profile-requests";
export * from "./profiles/profile-state";

export * from "./events/events";

export * from "./changes/change-feed";
export * from "./changes/profile-change";
export * from "./changes/profile-write";

export * from "./webhooks/webhook-addresses";
export * from "./webhooks/delivery-shares";
export * from "./webhooks/webhook-endpoints";
export * from "./webhooks/webhook-signing";

export * from "./requests/batch";
export * from "./requests/intake-log";
export * from "./requests/operation-requests";
export * from "./requests/tracking-spec";

export * from "./resources/export-lines";
export * from "./resources/resources";
export * from "./resources/topic-resource";
