import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { childEnv } from "../support/env";
import { startChild } from "../support/processes";
import { createTestStack, type TestStack } from "../support/services";
import { fanoutOf, lockProfile, lockWaiters, materialised, seedProfiles } from "../support/topic-fanout";
import { waitFor } from "../support/wait";

// Runs the built worker (apps/worker/dist): build first (`npx tsc -b`).
const PROFILES = 27_500; // six chunks of 5,000, the last one part-full
const EXPLICIT_EVERY = 10;

let stack: TestStack;

beforeAll(async () => {
  stack = await createTestStack("topic_fanout_crash");
});
afterAll(() => stack.close());

describe("a worker killed mid fan-out", () => {
  it("is replaced by another that resumes where it stopped and finishes", async () => {
    const { project, db } = stack;
    const topicId = await project.topic("News", "subscribed");
    const seeded = await seedProfiles(db.sql, project.id, PROFILES, {
      topicId,
      status: "subscribed",
      every: EXPLICIT_EVERY,
    });
    const env = childEnv(stack.config, { WORKER_LOCK_MS: "2000" });

    // The first worker stops in its third chunk, on a profile this test holds.
    const release = await lockProfile(
      db.sql,
      project.id,
      seeded.keyOf(seeded.inKeyOrder.slice(12_000).find((id) => Number(id.slice(1)) % EXPLICIT_EVERY !== 0) as string),
    );
    const first = startChild("apps/worker/dist/main.js", env);
    const gateway = await stack.gateway();
    const reply = await fetch(`${gateway.url}/api/v2/topics/${topicId}`, {
      method: "PATCH",
      headers: { authorization: project.apiKey, "content-type": "application/json" },
      body: JSON.stringify({ default_status: "unsubscribed" }),
    });
    expect(reply.status).toBe(200);
    await waitFor("the first worker to be mid-way", async () =>
      (await fanoutOf(db.sql, topicId))?.chunks === 2 && (await lockWaiters(db.sql)) > 0 ? true : undefined,
    );
    first.child.kill("SIGKILL");
    await first.exited;
    await release();

    const second = startChild("apps/worker/dist/main.js", env);
    try {
      const fanout = await waitFor(
        "the fan-out to finish",
        async () => {
          const row = await fanoutOf(db.sql, topicId);
          return row?.finished ? row : undefined;
        },
        30_000,
      );
      // Six chunks in all: the two the first worker committed were not done again.
      expect(fanout).toMatchObject({
        generation: 1,
        chunks: 6,
        profiles_updated: PROFILES - PROFILES / EXPLICIT_EVERY,
      });
    } finally {
      second.child.kill("SIGTERM");
      expect(await second.exited).toBe(0);
    }
    expect(await materialised(db.sql, project.id, topicId)).toEqual({
      subscribed: 0,
      unsubscribed: PROFILES - PROFILES / EXPLICIT_EVERY,
      absent: 0,
      explicitWithDefault: 0,
    });
  });
});
