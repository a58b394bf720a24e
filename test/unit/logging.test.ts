import { describe, expect, it, vi } from "vitest";
import { loggableError, logThrottle } from "@cm/config";

describe("loggableError", () => {
  it("keeps an error's kind, message, code and stack, and drops the fields that carry payloads", () => {
    const redisError = Object.assign(new Error("OOM command not allowed"), {
      code: "OOM",
      command: { name: "evalsha", args: ['{"email":"ada@example.com"}'] },
    });
    const logged = loggableError(redisError);
    expect(logged).toMatchObject({ type: "Error", message: "OOM command not allowed", code: "OOM" });
    expect(JSON.stringify(logged)).not.toContain("ada@example.com");
    expect(loggableError("plain")).toEqual({ message: "plain" });
  });
});

describe("logThrottle", () => {
  it("passes at most N lines a second and hands the count of the others to the next", () => {
    vi.useFakeTimers();
    try {
      const lines: number[] = [];
      const throttled = logThrottle(2);
      for (let i = 0; i < 5; i += 1) throttled((suppressed) => lines.push(suppressed));
      expect(lines).toEqual([0, 0]);
      vi.advanceTimersByTime(1_000);
      throttled((suppressed) => lines.push(suppressed));
      expect(lines).toEqual([0, 0, 3]);
    } finally {
      vi.useRealTimers();
    }
  });
});
