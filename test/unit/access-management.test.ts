import { describe, expect, it } from "vitest";
import { bigIdFromPath, InvalidInput, parseNewApiKey, permissionsNotHeld, shownWebhookUrl } from "@cm/domain";

describe("permissionsNotHeld", () => {
  it("names what a key would give beyond what it holds, in PERMISSIONS' order", () => {
    expect(permissionsNotHeld(["campaign:read", "keys:write"], ["campaign:read"])).toEqual([]);
    expect(permissionsNotHeld(["keys:write"], [])).toEqual([]);
    expect(permissionsNotHeld(["keys:write"], ["webhooks:read", "campaign:write", "keys:write"])).toEqual([
      "campaign:write",
      "webhooks:read",
    ]);
  });
});

describe("parseNewApiKey", () => {
  it("reads known permissions, a repeated one once, and none", () => {
    expect(parseNewApiKey({ permissions: ["changes:read", "changes:read", "keys:read"] })).toEqual({
      permissions: ["changes:read", "keys:read"],
    });
    expect(parseNewApiKey({ permissions: [] })).toEqual({ permissions: [] });
  });

  it("refuses an unknown permission, a missing list and unknown fields, naming each", () => {
    const problems = (body: unknown) => {
      try {
        parseNewApiKey(body);
      } catch (error) {
        expect(error).toBeInstanceOf(InvalidInput);
        return (error as InvalidInput).problems.map((problem) => problem.path);
      }
      throw new Error("accepted");
    };
    expect(problems({ permissions: ["admin"] })).toEqual(["permissions[0]"]);
    expect(problems({})).toEqual(["permissions"]);
    expect(problems("")).toEqual(["permissions"]);
    expect(problems({ permissions: [], expires_at: "tomorrow" })).toEqual(["expires_at"]);
  });
});

describe("shownWebhookUrl", () => {
  it("shows the origin only: a receiver's token may be in the path, the query or the fragment", () => {
    expect(shownWebhookUrl("https://hooks.example.com")).toBe("https://hooks.example.com/");
    expect(shownWebhookUrl("https://hooks.example.com:8443/in/42?token=s3cret&v=2")).toBe(
      "https://hooks.example.com:8443/***",
    );
    expect(shownWebhookUrl("https://hooks.slack.com/services/T0/B0/SECRETPATH")).toBe("https://hooks.slack.com/***");
    expect(shownWebhookUrl("https://e.com/?SECRETBARE")).toBe("https://e.com/***");
    expect(shownWebhookUrl("https://e.com/#frag=SECRETFRAG")).toBe("https://e.com/***");
  });
});

describe("bigIdFromPath", () => {
  it("takes a bigserial id as text, nothing else", () => {
    expect(bigIdFromPath("42")).toBe("42");
    expect(bigIdFromPath("999999999999999999")).toBe("999999999999999999");
    for (const bad of [undefined, "", "0", "042", "1e3", "-1", "1234567890123456789", "cmk_1_x"]) {
      expect(bigIdFromPath(bad), String(bad)).toBeNull();
    }
  });
});
