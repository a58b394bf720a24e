import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PROFILE_LIST_PAGE_IDS, PROFILE_LIST_SCAN_ROWS, profileKeySecrets } from "@cm/db";
import { MAX_LINKED_IDS, profileKeysWith, type Profile, type ProfilePage } from "@cm/domain";
import { PROJECT_POOL_SHARE } from "@cm/gateway";
import { createTestProject, type TestProject } from "../support/project";
import { createTestStack, type TestStack } from "../support/services";
import { sendAccepted } from "../support/users-api";
import { waitFor } from "../support/wait";

let stack: TestStack;
let base: string;

const send = (path: string, method: string, body: object) =>
  sendAccepted(base, stack.project.authToken, path, body, method);

async function get(path: string, key = stack.project.apiKey) {
  const response = await fetch(`${base}/api/v2${path}`, { headers: { authorization: `Bearer ${key}` } });
  return { status: response.status, body: await response.json() };
}

/** Every page of the list, following next_cursor. */
async function listPages(query: string, key = stack.project.apiKey): Promise<Profile[][]> {
  const pages: Profile[][] = [];
  let cursor: string | null = null;
  do {
    const reply = await get(`/users?${query}${cursor === null ? "" : `&cursor=${cursor}`}`, key);
    expect(reply.status).toBe(200);
    const page = reply.body as ProfilePage;
    pages.push(page.data);
    cursor = page.next_cursor;
  } while (cursor !== null);
  return pages;
}

/** Every profile of the list, following next_cursor; and how many pages it took. */
async function listAll(query: string, key = stack.project.apiKey): Promise<{ profiles: Profile[]; pages: number }> {
  const pages = await listPages(query, key);
  return { profiles: pages.flat(), pages: pages.length };
}

const ids = (profiles: Profile[]) => profiles.map((profile) => profile.id).sort();

let linked: Promise<{ project: TestProject; users: string[]; single: string[] }> | undefined;

/**
 * A project of three users of MAX_LINKED_IDS ids each (anonymous ids reidentified into the
 * user's) and ten of one id, made once for the tests that need it.
 */
function linkedProject() {
  linked ??= (async () => {
    const project = await createTestProject(stack.db.sql, "linked");
    const keyOf = profileKeysWith(await profileKeySecrets(stack.db.sql, [project.id]));
    const users = ["linked-0", "linked-1", "linked-2"];
    for (const [n, user] of users.entries()) {
      const userIds = [user, ...Array.from({ length: MAX_LINKED_IDS - 1 }, (_, i) => `anonymous-${n}-${i}`)];
      const keys = userIds.map((id) => keyOf(project.id, id));
      await stack.db.sql`
        INSERT INTO profiles (project_id, key, external_id, created_t, last_created_t)
        SELECT ${project.id}, key, id, 1000, 1000 FROM unnest(${userIds}::text[], ${keys}::text[]) AS s(id, key)`;
      await stack.db.sql`
        INSERT INTO profile_links (project_id, from_key, to_key, t)
        SELECT ${project.id}, from_key, ${keys[0] as string}, 2000 FROM unnest(${keys.slice(1)}::text[]) AS from_key`;
    }
    const single = Array.from({ length: 10 }, (_, n) => `single-${n}`);
    await stack.db.sql`
      INSERT INTO profiles (project_id, key, external_id, created_t, last_created_t)
      SELECT ${project.id}, key, id, 1000, 1000
        FROM unnest(${single}::text[], ${single.map((id) => keyOf(project.id, id))}::text[]) AS s(id, key)`;
    return { project, users, single };
  })();
  return linked;
}

