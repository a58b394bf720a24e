import { PassThrough } from "node:stream";
import type Koa from "koa";
import { describe, expect, it } from "vitest";
import { BodyBudget, BodyReservation, UNVERIFIED, victimFor, type Hold } from "../../apps/gateway/src/body/body-budget";

/** A request as the budget sees it; `cut` records that the budget cut it off. */
class Request implements Hold {
  cut = false;
  constructor(
    readonly owner: string,
    readonly client = "192.0.2.1",
    public cuttable = true,
  ) {}
  cutOff(): void {
    this.cut = true;
  }
}

describe("BodyBudget", () => {
  it("gives any request room while there is room, and a request alone whatever its size", () => {
    const budget = new BodyBudget(100);
    const alone = new Request("project:1");
    expect(budget.tryReserve(alone, 60)).toBe(true);
    expect(budget.tryReserve(alone, 90)).toBe(true);
    budget.release(alone);
    const [a, b] = [new Request("project:1"), new Request("project:1")];
    expect(budget.tryReserve(a, 60)).toBe(true);
    expect(budget.tryReserve(b, 40)).toBe(true);
    expect(budget.tryReserve(b, 1)).toBe(false);
    budget.release(a);
    expect(budget.tryReserve(b, 60)).toBe(true);
  });

  it("refuses an owner holding its fair share or more when full, and cuts nobody off", () => {
    const budget = new BodyBudget(100);
    const mine = new Request("project:1");
    const other = new Request("project:2");
    expect(budget.tryReserve(other, 40)).toBe(true);
    expect(budget.tryReserve(mine, 60)).toBe(true);
    expect(budget.tryReserve(new Request("project:1"), 10)).toBe(false);
    expect([mine.cut, other.cut]).toEqual([false, false]);
  });

  it("makes room for an owner below its fair share by cutting off the latest request of the owner holding the most", () => {
    const budget = new BodyBudget(100);
    const [older, latest] = [new Request("project:1"), new Request("project:1")];
    const small = new Request("project:2");
    expect(budget.tryReserve(older, 40)).toBe(true);
    expect(budget.tryReserve(small, 20)).toBe(true);
    expect(budget.tryReserve(latest, 40)).toBe(true);
    const newcomer = new Request("project:3");
    expect(budget.tryReserve(newcomer, 30)).toBe(true);
    expect([older.cut, latest.cut, small.cut]).toEqual([false, true, false]);
    // What the cut request held is free: room for 10 more without cutting.
    expect(budget.tryReserve(new Request("project:2"), 10)).toBe(true);
    expect(older.cut).toBe(false);
  });

  it("lets no four owners holding everything turn away a fifth", () => {
    const budget = new BodyBudget(100);
    const holders = [1, 2, 3, 4].flatMap((n) => [1, 2, 3].map(() => new Request(`project:${n}`)));
    for (const hold of holders) budget.tryReserve(hold, 10);
    for (const hold of holders.slice(0, 4)) budget.tryReserve(hold, 5);
    const fifth = new Request("project:5");
    for (let n = 0; n < 4; n++) expect(budget.tryReserve(fifth, 5)).toBe(true);
    expect(holders.filter((hold) => hold.cut).length).toBeGreaterThan(0);
  });

  it("never cuts off a request whose body has arrived: it frees nothing until it is answered", () => {
    const budget = new BodyBudget(100);
    const parsing = new Request("project:1", "192.0.2.1", false);
    expect(budget.tryReserve(parsing, 90)).toBe(true);
    const newcomer = new Request("project:2");
    expect(budget.tryReserve(newcomer, 20)).toBe(false);
    expect(parsing.cut).toBe(false);
  });
});

describe("BodyReservation", () => {
  const context = (ip: string) => ({ ip, set: () => undefined }) as unknown as Koa.Context;
  const chunk = (bytes: number) => Buffer.alloc(bytes, "x");

  it("holds a body's bytes as they arrive, and nothing of what arrives after its answer", async () => {
    const budget = new BodyBudget(100);
    const late = new BodyReservation(budget, context("192.0.2.1"), "project:1");
    const sent = new PassThrough();
    const read = late.metered(sent);
    read.resume();
    sent.write(chunk(60));
    await new Promise((resolve) => setImmediate(resolve));
    expect(budget.tryReserve(new Request("project:1"), 50)).toBe(false);
    late.release();
    sent.write(chunk(60));
    await new Promise((resolve) => setImmediate(resolve));
    expect(budget.tryReserve(new Request("project:1"), 100)).toBe(true);
  });

  it("ends the read of a request cut off with 503", async () => {
    const budget = new BodyBudget(100);
    const stalled = new BodyReservation(budget, context("203.0.113.7"), "project:1");
    const sent = new PassThrough();
    const read = stalled.metered(sent);
    const failed = new Promise<unknown>((resolve) => read.on("error", resolve));
    read.resume();
    sent.write(chunk(90));
    await new Promise((resolve) => setImmediate(resolve));
    expect(budget.tryReserve(new Request("project:2"), 50)).toBe(true);
    expect(await failed).toMatchObject({ status: 503 });
    expect(() => stalled.take(1)).toThrow();
  });
});

describe("victimFor", () => {
  const holding = (entries: [Request, number][]) => new Map<Hold, number>(entries);

  it("shares an owner's holding between its clients: one client cannot take all of the unverified's", () => {
    const hog = new Request(UNVERIFIED, "203.0.113.7");
    const verified = new Request("project:1");
    const holds = holding([
      [verified, 30],
      [hog, 70],
    ]);
    expect(victimFor(holds, new Request(UNVERIFIED, "198.51.100.2"), 100)).toBe(hog);
    // The same client finds no one to cut off: it holds all its owner holds.
    expect(victimFor(holds, new Request(UNVERIFIED, "203.0.113.7"), 100)).toBeUndefined();
  });

  it("takes from the next owner over its share when the largest has nothing that can be cut off", () => {
    const parsing = new Request("project:1", "192.0.2.1", false);
    const stalled = new Request("project:2");
    const holds = holding([
      [parsing, 50],
      [stalled, 45],
      [new Request("project:3"), 5],
    ]);
    expect(victimFor(holds, new Request("project:4"), 100)).toBe(stalled);
    expect(victimFor(holds, new Request("project:3"), 100)).toBe(stalled);
  });
});
