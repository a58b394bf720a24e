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
