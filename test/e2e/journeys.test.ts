import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createApp, type RunningGateway } from "@cm/gateway";
import { CredentialCache } from "../../apps/gateway/src/auth/credential-cache";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chainJourney, sampleJourney, SECRET, storeJourney } from "../support/journey-files";
import { createTestProject, type TestProject } from "../support/project";
import { createTestStack, type TestStack } from "../support/services";

type Json = Record<string, any>;

let stack: TestStack;
let gateway: RunningGateway;
let otherProject: TestProject;
let sampleId: number;

async function get(
  path: string,
  headers: Record<string, string> = { authorization: stack.project.apiKey },
  base = gateway.url,
) {
  const response = await fetch(`${base}/api/v2${path}`, { headers });
  return {
    status: response.status,
    body: (await response.json()) as any,
    revision: response.headers.get("revision"),
    retryAfter: response.headers.get("retry-after"),
    type: response.headers.get("content-type"),
  };
}

/** Keys no response may hold anywhere: content bodies and audience details (decisions.md). */
const FORBIDDEN_KEY = /^(body|bodies|html|text|plain_text|amp|audience|audiences|segments?|filters?|entry_rules?)$/i;

function leaks(value: unknown, path = "$"): string[] {
  if (typeof value === "string") return value.includes(SECRET) ? [`${path} holds stored body or audience text`] : [];
  if (value === null || typeof value !== "object") return [];
  return Object.entries(value).flatMap(([key, inner]) => [
    ...(FORBIDDEN_KEY.test(key) && !Array.isArray(value) ? [`${path}.${key} is a forbidden key`] : []),
    ...leaks(inner, `${path}.${key}`),
  ]);
}

beforeAll(async () => {
  stack = await createTestStack("journeys");
  gateway = await stack.gateway();
  otherProject = await createTestProject(stack.db.sql, "Other project");
  sampleId = await storeJourney(stack.db.sql, stack.project.id, sampleJourney());
});
afterAll(() => stack.close());