beforeAll(async () => {
  stack = await createTestStack("profile_list");
  base = (await stack.gateway()).url;
  await stack.worker();
  await send("/users/track", "POST", { id: "anna", email: "Anna.Smith@Example.com", data: { plan: "pro" } });
  await send("/users/track", "POST", { id: "bob", email: "bob@example.com" });
  await send("/users/track", "POST", { email: "only-email@example.com" });
  await send("/users/track", "POST", { id: "carl-old", email: "carl@example.com" });
  await send("/users/track", "POST", { id: "dora", email: "dora@example.com" });
  await send("/users/tags/edit", "PUT", { id: "anna", add: ["vip"] });
  await send("/users/tags/edit", "PUT", { id: "carl-old", add: ["vip"] });
  await send("/users/unsubscribe", "POST", { id: "bob" });
  await send("/users/reidentify", "PUT", { id: "carl-old", new_id: "carl" });
  // An update_only identify of an unknown user makes a row that is not a profile.
  await send("/users/track", "POST", { id: "ghost", email: "ghost@example.com", extras: { update_only: true } });
  await send("/users/delete", "POST", { id: "dora" });
  await waitFor("every operation applied", async () => {
    const carl = await get("/users/carl");
    const bob = await get("/users/bob");
    const dora = await get("/users/dora");
    const anna = await get("/users/anna");
    return carl.status === 200 &&
      (carl.body as Profile).tags.includes("vip") &&
      (bob.body as Profile).unsubscribed &&
      (anna.body as Profile).tags.includes("vip") &&
      dora.status === 404
      ? true
      : undefined;
  });
});
afterAll(() => stack.close());

