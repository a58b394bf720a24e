// The use cases of the service without their transport (docs/code.md "libs/app"): the gateway,
// the ctl and the worker call them alike and only parse their input and render the answer. What
// the worker applies is listed by entry point; the steps of each stay inside the package.
export * from "./deps";
export * from "./errors";

export * from "./topics/create-topic";
export * from "./topics/fan-out-topic-default";
export * from "./topics/list-topics";
export * from "./topics/update-topic";

export * from "./journeys/list-journey-messages";
export * from "./journeys/list-journeys";
export * from "./journeys/read-journey";

export * from "./profiles/apply-profile-operations";
export * from "./profiles/apply-state-operations";
export * from "./profiles/export-user";
export * from "./profiles/list-profiles";
export * from "./profiles/list-user-events";
export * from "./profiles/profile-keys";
export * from "./profiles/profile-resource";
export * from "./profiles/read-profile";

export * from "./changes/read-change-feed";

export * from "./intake/read-intake-log";

export * from "./events/event-retention";
export * from "./events/store-tracked-events";

export * from "./maintenance/retention";

export * from "./webhooks/deliver-webhook";
export * from "./webhooks/delivery-slots";
export * from "./webhooks/post-webhook";
export * from "./webhooks/queue-webhook-deliveries";
export * from "./webhooks/webhook-endpoints";
export * from "./webhooks/webhook-hosts";
export * from "./webhooks/webhook-standing";

export * from "./keys/api-keys";
