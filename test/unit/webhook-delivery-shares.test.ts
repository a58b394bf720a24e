import { describe, expect, it } from "vitest";
import { DeliverySlots } from "@cm/app";
import { deliveryShares, isPaced, paceAfterTry, SLOW_TRY_MS } from "@cm/domain";

describe("webhook delivery shares", () => {
  it("give a project, and the paced endpoints together, half of a worker's slots, at least one", () => {
    expect(deliveryShares(8)).toEqual({ project: 4, paced: 4 });
    expect(deliveryShares(5)).toEqual({ project: 2, paced: 2 });
    expect(deliveryShares(1)).toEqual({ project: 1, paced: 1 });
  });

  it("pace an endpoint whose batch is failing or whose last try was slow, and only those", () => {
    expect(isPaced({ failedTries: 0, lastTryMs: null })).toBe(false);
    expect(isPaced({ failedTries: 0, lastTryMs: SLOW_TRY_MS - 1 })).toBe(false);
    expect(isPaced({ failedTries: 0, lastTryMs: SLOW_TRY_MS })).toBe(true);
    expect(isPaced({ failedTries: 1, lastTryMs: 3 })).toBe(true);
  });

  it("put off the next try after a slow answer by as long as it took, not after a quick one", () => {
    expect(paceAfterTry(SLOW_TRY_MS - 1)).toBe(0);
    expect(paceAfterTry(5_000)).toBe(5_000);
  });
});

describe("DeliverySlots", () => {
  it("refuse a project's delivery past its share, and a paced one past the paced share, until one is released", () => {
    const slots = new DeliverySlots({ project: 2, paced: 1 });
    const a1 = slots.take(1, false);
    const a2 = slots.take(1, true);
    expect(slots.take(1, false)).toEqual({ full: "project" });
    expect(slots.take(2, true)).toEqual({ full: "paced" });
    const b1 = slots.take(2, false);
    expect("release" in b1).toBe(true);
    if (!("release" in a2 && "release" in a1)) throw new Error("slots refused");
    a2.release();
    a2.release();
    expect("release" in slots.take(2, true)).toBe(true);
    expect(slots.take(3, true)).toEqual({ full: "paced" });
    a1.release();
    expect("release" in slots.take(1, false)).toBe(true);
    expect("release" in slots.take(1, false)).toBe(true);
    expect(slots.take(1, false)).toEqual({ full: "project" });
  });
});