describe("GET /api/v2/users", () => {
  it("lists every profile once, as the profile read shows it, page by page", async () => {
    const { profiles, pages } = await listAll("limit=2");
    expect(ids(profiles)).toEqual(["anna", "bob", "carl", "only-email@example.com"]);
    expect(pages).toBeGreaterThanOrEqual(2);
    for (const profile of profiles) {
      expect(profile).toEqual((await get(`/users/${encodeURIComponent(profile.id)}`)).body);
    }
  });

  it("finds a profile by email, ignoring the case of ASCII letters, and a reidentified one under its new id", async () => {
    const byEmail = async (email: string) => ids((await listAll(`email=${encodeURIComponent(email)}`)).profiles);
    expect(await byEmail("anna.smith@EXAMPLE.com")).toEqual(["anna"]);
    expect(await byEmail("only-email@example.com")).toEqual(["only-email@example.com"]);
    expect(await byEmail("carl@example.com")).toEqual(["carl"]);
    expect(await byEmail("nobody@example.com")).toEqual([]);
    expect(await byEmail("dora@example.com")).toEqual([]);
    expect(await byEmail("ghost@example.com")).toEqual([]);
  });

  it("filters by tag, by the global opt-out and by the time of the last change", async () => {
    expect(ids((await listAll("tag=vip")).profiles)).toEqual(["anna", "carl"]);
    expect(ids((await listAll("unsubscribed=true")).profiles)).toEqual(["bob"]);
    expect(ids((await listAll("unsubscribed=false&tag=vip")).profiles)).toEqual(["anna", "carl"]);
    expect(ids((await listAll(`updated_since=${Math.floor(Date.now() / 1000) + 60}`)).profiles)).toEqual([]);
    expect(ids((await listAll("updated_since=2020-01-01T00:00:00Z")).profiles)).toHaveLength(4);
  });

  it("never lists another project's profiles", async () => {
    const other = await createTestProject(stack.db.sql, "other");
    expect((await listAll("", other.apiKey)).profiles).toEqual([]);
    expect((await listAll("email=bob%40example.com", other.apiKey)).profiles).toEqual([]);
  });

  it("reads a bounded number of rows a page when no index serves the filter, and still finds every match", async () => {
    const project = await createTestProject(stack.db.sql, "many");
    const keyOf = profileKeysWith(await profileKeySecrets(stack.db.sql, [project.id]));
    const count = PROFILE_LIST_SCAN_ROWS * 2 + 10;
    const userIds = Array.from({ length: count }, (_, n) => `many-${n}`);
    const tagged = userIds.filter((_, n) => n % 1000 === 7);
    // One address for all: an email index finds them all, and reads a bounded number too.
    await stack.db.sql`
      INSERT INTO profiles (project_id, key, external_id, created_t, last_created_t, email, tags)
      SELECT ${project.id}, key, id, 1000, 1000, '{"t": 1000, "v": "Shared@example.com"}',
             CASE WHEN id = ANY(${tagged}::text[]) THEN '{"rare": {"t": 1000, "v": true}}'::jsonb ELSE '{}' END
        FROM unnest(${userIds}::text[], ${userIds.map((id) => keyOf(project.id, id))}::text[]) AS s(id, key)`;
    for (const query of ["tag=rare&limit=100", "email=shared%40example.com&tag=rare&limit=100"]) {
      const { profiles, pages } = await listAll(query, project.apiKey);
      expect(ids(profiles), query).toEqual([...tagged].sort());
      expect(pages, query).toBe(3);
    }
  });

  it("merges the rows of at most PROFILE_LIST_PAGE_IDS ids a page, and its pages still list every profile once", async () => {
    const { project, users, single } = await linkedProject();
    const pages = await listPages("limit=100", project.apiKey);
    for (const page of pages) {
      const linkedOnPage = page.filter((profile) => users.includes(profile.id));
      expect(linkedOnPage.length * MAX_LINKED_IDS).toBeLessThanOrEqual(PROFILE_LIST_PAGE_IDS);
    }
    expect(ids(pages.flat())).toEqual([...users, ...single].sort());
    // Loading 100 profiles of 1,000 ids takes about 13 s alone; under a loaded suite, more than the default.
  }, 120_000);

  it("lets one project's pages hold at most PROJECT_POOL_SHARE of the gateway's connections, however many it asks at once", async () => {
    const { project } = await linkedProject();
    let pending = true;
    const pages = Promise.all(Array.from({ length: 20 }, () => get("/users?limit=100", project.apiKey))).finally(
      () => (pending = false),
    );
    let most = 0;
    while (pending) {
      const [row] = await stack.db.sql<{ busy: number }[]>`
        SELECT count(*)::integer AS busy FROM pg_stat_activity
         WHERE datname = current_database() AND application_name = 'cm-gateway' AND state = 'active'`;
      most = Math.max(most, (row as { busy: number }).busy);
    }
    expect((await pages).map((reply) => reply.status)).toEqual(Array(20).fill(200));
    expect(most).toBeGreaterThan(0);
    expect(most).toBeLessThanOrEqual(PROJECT_POOL_SHARE);
  });

  it("lists a profile whose last event is of any year the API takes, as the profile read shows it", async () => {
    const project = await createTestProject(stack.db.sql, "old_events");
    const times = ["0049-06-01T00:00:00.000Z", "0030-01-01T00:00:00.000Z"];
    await sendAccepted(base, project.authToken, "/users/track", { id: "then" });
    for (const created_at of times) {
      const body = { identity: { id: "then" }, event_name: "Then", data: { created_at }, extras: { created_at } };
      await sendAccepted(base, project.authToken, "/events/track", body);
    }
    // The identify and the events are applied by two queues, in either order: the profile may
    // still change (its created_at) after both events are counted, so the list and the read are
    // compared once the profile has settled.
    let listed: Profile[] = [];
    const read = await waitFor("the events stored and the profile settled", async () => {
      const reply = await get("/users/then", project.apiKey);
      if (reply.status !== 200 || (reply.body as Profile).event_count !== 2) return undefined;
      listed = (await listAll("limit=10", project.apiKey)).profiles;
      const again = await get("/users/then", project.apiKey);
      return JSON.stringify(again.body) === JSON.stringify(reply.body) ? (reply.body as Profile) : undefined;
    });
    expect(read.last_event_at).toBe(times[0]);
    expect(listed).toEqual([read]);
  });

  it("answers 422 for a bad limit, cursor, email, tag, unsubscribed or updated_since, and 401/403 without a key", async () => {
    for (const query of [
      "limit=0",
      "limit=101",
      "cursor=nope",
      `cursor=${Buffer.from("journey:1").toString("base64url")}`,
      "email=",
      "email=a&email=b",
      "tag=",
      "unsubscribed=yes",
      "updated_since=yesterday",
      "email=a%00b@example.com",
      "tag=a%00b",
      "updated_since=0000-12-31T00:00:00Z",
      "updated_since=253402300800",
    ]) {
      const reply = await get(`/users?${query}`);
      expect(reply.status, query).toBe(422);
    }
    expect((await get("/users", "nope")).status).toBe(401);
    expect((await get("/users", await stack.project.keyWith(["campaign:read"]))).status).toBe(403);
  });
});
