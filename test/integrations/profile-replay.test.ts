import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestProject, type TestProject } from "../support/project";
import { createTestStack, type TestStack } from "../support/services";
import { waitFor } from "../support/wait";
import { PROFILE_REQUESTS, type ReplayedOperation } from "./profile-requests";
import { replay } from "./replay";

const SUCCESS = { status: 200, body: { status: 200, message: "Success." } };

let stack: TestStack;
let base: string;
beforeAll(async () => {
  stack = await createTestStack("profile_replay");
  base = (await stack.gateway()).url;
  await stack.worker();
});
afterAll(() => stack.close());

/** The profile read: the profile, or null when it answers 404. */
async function readProfile(id: string, apiKey: string): Promise<Record<string, unknown> | null> {
  const response = await fetch(`${base}/api/v2/users/${encodeURIComponent(id)}`, {
    headers: { authorization: apiKey },
  });
  if (response.status === 404) return null;
  expect(response.status).toBe(200);
  return (await response.json()) as Record<string, unknown>;
}

/** Waits until the read shows `expected` (null: no profile), and returns what it shows. */
async function readOnceApplied(id: string, project: TestProject, expected: Record<string, unknown> | null) {
  const matches = (found: Record<string, unknown> | null) =>
    expected === null ? found === null : found !== null && expect.objectContaining(expected).asymmetricMatch(found);
  return waitFor(`profile ${id}`, async () => {
    const found = await readProfile(id, project.apiKey);
    return matches(found) ? { found } : undefined;
  })
    .then(({ found }) => found)
    .catch(() => readProfile(id, project.apiKey));
}

/** One of our own requests, with the credential in the query. */
async function send(project: TestProject, method: string, path: string, body: object) {
  const response = await fetch(`${base}/api/v2${path}?auth_token=${encodeURIComponent(project.authToken)}`, {
    method,
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  expect(response.status, `${method} ${path}`).toBe(200);
}

/** The user the request names, identified and through the requests meant to come before it. */
async function prepare(project: TestProject, replayed: ReplayedOperation) {
  await send(project, "POST", "/users/track", { id: replayed.user, data: { seeded: "yes" } });
  await readOnceApplied(replayed.user, project, { data: { seeded: "yes" } });
  for (const before of replayed.before ?? [])
    await send(project, before.method, before.path, { id: replayed.user, ...before.body });
}

const cases = PROFILE_REQUESTS.map((r) => [`${r.client}: ${r.name}`, r] as const);

describe("edit, tags, unsubscribe, resubscribe, reidentify and delete, as real Vero clients send them", () => {
  it("replays requests of every client, each naming its source", () => {
    for (const replayed of PROFILE_REQUESTS) expect(replayed.source, replayed.name).not.toBe("");
    expect(new Set(PROFILE_REQUESTS.map((r) => r.name)).size).toBe(PROFILE_REQUESTS.length);
    for (const operation of ["edit", "tags/edit", "unsubscribe", "resubscribe", "reidentify", "delete"]) {
      expect(
        PROFILE_REQUESTS.some((r) => r.path.includes(`/users/${operation}`)),
        operation,
      ).toBe(true);
    }
  });

  it.each(cases)("accepts %s", async (_, replayed) => {
    const project = await createTestProject(stack.db.sql, replayed.client);
    expect(await replay(base, replayed, project.authToken)).toEqual(SUCCESS);
  });

  // Each request gets a project of its own, so that what the read shows came from it alone.
  it.each(cases)("applies %s", async (_, replayed) => {
    const project = await createTestProject(stack.db.sql, replayed.client);
    await prepare(project, replayed);
    expect(await replay(base, replayed, project.authToken)).toEqual(SUCCESS);
    const shown = await readOnceApplied(replayed.profile, project, replayed.expect);
    if (replayed.expect === null) expect(shown).toBeNull();
    else expect(shown).toMatchObject(replayed.expect);
    expect(JSON.stringify(shown)).not.toContain(project.authToken);
  });
});
