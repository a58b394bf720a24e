import { describe, expect, it } from "vitest";
import { intakeBody, intakeCursor, intakeLogRequest, intakeStreamIdOf, intakeUserId } from "@cm/domain";

const cursorText = (text: string) => Buffer.from(text).toString("base64url");

describe("intake log cursors", () => {
  it("name a stream entry of one project's log", () => {
    const cursor = intakeCursor(7, "1764633600000-3");
    expect(cursor).toBe(cursorText("intake:7:1764633600000-3"));
    expect(intakeStreamIdOf(7, cursor)).toBe("1764633600000-3");
  });

  it("refuse another project's cursor, forged text and a second text for one position", () => {
    expect(intakeStreamIdOf(8, intakeCursor(7, "1-0"))).toBeNull();
    for (const forged of [
      "",
      "abc",
      cursorText("intake:7:1-0 "),
      cursorText("intake:7:01-0"),
      cursorText("intake:7:-"),
    ]) {
      expect(intakeStreamIdOf(7, forged), forged).toBeNull();
    }
    expect(intakeStreamIdOf(7, cursorText("changes:7:1:2"))).toBeNull();
    expect(intakeStreamIdOf(7, `${intakeCursor(7, "1-0")}=`)).toBeNull();
  });
});

describe("intake log bodies", () => {
  it("keep a body within the bound whole", () => {
    expect(intakeBody('{"id":"a"}', 256)).toEqual({ body: '{"id":"a"}', bodyTruncated: false });
  });

  it("cut a longer one at a character's end, and say so", () => {
    const text = `{"name":"${"é".repeat(200)}"}`;
    const { body, bodyTruncated } = intakeBody(text, 256);
    expect(bodyTruncated).toBe(true);
    expect(Buffer.byteLength(body)).toBeLessThanOrEqual(256);
    expect(body).not.toContain("\uFFFD");
    expect(text.startsWith(body)).toBe(true);
  });
});

describe("the user an intake body names", () => {
  it("reads it as the operations do: id, else email; a track's identity; a /v1 message's userId, else anonymousId", () => {
    expect(intakeUserId({ id: "ada", email: "ada@example.com" })).toBe("ada");
    expect(intakeUserId({ email: "ada@example.com" })).toBe("ada@example.com");
    expect(intakeUserId({ id: 42 })).toBe("42");
    expect(intakeUserId({ identity: { email: "bo@example.com" }, event_name: "x" })).toBe("bo@example.com");
    expect(intakeUserId({ userId: "u1", anonymousId: "a1" })).toBe("u1");
    expect(intakeUserId({ userId: null, anonymousId: "a1" })).toBe("a1");
    expect(intakeUserId({ data: {} })).toBeNull();
    expect(intakeUserId([1])).toBeNull();
    expect(intakeUserId("text")).toBeNull();
  });
});

describe("intake log reads", () => {
  it("take after, limit, wait, door, outcome and user_id", () => {
    expect(intakeLogRequest({})).toEqual({
      ok: true,
      value: { after: null, limit: 100, door: null, outcome: null, userId: null, waitS: 0 },
    });
    expect(
      intakeLogRequest({ after: "c", limit: "5", wait: "30", door: "v1", outcome: "refused", user_id: "ada" }),
    ).toEqual({ ok: true, value: { after: "c", limit: 5, door: "v1", outcome: "refused", userId: "ada", waitS: 30 } });
  });

  it("name every bad parameter", () => {
    const read = intakeLogRequest({ limit: "1001", wait: "31", door: "smtp", outcome: "maybe" });
    expect(read.ok).toBe(false);
    expect(read.ok ? [] : read.problems.map((problem) => problem.path)).toEqual([
      "query.limit",
      "query.door",
      "query.outcome",
      "query.wait",
    ]);
  });
});
