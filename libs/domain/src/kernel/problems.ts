/**
 * Something wrong with input, in words its sender understands: `path` says where (`channels[0].type`,
 * or "" for the input as a whole) and `message` says what, naming the path itself.
 */
export interface Problem {
  path: string;
  message: string;
}

/** A value read from input, or the problems that keep it from being one. */
export type Parsed<T> = { ok: true; value: T } | { ok: false; problems: Problem[] };

/** The longest reason a client is shown for a refusal (x-error-detail, a batch operation's message): a sentence or two. */
export const MAX_REASON_LENGTH = 300;

/** The messages of `problems` as one line, as `x-error-detail` and the CLI print them. */
export function problemText(problems: readonly Pick<Problem, "message">[]): string {
  return problems.map((problem) => problem.message).join("; ");
}

/**
 * Thrown by a worker's check of a queued item that no worker can apply as it is: the item is
 * the cause (nesting deeper than any gateway queues, a project that no longer exists), so it is
 * dead-lettered, never retried. Any other error of our code is a bug, and its job is retried.
 */
export class RefusedInput extends Error {
  override name = "RefusedInput";
}

/** Thrown by a domain function that must produce a value from input and cannot: `problems` say why. */
export class InvalidInput extends Error {
  readonly kind = "invalid_input";

  constructor(readonly problems: Problem[]) {
    super(problemText(problems));
  }
}