describe("GET /api/v2/journeys/:id", () => {
  it("returns the journey with its whole graph, stored node ids and message metadata", async () => {
    const reply = await get(`/journeys/${sampleId}`);
    expect(reply.status).toBe(200);
    expect(reply.type).toMatch(/^application\/json/);
    const journey = reply.body as Json;
    const nodeIds = journey.nodes.map((node: Json) => node.id) as number[];
    expect(nodeIds.every(Number.isInteger)).toBe(true);
    expect([...nodeIds].sort((a, b) => a - b)).toEqual(nodeIds);
    const [enter, delay, email, branch, sms, push, exit] = nodeIds;
    const content = (node: Json, locale: string | null) => node.message.contents.find((c: Json) => c.locale === locale);

    expect(journey).toEqual({
      id: sampleId,
      name: "Sample journey",
      description: "Every node type",
      status: "active",
      trigger: { type: "event", event_name: "signed_up" },
      nodes: [
        { id: enter, type: "enter" },
        {
          id: delay,
          type: "delay",
          delay: {
            duration: 1.5,
            duration_unit: "days",
            delivery_option: 2,
            delay_property: "trial_ends_at",
            property_type: "date",
            preferred_delivery_time: "09:30",
          },
        },
        {
          id: email,
          type: "email",
          title: "Welcome",
          message: {
            id: expect.any(Number),
            from: "hello@example.com",
            reply_to: "support@example.com",
            contents: [
              {
                id: expect.any(Number),
                locale: "de",
                is_default: true,
                subject: "Subject de 4",
                preheader_text: "Preheader de 4",
              },
              {
                id: expect.any(Number),
                locale: "en",
                is_default: false,
                subject: "Subject en 5",
                preheader_text: "Preheader en 5",
              },
              {
                id: expect.any(Number),
                locale: "en-GB",
                is_default: false,
                subject: "Subject en-GB 3",
                preheader_text: "Preheader en-GB 3",
              },
              {
                id: expect.any(Number),
                locale: "fr",
                is_default: false,
                subject: "Subject fr 1",
                preheader_text: "Preheader fr 1",
              },
              {
                id: expect.any(Number),
                locale: null,
                is_default: false,
                subject: "Subject any 2",
                preheader_text: "Preheader any 2",
              },
            ],
          },
        },
        {
          id: branch,
          type: "branch",
          conditions: {
            combinator: "or",
            groups: [{ combinator: "and", rules: [{ property: "plan", operator: "eq", value: "pro" }] }],
          },
        },
        {
          id: sms,
          type: "sms",
          title: "Reminder",
          message: {
            id: expect.any(Number),
            from: null,
            reply_to: null,
            contents: [expect.objectContaining({ locale: "en", is_default: true })],
          },
        },
        {
          id: push,
          type: "push",
          title: "Nudge",
          message: {
            id: expect.any(Number),
            from: null,
            reply_to: null,
            contents: [
              expect.objectContaining({ locale: "en", is_default: true }),
              expect.objectContaining({ locale: "es", is_default: false }),
            ],
          },
        },
        { id: exit, type: "exit" },
      ],
      edges: [
        { from: enter, to: delay },
        { from: delay, to: email },
        { from: email, to: branch },
        { from: branch, to: sms, branch_index: 0 },
        { from: branch, to: push, branch_index: 1 },
        { from: sms, to: exit },
        { from: push, to: exit },
      ],
      created_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
      updated_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
    });
    // Contents keep their import order as ids, so the order above is by default, locale, not by id.
    const [emailNode] = journey.nodes.filter((node: Json) => node.type === "email");
    expect(content(emailNode, "fr").id).toBeLessThan(content(emailNode, "de").id);
  });

  it("orders contents with the same locale by id", async () => {
    const file = sampleJourney();
    const email = file.nodes.find((node) => node.type === "email") as Extract<
      (typeof file.nodes)[number],
      { type: "email" }
    >;
    email.message.contents = [
      { locale: null, is_default: false, subject: "second", preheader_text: "" },
      { locale: "en", is_default: true, subject: "default", preheader_text: "" },
      { locale: null, is_default: false, subject: "third", preheader_text: "" },
    ];
    const id = await storeJourney(stack.db.sql, stack.project.id, file);
    const messages = (await get(`/journeys/${id}/messages`)).body as Json[];
    expect(messages[0]?.contents.map((c: Json) => c.subject)).toEqual(["default", "second", "third"]);
  });

  it("omits event_name for a trigger that is not an event, and returns a null description", async () => {
    const id = await storeJourney(
      stack.db.sql,
      stack.project.id,
      sampleJourney({ trigger: { type: "segment" }, description: null }),
    );
    const { body } = await get(`/journeys/${id}`);
    expect(body.trigger).toEqual({ type: "segment" });
    expect(body.description).toBeNull();
  });

  it("returns an archived journey with 200 and status archived", async () => {
    const id = await storeJourney(stack.db.sql, stack.project.id, sampleJourney({ status: "archived" }));
    const reply = await get(`/journeys/${id}`);
    expect(reply.status).toBe(200);
    expect(reply.body.status).toBe("archived");
  });

  it("answers 404 not_found for an unknown id, an id that is not an integer, or another project's journey", async () => {
    const othersId = await storeJourney(stack.db.sql, otherProject.id, sampleJourney());
    for (const id of ["999999", "abc", "1.5", "-1", "0", "01", "2147483648", "99999999999999999999", `${othersId}`]) {
      for (const path of [`/journeys/${id}`, `/journeys/${id}/messages`]) {
        const reply = await get(path);
        expect({ path, status: reply.status, body: reply.body, revision: reply.revision }).toEqual({
          path,
          status: 404,
          body: { error: "not_found" },
          revision: "2023-01-01",
        });
      }
    }
    expect((await get(`/journeys/${othersId}`, { authorization: otherProject.apiKey })).status).toBe(200);
  });
});

describe("GET /api/v2/journeys/:id/messages", () => {
  it("lists the message of every message node by node id, as the journey shows them", async () => {
    const journey = (await get(`/journeys/${sampleId}`)).body as Json;
    const reply = await get(`/journeys/${sampleId}/messages`);
    expect(reply.status).toBe(200);
    const messageNodes = journey.nodes.filter((node: Json) => ["email", "sms", "push"].includes(node.type));
    expect(messageNodes.map((node: Json) => node.type)).toEqual(["email", "sms", "push"]);
    expect(reply.body).toEqual(messageNodes.map((node: Json) => node.message));
    expect(reply.body[1]).toMatchObject({ from: null, reply_to: null });
  });

  it("answers an empty array for a journey without message nodes", async () => {
    const id = await storeJourney(stack.db.sql, stack.project.id, {
      name: "No messages",
      trigger: { type: "event", event_name: "e" },
      nodes: [
        { id: 1, type: "enter" },
        { id: 2, type: "exit" },
      ],
      edges: [{ from: 1, to: 2 }],
    });
    expect(await get(`/journeys/${id}/messages`)).toMatchObject({ status: 200, body: [] });
    expect((await get(`/journeys/${id}`)).body.status).toBe("draft");
  });
});

