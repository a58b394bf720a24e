import { connect, type Sql } from "@cm/db";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_DATABASE_URL } from "../support/env";

// libs/db connect's reading and writing of times: every time the API takes (years 0001 to 9999)
// comes back from Postgres as it was sent, whatever the session's time zone.

let sql: Sql;
beforeAll(() => {
  sql = connect(ADMIN_DATABASE_URL, { max: 1 });
});
afterAll(() => sql.end());

const at = (iso: string) => Date.parse(iso);
const TIMES = [
  at("0001-01-01T00:00:00.000Z"),
  at("0030-06-15T12:34:56.789Z"),
  at("0049-01-01T00:00:00.000Z"),
  at("0999-12-31T23:59:59.999Z"),
  at("1969-12-31T23:59:59.500Z"),
  at("1970-01-01T00:00:00.000Z"),
  at("2026-06-01T10:00:00.001Z"),
  at("9999-12-31T23:59:59.999Z"),
];

async function roundTrip(times: number[], zone: string): Promise<number[]> {
  return sql.begin(async (tx) => {
    await tx`SELECT set_config('TimeZone', ${zone}, true)`;
    const read: number[] = [];
    for (const ms of times) {
      const [row] = await tx<{ t: Date }[]>`SELECT ${new Date(ms)}::timestamptz AS t`;
      read.push(row?.t.getTime() ?? Number.NaN);
    }
    return read;
  });
}

describe("times read back from Postgres", () => {
  it.each(["UTC", "Europe/Berlin", "America/St_Johns", "Asia/Kathmandu"])(
    "are those sent, years 0001 to 9999, in the time zone %s (old dates have offsets in seconds)",
    async (zone) => {
      expect(await roundTrip(TIMES, zone)).toEqual(TIMES);
    },
  );

  it("are those sent past the API's range too: years BC and past 9999 (stored before the range was enforced)", async () => {
    const outside = [
      at("0000-06-01T00:00:00.000Z"),
      at("-000100-01-01T00:00:00.000Z"),
      at("+012345-01-01T00:00:00.000Z"),
    ];
    expect(await roundTrip(outside, "UTC")).toEqual(outside);
    const [row] = await sql<{ t: Date }[]>`SELECT '0001-12-31 10:00:00+00 BC'::timestamptz AS t`;
    expect(row?.t.toISOString()).toBe("0000-12-31T10:00:00.000Z");
  });

  it("reads microseconds to the millisecond, and a timestamp without a zone as UTC", async () => {
    const [row] = await sql<{ tz: Date; plain: Date }[]>`
      SELECT '0030-01-01 00:00:00.123999+00'::timestamptz AS tz, '0030-01-01 00:00:00.5'::timestamp AS plain`;
    expect(row?.tz.toISOString()).toBe("0030-01-01T00:00:00.123Z");
    expect(row?.plain.toISOString()).toBe("0030-01-01T00:00:00.500Z");
  });
});
