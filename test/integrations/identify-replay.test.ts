import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestProject } from "../support/project";
import { createTestStack, type TestStack } from "../support/services";
import { waitFor } from "../support/wait";
import { IDENTIFY_REQUESTS } from "./identify-requests";
import { replay } from "./replay";

let stack: TestStack;
let base: string;
beforeAll(async () => {
  stack = await createTestStack("identify_replay");
  base = (await stack.gateway()).url;
  await stack.worker();
});
afterAll(() => stack.close());

async function readProfile(id: string, apiKey: string) {
  const response = await fetch(`${base}/api/v2/users/${encodeURIComponent(id)}`, {
    headers: { authorization: apiKey },
  });
  return response.status === 200 ? ((await response.json()) as Record<string, unknown>) : undefined;
}

describe("identify, as real Vero clients send it", () => {
  it("replays at least 25 requests of real clients, each naming its source", () => {
    expect(IDENTIFY_REQUESTS.length).toBeGreaterThanOrEqual(25);
    for (const replayed of IDENTIFY_REQUESTS) expect(replayed.source, replayed.name).not.toBe("");
    expect(new Set(IDENTIFY_REQUESTS.map((r) => r.name)).size).toBe(IDENTIFY_REQUESTS.length);
  });

  // Each request gets a project of its own, so that what the read shows came from that request alone.
  it.each(IDENTIFY_REQUESTS.map((r) => [`${r.client}: ${r.name}`, r] as const))("%s", async (_, replayed) => {
    const project = await createTestProject(stack.db.sql, replayed.client);
    expect(await replay(base, replayed, project.authToken)).toEqual({
      status: 200,
      body: { status: 200, message: "Success." },
    });

    const expected = { id: replayed.profile, ...replayed.expect };
    const stored = await waitFor(`profile ${replayed.profile}`, async () => {
      const found = await readProfile(replayed.profile, project.apiKey);
      try {
        expect(found).toMatchObject(expected);
        return found;
      } catch {
        return undefined;
      }
    }).catch(async () => readProfile(replayed.profile, project.apiKey));
    expect(stored).toMatchObject(expected);
    expect(JSON.stringify(stored)).not.toContain(project.authToken);
  });
});
