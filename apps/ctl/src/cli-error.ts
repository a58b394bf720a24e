import { parseTimestamp, TIMESTAMP_RULE } from "@cm/domain";

/** A failure to report to the operator as one line on stderr; `usage` errors exit 2, others 1. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: 1 | 2 = 1,
  ) {
    super(message);
  }
}

export function requireOption(options: Record<string, unknown>, name: string): string {
  const value = options[name];
  if (typeof value !== "string" || value === "") throw new CliError(`--${name} is required`, 2);
  return value;
}

export function integerOption(options: Record<string, unknown>, name: string): number {
  const text = requireOption(options, name);
  if (!/^[1-9][0-9]{0,9}$/.test(text)) throw new CliError(`--${name} must be a positive integer`, 2);
  return Number(text);
}

/** A time given as `--name`: ISO 8601 with a time zone, or Unix time in seconds; null when not given. */
export function timeOption(options: Record<string, unknown>, name: string): Date | null {
  const text = options[name];
  if (text === undefined) return null;
  const ms = typeof text === "string" ? parseTimestamp(text) : null;
  if (ms === null) {
    throw new CliError(`--${name} must be ${TIMESTAMP_RULE}`, 2);
  }
  return new Date(ms);
}
