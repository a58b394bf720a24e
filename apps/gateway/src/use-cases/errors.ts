// What the gateway's own use cases (a batch answered once per Idempotency-Key) report; each names
// its `kind`, which errors/http-error.ts maps to an HTTP answer without importing this file.

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
