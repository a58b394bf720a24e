/** extras.created_at may run ahead of our clock by this much (client clock skew), no more. */
export const MAX_FUTURE_SKEW_MS = 5 * 60 * 1000;

/**
 * Timestamps are ISO 8601 date-times (with a time zone) or Unix time in seconds, as a number
 * or a string of digits. Anything else is not a timestamp.
 */
const ISO_DATE_TIME = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})$/i;
const UNIX_SECONDS = /^\d{1,12}(\.\d{1,6})?$/;

/**
 * The times the API takes, years 0001 to 9999 in UTC: what ISO 8601 writes in four digits, and
 * Postgres and JavaScript both read back as they were written. Year 0000 (1 BC) is no year of
 * Postgres', and JavaScript writes years past 9999 with a sign no reader expects.
 */
export const EARLIEST_TIME_MS = Date.parse("0001-01-01T00:00:00.000Z");
export const LATEST_TIME_MS = Date.parse("9999-12-31T23:59:59.999Z");

/** What a time must be: what parseTimestamp reads, said in the problem of one it does not. */
export const TIMESTAMP_RULE =
  "an ISO 8601 date-time with a time zone, or Unix time in seconds, from 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z";

export function parseTimestamp(value: string | number): number | null {
  const ms = timestampMs(value);
  return ms !== null && ms >= EARLIEST_TIME_MS && ms <= LATEST_TIME_MS ? ms : null;
}

function timestampMs(value: string | number): number | null {
  if (typeof value === "number") {
    return Number.isFinite(value) && value >= 0 ? Math.floor(value * 1000) : null;
  }
  if (UNIX_SECONDS.test(value)) return Math.floor(Number(value) * 1000);
  if (!ISO_DATE_TIME.test(value) || !dayOfItsMonth(value)) return null;
  const ms = Date.parse(value.replace(" ", "T"));
  return Number.isNaN(ms) ? null : ms;
}

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** Whether an ISO date's day is one of its month's: Date.parse moves 2026-02-30 to March 2nd. */
function dayOfItsMonth(value: string): boolean {
  const [year = 0, month = 0, day = 0] = value.slice(0, 10).split("-").map(Number);
  const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
  const days = month === 2 && leap ? 29 : (DAYS_IN_MONTH[month - 1] ?? 0);
  return day >= 1 && day <= days;
}
