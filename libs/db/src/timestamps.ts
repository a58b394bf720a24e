/**
 * What Postgres writes for a timestamptz (DateStyle ISO): `2026-06-01 10:00:00.123456+00`; the
 * zone's offset in hours, minutes and seconds as the session's time zone has it on that date (a
 * local mean time before standard time: `+00:53:28`); years of at least four digits, and ` BC`
 * for those before year 1. A timestamp without a zone has no offset.
 */
const POSTGRES_TIMESTAMP =
  /^(\d{4,})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?(?:([+-])(\d{2})(?::(\d{2}))?(?::(\d{2}))?)?( BC)?$/;

/** 400 Gregorian years: 146,097 days. */
const GREGORIAN_CYCLE_MS = 146_097 * 86_400_000;

/**
 * A timestamp as Postgres writes it, to the millisecond (microseconds are cut, as every time we
 * store is in milliseconds). postgres.js's own reading, `new Date(text)`, takes a year below 100
 * for one of the 20th or 21st century (0049 read as 2049) and cannot read other years below 1000
 * or a year BC at all (an Invalid Date, on which toISOString throws). A timestamp without a zone
 * is read as UTC. Anything else (`infinity`, a DateStyle other than ISO) is read as postgres.js
 * reads it.
 */
export function parsePostgresTimestamp(text: string): Date {
  const match = POSTGRES_TIMESTAMP.exec(text);
  if (match === null) return new Date(text);
  const [, year, month, day, hours, minutes, seconds, fraction = "", sign, zoneH, zoneM = 0, zoneS = 0, bc] = match;
  const astronomicalYear = bc === undefined ? Number(year) : 1 - Number(year);
  // Date.UTC takes years 0 to 99 for 1900 to 1999: such a year (and any before) is read 5,200
  // years later, 13 whole Gregorian cycles of 400 years, which are the same days each.
  const cycles = astronomicalYear < 100 ? 13 : 0;
  const ms = Date.UTC(
    astronomicalYear + cycles * 400,
    Number(month) - 1,
    Number(day),
    Number(hours),
    Number(minutes),
    Number(seconds),
    Number(fraction.padEnd(3, "0").slice(0, 3)),
  );
  const zoneSeconds = Number(zoneH ?? 0) * 3600 + Number(zoneM) * 60 + Number(zoneS);
  return new Date(ms - cycles * GREGORIAN_CYCLE_MS - (sign === "-" ? -zoneSeconds : zoneSeconds) * 1000);
}

/**
 * A time as Postgres reads it. postgres.js's own writing, toISOString, writes years past 9999
 * with a sign (`+010000-…`) and year 0, 1 BC, as `0000`: Postgres reads neither. Postgres reads
 * more than four digits of year, and ` BC`.
 */
export function postgresTimestampText(value: Date | string | number): string {
  const date = value instanceof Date ? value : new Date(value);
  const iso = date.toISOString();
  const year = date.getUTCFullYear();
  if (year >= 1 && year <= 9999) return iso;
  const afterYear = iso.slice(iso.indexOf("-", 1));
  return year > 9999 ? `${year}${afterYear}` : `${String(1 - year).padStart(4, "0")}${afterYear} BC`;
}
