// What a use case reports when it cannot do what was asked, in the words of the domain. Each
// names its `kind`, which errors/http-error.ts maps to an HTTP answer without importing this file.

/** The resource named does not exist in the caller's project (or at all). */
export class NotFound extends Error {
  readonly kind = "not_found";

  constructor(readonly resource: string) {
    super(`${resource} not found`);
  }
}

/** Topic names are unique in a project, ignoring case. */
export class DuplicateTopicName extends Error {
  readonly kind = "duplicate_topic_name";

  constructor(readonly topicName: string) {
    super(`another topic of this project is named "${topicName}" (names are compared ignoring case)`);
  }
}

/** A write that needs the queue could not reach it; nothing was changed. */
export class QueueUnavailable extends Error {
  readonly kind = "queue_unavailable";
}

/** A batch with this Idempotency-Key is still being answered: its retry must wait for that answer. */
export class IdempotencyKeyInFlight extends Error {
  readonly kind = "idempotency_key_in_flight";

  constructor() {
    super("a batch with this Idempotency-Key is still being answered; retry once it is");
  }
}

/** An Idempotency-Key names one batch: sent again with another body, it is a client's mistake. */
export class IdempotencyKeyReused extends Error {
  readonly kind = "idempotency_key_reused";

  constructor() {
    super("this Idempotency-Key was sent with a different body; use a new key for a new batch");
  }
}
