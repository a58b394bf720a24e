// What a use case reports when it cannot do what was asked, in the words of the domain. Each
// router's error handler maps them to its HTTP answer (errors/http-error.ts).

/** The resource named does not exist in the caller's project (or at all). */
export class NotFound extends Error {
  constructor(readonly resource: string) {
    super(`${resource} not found`);
  }
}

/** Topic names are unique in a project, ignoring case. */
export class DuplicateTopicName extends Error {
  constructor(readonly topicName: string) {
    super(`another topic of this project is named "${topicName}" (names are compared ignoring case)`);
  }
}

/** A write that needs the queue could not reach it; nothing was changed. */
export class QueueUnavailable extends Error {}

/** A batch with this Idempotency-Key is still being answered: its retry must wait for that answer. */
export class IdempotencyKeyInFlight extends Error {
  constructor() {
    super("a batch with this Idempotency-Key is still being answered; retry once it is");
  }
}

/** An Idempotency-Key names one batch: sent again with another body, it is a client's mistake. */
export class IdempotencyKeyReused extends Error {
  constructor() {
    super("this Idempotency-Key was sent with a different body; use a new key for a new batch");
  }
}
