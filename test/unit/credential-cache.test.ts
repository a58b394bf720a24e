import { describe, expect, it } from "vitest";
import type { Credential } from "@cm/db";
import {
  CredentialCache,
  CredentialLookupsThrottled,
  CredentialStoreUnavailable,
} from "../../apps/gateway/src/auth/credential-cache";

const CREDENTIAL = { id: "41", projectId: 7, kind: "api_key", permissions: ["campaign:read"] } as Credential;

function fakeStore() {
  const store = {
    calls: 0,
    down: false,
    known: new Map<string, Credential>([["good", CREDENTIAL]]),
    lookup: async (token: string) => {
      store.calls += 1;
      await Promise.resolve();
      if (store.down) throw Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" });
      return store.known.get(token) ?? null;
    },
  };
  return store;
}

describe("CredentialCache", () => {
  it("asks the store once per token while the verdict is fresh, and shares concurrent lookups", async () => {
    const store = fakeStore();
    let now = 0;
    const cache = new CredentialCache(store.lookup, { ttlMs: 1000 }, () => now);
    const verdicts = await Promise.all([cache.verify("good"), cache.verify("good"), cache.verify("good")]);
    expect(verdicts).toEqual([CREDENTIAL, CREDENTIAL, CREDENTIAL]);
    expect(store.calls).toBe(1);
    now = 999;
    await cache.verify("good");
    expect(store.calls).toBe(1);
    now = 1000;
    await cache.verify("good");
    expect(store.calls).toBe(2);
  });

  it("remembers unknown tokens for a shorter time", async () => {
    const store = fakeStore();
    let now = 0;
    const cache = new CredentialCache(store.lookup, { ttlMs: 10_000, negativeTtlMs: 100 }, () => now);
    expect(await cache.verify("new")).toBeNull();
    store.known.set("new", CREDENTIAL);
    now = 50;
    expect(await cache.verify("new")).toBeNull();
    now = 100;
    expect(await cache.verify("new")).toEqual(CREDENTIAL);
  });

  it("answers from an expired verdict while the store is down, and fails when it has none", async () => {
    const store = fakeStore();
    let now = 0;
    const cache = new CredentialCache(store.lookup, { ttlMs: 100, staleMs: 1000 }, () => now);
    await cache.verify("good");
    store.down = true;
    now = 500;
    expect(await cache.verify("good")).toEqual(CREDENTIAL);
    await expect(cache.verify("other")).rejects.toBeInstanceOf(CredentialStoreUnavailable);
    now = 1500;
    await expect(cache.verify("good")).rejects.toBeInstanceOf(CredentialStoreUnavailable);
  });

  it("forgets the verdicts on a credential revoked through it, and only those", async () => {
    const store = fakeStore();
    const other = { ...CREDENTIAL, id: "42" };
    store.known.set("other", other);
    const cache = new CredentialCache(store.lookup, { ttlMs: 30_000 }, () => 0);
    expect(await cache.verify("good")).toEqual(CREDENTIAL);
    expect(await cache.verify("other")).toEqual(other);
    store.known.delete("good");
    cache.forget("41");
    expect(await cache.verify("good")).toBeNull();
    expect(await cache.verify("other")).toEqual(other);
    expect(store.calls).toBe(3);
  });

  it("forgets the oldest verdicts beyond its size", async () => {
    const store = fakeStore();
    const cache = new CredentialCache(store.lookup, { maxUnknownEntries: 2 }, () => 0);
    await cache.verify("a");
    await cache.verify("b");
    await cache.verify("c");
    await cache.verify("a");
    expect(store.calls).toBe(4);
    await cache.verify("c");
    expect(store.calls).toBe(4);
  });
});

describe("CredentialCache lookups of tokens it does not know", () => {
  it("never lets unknown tokens push a valid verdict out", async () => {
    const store = fakeStore();
    let now = 0;
    const cache = new CredentialCache(
      store.lookup,
      { maxEntries: 10, maxUnknownEntries: 100, lookupsPerSecond: 1_000_000 },
      () => now,
    );
    expect(await cache.verify("good")).toEqual(CREDENTIAL);
    for (let n = 0; n < 1_000; n++) await cache.verify(`random-${n}`);
    // Expired, and the store is down: the kept verdict still answers.
    now = 60_000;
    store.down = true;
    expect(await cache.verify("good")).toEqual(CREDENTIAL);
  });

  it("asks the store at most lookupsPerSecond times a second, and keeps answering known tokens meanwhile", async () => {
    const store = fakeStore();
    let now = 0;
    const cache = new CredentialCache(store.lookup, { lookupsPerSecond: 3, ttlMs: 1000 }, () => now);
    expect(await cache.verify("good")).toEqual(CREDENTIAL);
    const flood = await Promise.allSettled(Array.from({ length: 10 }, (_, n) => cache.verify(`random-${n}`)));
    expect(flood.filter((r) => r.status === "fulfilled")).toHaveLength(2);
    expect(
      flood
        .filter((r) => r.status === "rejected")
        .every((r) => (r as PromiseRejectedResult).reason instanceof CredentialLookupsThrottled),
    ).toBe(true);
    expect(store.calls).toBe(3);
    now = 3000;
    expect(await cache.verify("random-new")).toBeNull();
  });

  it("refreshes a valid verdict whatever the flood: a revoked credential stops within ttlMs", async () => {
    const store = fakeStore();
    let now = 0;
    const cache = new CredentialCache(store.lookup, { lookupsPerSecond: 3, ttlMs: 1000 }, () => now);
    expect(await cache.verify("good")).toEqual(CREDENTIAL);
    store.known.delete("good");
    for (const at of [999, 1000]) {
      now = at;
      // Random tokens use up the lookups just before the verdict is due.
      await Promise.allSettled(Array.from({ length: 5 }, (_, n) => cache.verify(`random-${at}-${n}`)));
      await expect(cache.verify(`random-${at}`)).rejects.toBeInstanceOf(CredentialLookupsThrottled);
    }
    expect(await cache.verify("good")).toBeNull();
    // Now unknown, the revoked token waits its turn as any unknown one does.
    now = 6000;
    await Promise.allSettled(Array.from({ length: 5 }, (_, n) => cache.verify(`late-${n}`)));
    await expect(cache.verify("good")).rejects.toBeInstanceOf(CredentialLookupsThrottled);
  });
});
