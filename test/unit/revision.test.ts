import { describe, expect, it } from "vitest";
import { resolveRevision } from "@cm/domain";

describe("resolveRevision", () => {
  it("applies the latest revision when the header is absent", () => {
    expect(resolveRevision(undefined)).toEqual({ ok: true, revision: { date: "2023-01-01", version: "2.0.0" } });
  });

  it("applies the newest revision on or before a well-formed date", () => {
    expect(resolveRevision("2023-01-01")).toMatchObject({ ok: true, revision: { version: "2.0.0" } });
    expect(resolveRevision("2030-12-31")).toMatchObject({ ok: true, revision: { version: "2.0.0" } });
  });

  it("refuses a date before the first revision", () => {
    expect(resolveRevision("2022-12-31")).toMatchObject({
      ok: false,
      message: expect.stringMatching(/before the first revision/),
    });
  });

  it("refuses malformed dates and impossible days", () => {
    for (const header of ["2024-1-01", "20240101", "yesterday", "2024-02-30", "2024-13-01", " 2024-01-01"]) {
      expect(resolveRevision(header), header).toMatchObject({
        ok: false,
        message: expect.stringMatching(/YYYY-MM-DD/),
      });
    }
  });
});
