import { describe, expect, it } from "vitest";
import { PoolShares } from "../../apps/gateway/src/pool-shares";

/** A work that runs until `finish` is called, noting when it started. */
function held(started: string[], name: string) {
  let finish = () => {};
  const done = new Promise<void>((resolve) => (finish = resolve));
  return { work: () => (started.push(name), done), finish: () => finish() };
}

describe("PoolShares", () => {
  it("runs at most its share of a project's works at once, the next in turn as one ends, and another project's at once", async () => {
    const shares = new PoolShares(2);
    const started: string[] = [];
    const works = ["a1", "a2", "a3", "a4"].map((name) => held(started, name));
    const running = works.map(({ work }) => shares.run(1, work));
    const other = held(started, "b1");
    const otherRun = shares.run(2, other.work);
    await Promise.resolve();
    expect(started).toEqual(["a1", "a2", "b1"]);

    works[1]?.finish();
    await running[1];
    await Promise.resolve();
    expect(started).toEqual(["a1", "a2", "b1", "a3"]);

    other.finish();
    works[0]?.finish();
    works[2]?.finish();
    await Promise.all([otherRun, running[0], running[2]]);
    await Promise.resolve();
    expect(started).toEqual(["a1", "a2", "b1", "a3", "a4"]);
    works[3]?.finish();
    await running[3];
  });

  it("gives the turn back when a work fails", async () => {
    const shares = new PoolShares(1);
    await expect(shares.run(1, () => Promise.reject(new Error("failed")))).rejects.toThrow("failed");
    expect(await shares.run(1, () => Promise.resolve("ran"))).toBe("ran");
  });
});