describe("bodies and audience", () => {
  it("never appear in any response, though they are stored", async () => {
    const stored = await stack.db.sql`
      SELECT (SELECT count(*) FROM message_content_bodies WHERE text LIKE ${`%${SECRET}%`})::int AS bodies,
             (SELECT count(*) FROM journey_audiences WHERE audience::text LIKE ${`%${SECRET}%`})::int AS audiences`;
    expect(stored[0]?.bodies).toBeGreaterThan(0);
    expect(stored[0]?.audiences).toBeGreaterThan(0);

    const chainId = await storeJourney(stack.db.sql, stack.project.id, chainJourney(12));
    for (const id of [sampleId, chainId]) {
      for (const path of [`/journeys/${id}`, `/journeys/${id}/messages`]) {
        const reply = await get(path);
        expect(reply.status).toBe(200);
        expect(leaks(reply.body), path).toEqual([]);
      }
    }
  });

  it("the leak check itself finds a planted key or text", () => {
    expect(leaks({ nodes: [{ message: { contents: [{ body: {} }] } }] })).toEqual([
      "$.nodes.0.message.contents.0.body is a forbidden key",
    ]);
    expect(leaks([{ subject: `x ${SECRET}` }])).toEqual(["$.0.subject holds stored body or audience text"]);
  });
});

describe("authentication and revision", () => {
  it("accepts the raw key and the Bearer form", async () => {
    for (const authorization of [
      stack.project.apiKey,
      `Bearer ${stack.project.apiKey}`,
      `bearer ${stack.project.apiKey}`,
    ]) {
      expect((await get(`/journeys/${sampleId}`, { authorization })).status).toBe(200);
    }
  });

  it("answers 401 unauthorized without a valid API key", async () => {
    const cases: Record<string, string>[] = [
      {},
      { authorization: "" },
      { authorization: "Bearer " },
      { authorization: "nope" },
      { authorization: stack.project.authToken },
    ];
    for (const headers of cases) {
      for (const path of [`/journeys/${sampleId}`, `/journeys/${sampleId}/messages`, "/journeys/abc"]) {
        expect(await get(path, headers)).toMatchObject({
          status: 401,
          body: { error: "unauthorized" },
          revision: "2023-01-01",
        });
      }
    }
  });

  it("answers 403 forbidden without campaign:read", async () => {
    const key = await stack.project.keyWith(["campaign:write", "profile:read"]);
    for (const path of [`/journeys/${sampleId}`, `/journeys/${sampleId}/messages`]) {
      expect(await get(path, { authorization: key })).toMatchObject({
        status: 403,
        body: { error: "forbidden" },
        revision: "2023-01-01",
      });
    }
    const readOnly = await stack.project.keyWith(["campaign:read"]);
    expect((await get(`/journeys/${sampleId}`, { authorization: readOnly })).status).toBe(200);
  });

  it("answers 503 unavailable with Retry-After when keys cannot be checked", async () => {
    const unreachable = new CredentialCache(() => Promise.reject(new Error("key store down")));
    const server = await listen(createApp({ ...gateway.deps, credentials: unreachable }));
    try {
      for (const path of [`/journeys/${sampleId}`, `/journeys/${sampleId}/messages`]) {
        const reply = await get(path, { authorization: stack.project.apiKey }, urlOf(server));
        expect(reply).toMatchObject({
          status: 503,
          body: { error: "unavailable" },
          retryAfter: expect.stringMatching(/^\d+$/),
          revision: "2023-01-01",
        });
      }
    } finally {
      server.close();
    }
  });

  it("applies the revision header", async () => {
    const key = { authorization: stack.project.apiKey };
    for (const path of [`/journeys/${sampleId}`, `/journeys/${sampleId}/messages`]) {
      expect(await get(path, key)).toMatchObject({ status: 200, revision: "2023-01-01" });
      expect(await get(path, { ...key, revision: "2025-06-30" })).toMatchObject({
        status: 200,
        revision: "2023-01-01",
      });
      for (const revision of ["yesterday", "2025-13-01", "2025-6-30", "1999-12-31"]) {
        const reply = await get(path, { ...key, revision });
        expect(reply).toMatchObject({ status: 400, revision: "2023-01-01" });
        // The key is checked first (api.md: a missing credential gives 401), and the answer still names a revision.
        expect(await get(path, { revision })).toMatchObject({ status: 401, revision: "2023-01-01" });
        expect(reply.body.errors[0]).toMatchObject({
          message: expect.stringContaining("revision"),
          path: "header.revision",
        });
      }
    }
  });
});

