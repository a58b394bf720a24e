// What a use case reports when it cannot do what was asked, in the words of the domain. Each
// names its `kind`: the gateway maps it to an HTTP answer (apps/gateway/src/errors/http-error.ts)
// and the ctl to a message, neither by importing this file's classes for it.

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

/** A key asked for a key with permissions it does not hold itself: no key gives more than it has. */
export class PermissionsNotHeld extends Error {
  readonly kind = "permissions_not_held";

  constructor(readonly lacking: readonly string[]) {
    super(`this key does not hold ${lacking.join(", ")}: a key can only create keys with permissions it holds`);
  }
}

/** A key being rotated out (set to expire) manages no keys. */
export class KeyBeingRotatedOut extends Error {
  readonly kind = "key_being_rotated_out";

  constructor() {
    super("this key is being rotated out (it expires): it creates and revokes no keys; use the key that replaced it");
  }
}

/** Only a parked webhook endpoint can be replayed: an active one is being delivered to, a revoked one never again. */
export class WebhookNotParked extends Error {
  readonly kind = "webhook_not_parked";

  constructor(readonly state: string) {
    super(`the endpoint is ${state}, not parked: only a parked endpoint is replayed`);
  }
}

/** A write that needs the queue could not reach it; nothing was changed. */
export class QueueUnavailable extends Error {
  readonly kind = "queue_unavailable";
}

/** A cursor that is not one the project's change feed (or intake log) gave: malformed, or another project's. */
export class InvalidCursor extends Error {
  readonly kind = "invalid_cursor";

  constructor(message = "after must be a cursor this project's change feed gave (a change's position, or next)") {
    super(message);
  }
}

/** Retention removed changes that follow the reader's cursor: reading on from it would skip them. */
export class ChangesTrimmed extends Error {
  readonly kind = "changes_trimmed";

  constructor() {
    super(
      "changes after this cursor were removed by retention (CHANGE_RETENTION_DAYS): the feed can no longer be read " +
        "from it without a gap; start again without after (from the oldest change kept), after a full resync",
    );
  }
}
