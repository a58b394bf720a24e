import { createHmac, randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "@cm/config";
import { newSigningSecret, openSecret, sealSecret, webhookSignature, webhookUrlProblems } from "@cm/domain";

describe("webhook signatures (Standard Webhooks)", () => {
  it("signs `id.timestamp.body` with the secret's key, one v1 signature per secret", () => {
    const secret = `whsec_${Buffer.from("a key of thirty-two bytes, quite").toString("base64")}`;
    const expected = createHmac("sha256", "a key of thirty-two bytes, quite")
      .update('msg_1.1700000000.{"changes":[]}')
      .digest("base64");
    expect(webhookSignature([secret], "msg_1", 1700000000, '{"changes":[]}')).toBe(`v1,${expected}`);
    const other = newSigningSecret();
    const both = webhookSignature([secret, other], "msg_1", 1700000000, '{"changes":[]}').split(" ");
    expect(both).toHaveLength(2);
    expect(both[0]).toBe(`v1,${expected}`);
  });

  it("makes secrets of 32 random bytes, whsec_-prefixed", () => {
    const secret = newSigningSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(newSigningSecret()).not.toBe(secret);
  });
});

describe("sealed signing secrets", () => {
  const key = randomBytes(32);

  it("open under their key, never under another, and hold no plain secret", () => {
    const secret = newSigningSecret();
    const sealed = sealSecret(key, secret);
    expect(openSecret(key, sealed)).toBe(secret);
    expect(sealed.toString("latin1")).not.toContain(secret.slice(6));
    expect(sealSecret(key, secret).equals(sealed)).toBe(false);
    expect(() => openSecret(randomBytes(32), sealed)).toThrow();
    const altered = Buffer.from(sealed);
    altered[altered.length - 1] = (altered[altered.length - 1] as number) ^ 1;
    expect(() => openSecret(key, altered)).toThrow();
  });
});

describe("WEBHOOK_SECRET_KEY", () => {
  it("is 32 bytes in base64, or unset", () => {
    const key = randomBytes(32).toString("base64");
    expect(loadConfig({ WEBHOOK_SECRET_KEY: key }).webhooks.secretKey).toBe(key);
    expect(loadConfig({}).webhooks.secretKey).toBeUndefined();
    for (const wrong of [randomBytes(16).toString("base64"), "not base64 at all", randomBytes(33).toString("base64")])
      expect(() => loadConfig({ WEBHOOK_SECRET_KEY: wrong })).toThrow(ConfigError);
  });

  it("never appears in the error that refuses it", () => {
    const wrong = randomBytes(31).toString("base64");
    expect(() => loadConfig({ WEBHOOK_SECRET_KEY: wrong })).toThrow(/webhooks\.secretKey/);
    try {
      loadConfig({ WEBHOOK_SECRET_KEY: wrong });
    } catch (error) {
      expect(String(error)).not.toContain(wrong);
    }
  });
});

describe("webhook URLs", () => {
  it("takes absolute http and https URLs without user information", () => {
    expect(webhookUrlProblems("https://hooks.example.com/in?token=1")).toEqual([]);
    expect(webhookUrlProblems("http://127.0.0.1:8080/")).toEqual([]);
    for (const wrong of [
      "/relative",
      "ftp://example.com/",
      "https://user:pass@example.com/",
      `https://e.com/${"a".repeat(2100)}`,
    ])
      expect(webhookUrlProblems(wrong), wrong).not.toEqual([]);
  });
});