function listen(app: ReturnType<typeof createApp>): Promise<Server> {
  return new Promise((resolve) => {
    const server = createServer(app.callback()).listen(0, "127.0.0.1", () => resolve(server));
  });
}

function urlOf(server: Server): string {
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe("queries per request", () => {
  it("is the same small number for a 3-node and a 30-node journey (no N+1)", async () => {
    const small = await storeJourney(stack.db.sql, stack.project.id, chainJourney(3));
    const large = await storeJourney(stack.db.sql, stack.project.id, chainJourney(30));
    let queries = 0;
    const counting = postgres(stack.db.url, { max: 1, debug: () => (queries += 1) });
    // Keys are checked by the real gateway's cache (warmed here), so only the route's queries are counted.
    await get(`/journeys/${small}`);
    const server = await listen(createApp({ ...gateway.deps, sql: counting }));
    const count = async (path: string) => {
      const before = queries;
      const reply = await get(path, { authorization: stack.project.apiKey }, urlOf(server));
      return { status: reply.status, queries: queries - before, items: reply.body.nodes?.length ?? reply.body.length };
    };
    try {
      await count(`/journeys/${small}`); // the first query of a connection also loads type information
      const journeySmall = await count(`/journeys/${small}`);
      const journeyLarge = await count(`/journeys/${large}`);
      const messagesSmall = await count(`/journeys/${small}/messages`);
      const messagesLarge = await count(`/journeys/${large}/messages`);
      expect(journeySmall).toEqual({ status: 200, queries: 1, items: 3 });
      expect(journeyLarge).toEqual({ status: 200, queries: 1, items: 30 });
      expect(messagesSmall).toEqual({ status: 200, queries: 1, items: 1 });
      expect(messagesLarge).toEqual({ status: 200, queries: 1, items: 21 }); // 28 inner nodes, a quarter of them delays
      expect(await count("/journeys/999999")).toEqual({ status: 404, queries: 1, items: undefined });
    } finally {
      server.close();
      await counting.end();
    }
  });

  it("is the same for importing a 3-node and a 30-node journey", async () => {
    let queries = 0;
    const counting = postgres(stack.db.url, { max: 1, debug: () => (queries += 1) });
    const importCount = async (size: number) => {
      const before = queries;
      await storeJourney(counting, stack.project.id, chainJourney(size));
      return queries - before;
    };
    try {
      await importCount(3);
      expect(await importCount(30)).toBe(await importCount(3));
    } finally {
      await counting.end();
    }
  });
});

describe("GET /api/v2/journeys", () => {
  it("lists the project's journeys by id without their graphs, a page at a time, of one status or all", async () => {
    const project = await createTestProject(stack.db.sql, "Journey list");
    const ids: number[] = [];
    for (const status of ["active", "draft", "active", "archived", "active"] as const) {
      ids.push(await storeJourney(stack.db.sql, project.id, sampleJourney({ name: `A ${status} one`, status })));
    }
    await storeJourney(stack.db.sql, otherProject.id, sampleJourney());
    const list = (query: string) => get(`/journeys${query}`, { authorization: project.apiKey });

    const first = await list("?limit=2");
    expect(first.status).toBe(200);
    expect(first.revision).toBe("2023-01-01");
    expect(first.body.data.map((journey: Json) => journey.id)).toEqual(ids.slice(0, 2));
    expect(Object.keys(first.body.data[0]).sort()).toEqual(
      ["created_at", "description", "id", "name", "status", "trigger", "updated_at"].sort(),
    );
    expect(first.body.data[0]).toMatchObject({ name: "A active one", status: "active", trigger: { type: "event" } });
    expect(leaks(first.body)).toEqual([]);
    const rest = await list(`?limit=2&cursor=${first.body.next_cursor}`);
    const last = await list(`?limit=2&cursor=${rest.body.next_cursor}`);
    expect([...rest.body.data, ...last.body.data].map((journey: Json) => journey.id)).toEqual(ids.slice(2));
    expect(last.body.next_cursor).toBeNull();

    const active = await list("?status=active");
    expect(active.body.data.map((journey: Json) => journey.id)).toEqual([ids[0], ids[2], ids[4]]);
    expect(active.body.next_cursor).toBeNull();

    const topicsCursor = Buffer.from("topic:1").toString("base64url");
    for (const query of ["?status=running", "?limit=0", `?cursor=${topicsCursor}`, "?status=active&status=draft"]) {
      const refused = await list(query);
      expect(refused.status, query).toBe(422);
      expect(refused.body.errors[0].path, query).toMatch(/^query\./);
    }
    expect((await get("/journeys", { authorization: project.authToken })).status).toBe(401);
  });
});
