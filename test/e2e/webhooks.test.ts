import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { applyProfileOperations, createWebhookEndpoint, readChangeFeed, rotateWebhookSigningSecret } from "@cm/app";
import type { WebhookSettings } from "@cm/config";
import { revokeWebhookEndpoint, unparkWebhookEndpoint, type Sql } from "@cm/db";
import type { Change } from "@cm/domain";
import { ROOT } from "../support/processes";
import { profileOperations } from "../support/profile-operations";
import { testProfileStores } from "../support/profile-stores";
import { createTestProject, type TestProject } from "../support/project";
import { createTestStack, type TestStack } from "../support/services";
import { sendAccepted } from "../support/users-api";
import { waitFor } from "../support/wait";

/** The lines of docs/webhooks.md that verify a request, run as a receiver would run them. */
const verifyWebhook = (() => {
  const page = readFileSync(join(ROOT, "docs/webhooks.md"), "utf8");
  const code = /### Verifying a request in Node\n[\s\S]*?```js\n([\s\S]*?)```/.exec(page)?.[1];
  if (code === undefined) throw new Error("docs/webhooks.md has no verifying lines");
  return new Function("require", `${code}\nreturn verifyWebhook;`)(createRequire(import.meta.url)) as (
    secret: string,
    headers: IncomingMessage["headers"],
    body: string,
  ) => boolean;
})();

interface Delivery {
  headers: IncomingMessage["headers"];
  body: string;
  changes: Change[];
}

/** A local endpoint; `answer` (changeable) decides each reply, and it keeps every request it got. */
interface Receiver {
  url: string;
  deliveries: Delivery[];
  /** Requests it got and has not answered (an endpoint that never answers keeps them). */
  open: () => number;
  answer: (delivery: Delivery, response: ServerResponse) => void;
  close(): Promise<void>;
}

const ok = (_delivery: Delivery, response: ServerResponse) => response.writeHead(200).end();

async function receiver(answer: Receiver["answer"] = ok): Promise<Receiver> {
  let open = 0;
  const server: Server = createServer((request, response) => {
    open += 1;
    response.on("close", () => (open -= 1));
    let body = "";
    request.on("data", (chunk: Buffer) => (body += chunk.toString()));
    request.on("end", () => {
      const delivery = { headers: request.headers, body, changes: JSON.parse(body).changes };
      self.deliveries.push(delivery);
      self.answer(delivery, response);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const self: Receiver = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    deliveries: [],
    open: () => open,
    answer,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
  receivers.push(self);
  return self;
}

const receivers: Receiver[] = [];
const secretKey = randomBytes(32);
const SETTINGS: WebhookSettings = {
  secretKey: secretKey.toString("base64"),
  allowPrivateNetworks: true,
  batchSize: 3,
  concurrency: 4,
  connectTimeoutMs: 5_000,
  // Long: an endpoint that never answers must still be hanging when another is delivered to.
  timeoutMs: 60_000,
  retryBaseDelayMs: 20,
  retryMaxDelayMs: 100,
  parkAfterS: 259_200,
  pollMs: 50,
};

let stack: TestStack;
let sql: Sql;
let base: string;
let workerUrl: string;

beforeAll(async () => {
  stack = await createTestStack("webhooks", { webhooks: SETTINGS });
  sql = stack.db.sql;
  base = (await stack.gateway()).url;
  workerUrl = (await stack.worker()).healthUrl;
});
afterAll(async () => {
  await Promise.all(receivers.map((r) => r.close()));
  await stack.close();
});

/** A project of its own for each test, so that its endpoints get only its changes. */
const newProject = () => createTestProject(sql, "Webhooks");

async function newEndpoint(project: TestProject, url: string, types: string[] | null = null) {
  const { endpoint, secret } = await createWebhookEndpoint({ sql, secretKey, allowPrivateNetworks: true }, project.id, {
    url,
    types,
  });
  return { id: endpoint.id, secret };
}

async function identify(project: TestProject, id: string, data: object = {}) {
  await sendAccepted(base, project.authToken, "/users/track", { id, data });
}

/** Every change the feed serves for the project, in its order, page by page. */
async function feed(projectId: number) {
  const changes: Change[] = [];
  for (let after: string | null = null; ;) {
    const page = await readChangeFeed({ sql }, projectId, { after, limit: 1000, types: null });
    if (page.changes.length === 0) return changes;
    changes.push(...page.changes);
    after = page.next;
  }
}

const received = (r: Receiver) => r.deliveries.flatMap((delivery) => delivery.changes);

/** Waits until the feed serves `count` changes of the project and the receiver got them all. */
async function deliveredAll(project: TestProject, r: Receiver, count: number) {
  const served = await waitFor(`${count} changes in the feed`, async () => {
    const changes = await feed(project.id);
    return changes.length >= count ? changes : undefined;
  });
  await waitFor(`${served.length} changes delivered`, async () =>
    received(r).length >= served.length ? true : undefined,
  );
  return served;
}

describe("webhooks", () => {
  it("deliver the feed's changes in its order, in batches, each signed as docs/webhooks.md verifies", async () => {
    const project = await newProject();
    const hook = await receiver();
    const { secret } = await newEndpoint(project, hook.url);
    for (let n = 1; n <= 7; n += 1) await identify(project, `user-${n}`, { n });
    // Applied after the first: user-1's changes have an order to keep.
    await waitFor("7 changes in the feed", async () => ((await feed(project.id)).length === 7 ? true : undefined));
    await identify(project, "user-1", { n: 100 });
    const served = await deliveredAll(project, hook, 8);
    expect(served).toEqual(received(hook));
    expect(hook.deliveries.length).toBeGreaterThanOrEqual(3);
    for (const delivery of hook.deliveries) {
      expect(delivery.changes.length).toBeLessThanOrEqual(SETTINGS.batchSize);
      expect(verifyWebhook(secret, delivery.headers, delivery.body)).toBe(true);
      expect(verifyWebhook(secret, delivery.headers, `${delivery.body} `)).toBe(false);
    }
    expect(new Set(hook.deliveries.map((delivery) => delivery.headers["webhook-id"])).size).toBe(
      hook.deliveries.length,
    );
    // One user's changes in the order they were applied.
    const ofUser1 = received(hook).filter((change) => change.user_id === "user-1");
    expect(ofUser1.map((change) => change.type)).toEqual(["profile.created", "profile.changed"]);
  });

  it("bound a batch in bytes as a page of the feed is, the changes of large profiles a few a batch", async () => {
    const project = await newProject();
    const hook = await receiver((_delivery, response) => response.writeHead(503).end());
    await newEndpoint(project, hook.url);
    // One profile at its bounds, written six times: its data to 1 MB, its tags to 200 KB, then each
    // of four values replaced. Rows of the feed of 1 to 2.4 MB each (the profile before and after).
    const stores = testProfileStores(sql, stack.config.queuePrefix);
    const p = profileOperations(project.id);
    const value = (c: string) => c.repeat(250_000);
    try {
      await applyProfileOperations(
        stores,
        [0, 1, 2, 3].map((k) => p.identify("big", 1000, { data: { [`k${k}`]: value("a") } })),
      );
      await applyProfileOperations(
        stores,
        [0, 1, 2, 3, 4, 5, 6].map((round) =>
          p.tags(
            "big",
            1001,
            Array.from({ length: 100 }, (_, i) => `${round}-${i}-`.padEnd(255, "t")),
          ),
        ),
      );
      for (const k of [0, 1, 2, 3])
        await applyProfileOperations(stores, [p.identify("big", 1002 + k, { data: { [`k${k}`]: value("b") } })]);
    } finally {
      await stores.close();
    }
    await waitFor("6 changes in the feed", async () => ((await feed(project.id)).length === 6 ? true : undefined));
    const tries = hook.deliveries.length;
    await waitFor("a try made once all 6 were in the feed", async () =>
      hook.deliveries.length > tries ? true : undefined,
    );
    hook.answer = ok;
    const switched = hook.deliveries.length;
    const batches = () => hook.deliveries.slice(switched).map((delivery) => delivery.changes);
    await waitFor("the 6 changes taken", async () => (batches().flat().length >= 6 ? true : undefined));
    // Three to a batch by count; the second ends early, its rows past CHANGE_PAGE_BYTES.
    expect(batches().map((changes) => changes.length)).toEqual([3, 2, 1]);
    expect(batches().flat()).toEqual(await feed(project.id));
  });

  it("deliver only the types asked for", async () => {
    const project = await newProject();
    const hook = await receiver();
    await newEndpoint(project, hook.url, ["unsubscribed"]);
    await identify(project, "typed-1");
    await sendAccepted(base, project.authToken, "/users/unsubscribe", { id: "typed-1" });
    await waitFor("the unsubscribe delivered", async () => (received(hook).length > 0 ? true : undefined));
    expect(received(hook)).toEqual([expect.objectContaining({ type: "unsubscribed", user_id: "typed-1" })]);
  });

  it("send a batch answered 500 again, the same changes under the same id, and skip nothing", async () => {
    const project = await newProject();
    const hook = await receiver((_delivery, response) => response.writeHead(500).end());
    await newEndpoint(project, hook.url);
    for (let n = 1; n <= 4; n += 1) await identify(project, `retried-${n}`);
    await waitFor("4 changes in the feed", async () => ((await feed(project.id)).length === 4 ? true : undefined));
    // A try made once all 4 were in the feed: the next one reads the same batch.
    const tries = hook.deliveries.length;
    await waitFor("one more failed try", async () => (hook.deliveries.length > tries ? true : undefined));
    hook.answer = ok;
    // Answered as they arrive: the deliveries from here on were answered 200, the one before 500.
    const switched = hook.deliveries.length;
    const taken = () => hook.deliveries.slice(switched).flatMap((delivery) => delivery.changes);
    await waitFor("the 4 changes taken", async () => (taken().length >= 4 ? true : undefined));
    const [last, again] = hook.deliveries.slice(switched - 1) as [Delivery, Delivery];
    expect(again.headers["webhook-id"]).toBe(last.headers["webhook-id"]);
    expect(again.body).toBe(last.body);
    expect(taken()).toEqual(await feed(project.id));
  });

  it("send a batch held back by failures without the data of a user erased meanwhile, and the erasure with it", async () => {
    const project = await newProject();
    const hook = await receiver((_delivery, response) => response.writeHead(500).end());
    await newEndpoint(project, hook.url);
    await identify(project, "erased-1", { note: "personal-7f3a" });
    await sendAccepted(base, project.authToken, "/events/track", {
      identity: { id: "erased-1" },
      event_name: "Viewed",
      data: { note: "personal-7f3a" },
    });
    await waitFor("a failed try holding the user's data", async () =>
      hook.deliveries.some((delivery) => delivery.body.includes("personal-7f3a")) ? true : undefined,
    );
    await sendAccepted(base, project.authToken, "/users/delete", { id: "erased-1" });
    await waitFor("the erasure in the feed", async () =>
      (await feed(project.id)).some((change) => change.type === "user.erased") ? true : undefined,
    );
    hook.answer = ok;
    const switched = hook.deliveries.length;
    const taken = () => hook.deliveries.slice(switched).flatMap((delivery) => delivery.changes);
    await waitFor("the erasure delivered", async () =>
      taken().some((change) => change.type === "user.erased") ? true : undefined,
    );
    expect(
      hook.deliveries
        .slice(switched)
        .map((delivery) => delivery.body)
        .join("\n"),
    ).not.toContain("personal-7f3a");
    expect(taken()).toEqual(await feed(project.id));
  });

  it("go on to other endpoints while one never answers and another answers without end", async () => {
    const project = await newProject();
    const silent = await receiver(() => undefined);
    const flooding = await receiver((_delivery, response) => {
      response.writeHead(200);
      const chunk = Buffer.alloc(64 * 1024, "x");
      const more = () => {
        while (!response.destroyed && response.write(chunk));
        if (!response.destroyed) response.once("drain", more);
      };
      more();
    });
    const good = await receiver();
    const silentEndpoint = await newEndpoint(project, silent.url);
    const flooded = await newEndpoint(project, flooding.url);
    await newEndpoint(project, good.url);
    await identify(project, "busy-1");
    await waitFor("the silent endpoint to hold a request", async () => (silent.open() > 0 ? true : undefined));
    await identify(project, "busy-2");
    await deliveredAll(project, good, 2);
    // Delivered while the silent endpoint still holds its first batch.
    expect(silent.open()).toBe(1);
    expect(silent.deliveries).toHaveLength(1);
    await revokeWebhookEndpoint(sql, silentEndpoint.id);
    // The flood was cut off after a few KiB, and its 200 counted.
    await waitFor("the flooding endpoint's two changes taken", async () => {
      const [row] = await sql<{ cursor: string | null; failed_tries: number }[]>`
        SELECT cursor, failed_tries FROM webhook_endpoints WHERE id = ${flooded.id}`;
      return received(flooding).length === 2 && row?.failed_tries === 0 && flooding.open() === 0 ? true : undefined;
    });
    await silent.close();
  });

  it("follow no redirect: a 3xx is a failed try", async () => {
    const project = await newProject();
    const target = await receiver();
    const redirecting = await receiver((_delivery, response) =>
      response.writeHead(302, { location: target.url }).end(),
    );
    const { id } = await newEndpoint(project, redirecting.url);
    const [{ cursor }] = await sql<{ cursor: string }[]>`SELECT cursor FROM webhook_endpoints WHERE id = ${id}`;
    await identify(project, "redirected-1");
    const row = await waitFor("the redirect recorded as a failure", async () => {
      const [endpoint] = await sql<{ last_error: string | null; cursor: string | null }[]>`
        SELECT last_error, cursor FROM webhook_endpoints WHERE id = ${id}`;
      return endpoint?.last_error === null ? undefined : endpoint;
    });
    expect(row).toEqual({ last_error: "answered 302 (redirects are not followed)", cursor });
    expect(target.deliveries).toEqual([]);
    await revokeWebhookEndpoint(sql, id);
  });

  it("stop at once when revoked", async () => {
    const project = await newProject();
    const revoked = await receiver();
    const witness = await receiver();
    const { id } = await newEndpoint(project, revoked.url);
    await newEndpoint(project, witness.url);
    await identify(project, "before-revoke");
    await deliveredAll(project, revoked, 1);
    expect(await revokeWebhookEndpoint(sql, id)).toBe(true);
    await identify(project, "after-revoke");
    await deliveredAll(project, witness, 2);
    expect(received(revoked).map((change) => change.user_id)).toEqual(["before-revoke"]);
  });

  it("sign with both secrets through a rotation's grace", async () => {
    const project = await newProject();
    const hook = await receiver();
    const { id, secret: old } = await newEndpoint(project, hook.url);
    const { secret: rotated } = await rotateWebhookSigningSecret({ sql, secretKey }, id, 3600);
    await identify(project, "rotated-1");
    await deliveredAll(project, hook, 1);
    const [delivery] = hook.deliveries as [Delivery];
    expect(String(delivery.headers["webhook-signature"]).split(" ")).toHaveLength(2);
    expect(verifyWebhook(old, delivery.headers, delivery.body)).toBe(true);
    expect(verifyWebhook(rotated, delivery.headers, delivery.body)).toBe(true);
    await rotateWebhookSigningSecret({ sql, secretKey }, id, 0);
    await identify(project, "rotated-2");
    await deliveredAll(project, hook, 2);
    expect(String(hook.deliveries[1]?.headers["webhook-signature"]).split(" ")).toHaveLength(1);
  });

  it("sign each batch with the secrets its endpoint holds when it is sent, even within one delivery job", async () => {
    const project = await newProject();
    const hook = await receiver((_delivery, response) => response.writeHead(503).end());
    const { id } = await newEndpoint(project, hook.url);
    await rotateWebhookSigningSecret({ sql, secretKey }, id, 3600);
    for (const user of ["job-1", "job-2", "job-3", "job-4"]) await identify(project, user);
    await waitFor("4 changes in the feed", async () => ((await feed(project.id)).length >= 4 ? true : undefined));
    // The first batch answered 2xx ends the rotation's grace before its answer goes: the same job's
    // next batch (SETTINGS.batchSize is 3) must be signed with the new secret alone.
    const accepted: Delivery[] = [];
    hook.answer = (delivery, response) => {
      accepted.push(delivery);
      if (accepted.length > 1) return void response.writeHead(200).end();
      void rotateWebhookSigningSecret({ sql, secretKey }, id, 0).then(() => response.writeHead(200).end());
    };
    await waitFor("both batches delivered", async () =>
      accepted.flatMap((delivery) => delivery.changes).length >= 4 ? true : undefined,
    );
    const signatures = accepted.map((delivery) => String(delivery.headers["webhook-signature"]).split(" ").length);
    expect(signatures).toEqual([2, 1]);
  });

  it("park an endpoint whose batch has failed for WEBHOOK_PARK_AFTER_S, and deliver that batch first once replayed", async () => {
    const project = await newProject();
    const hook = await receiver((_delivery, response) => response.writeHead(503).end());
    const { id } = await newEndpoint(project, hook.url);
    await identify(project, "parked-1");
    await waitFor("a failed try", async () => (hook.deliveries.length > 0 ? true : undefined));
    // As if the batch had been failing for longer than the 3 days: its next failure parks it.
    await sql`UPDATE webhook_endpoints SET failing_since = now() - interval '4 days' WHERE id = ${id}`;
    await waitFor("the endpoint parked", async () => {
      const [row] = await sql<{ state: string }[]>`SELECT state FROM webhook_endpoints WHERE id = ${id}`;
      return row?.state === "parked" ? true : undefined;
    });
    const tries = hook.deliveries.length;
    await identify(project, "parked-2");
    await waitFor("the second change in the feed", async () =>
      (await feed(project.id)).length === 2 ? true : undefined,
    );
    hook.answer = ok;
    expect(hook.deliveries).toHaveLength(tries);
    expect(await unparkWebhookEndpoint(sql, id)).toBe(true);
    const replayed = () => hook.deliveries.slice(tries).flatMap((delivery) => delivery.changes);
    await waitFor("both changes delivered", async () => (replayed().length >= 2 ? true : undefined));
    expect(replayed().map((change) => change.user_id)).toEqual(["parked-1", "parked-2"]);
    // Counted once the job that delivered them returns, which may be after the endpoint got them.
    const metrics = await waitFor("the deliveries counted", async () => {
      const text = await (await fetch(`${workerUrl}/metrics`)).text();
      return new RegExp(`^webhook_changes_delivered_total\\{endpoint="${id}"\\} 2$`, "m").test(text) ? text : undefined;
    });
    expect(metrics).toMatch(new RegExp(`^webhook_endpoints_parked_total\\{endpoint="${id}"\\} 1$`, "m"));
    expect(metrics).toMatch(new RegExp(`^webhook_delivery_failures_total\\{endpoint="${id}"\\} [1-9]`, "m"));
  });
});

describe("webhook deliveries shared between projects", () => {
  /** docs/webhooks.md: no project, and no set of slow or failing endpoints, holds more than half a worker's slots. */
  const SHARE = SETTINGS.concurrency / 2;
  /** Requests the hostile receivers of a test held at once, at most. */
  let mostHeld = 0;

  // Each test's endpoints revoked and closed after it, so that none of their requests holds a slot in the next.
  const revokeAll = async () => {
    await sql`UPDATE webhook_endpoints SET state = 'revoked'`;
    await Promise.all(receivers.splice(0).map((r) => r.close()));
  };
  beforeAll(revokeAll);
  afterEach(revokeAll);

  const held = (hostile: Receiver[]) => hostile.reduce((sum, r) => sum + r.open(), 0);

  /** A project's endpoints, each a few batches behind, answering as `answer` does. */
  async function hostileProject(count: number, answer: (tries: number, response: ServerResponse) => void) {
    const project = await newProject();
    const hostile: Receiver[] = [];
    for (let e = 0; e < count; e += 1) {
      let tries = 0;
      const r = await receiver((_delivery, response) => {
        mostHeld = Math.max(mostHeld, held(hostile));
        answer((tries += 1), response);
      });
      hostile.push(r);
      await newEndpoint(project, r.url);
    }
    for (let n = 1; n <= 4 * SETTINGS.batchSize; n += 1) await identify(project, `backlog-${n}`);
    return hostile;
  }

  /**
   * The changes of a good endpoint of another project reach it while the hostile endpoints hold
   * every request they took: none of their slots had to be freed for it.
   */
  async function deliveredWhileHeld(hostile: Receiver[]) {
    await waitFor("the hostile endpoints to hold their share", async () => (held(hostile) >= SHARE ? true : undefined));
    const heldBefore = held(hostile);
    const project = await newProject();
    const good = await receiver();
    await newEndpoint(project, good.url);
    for (let n = 1; n <= 5; n += 1) await identify(project, `bystander-${n}`);
    await deliveredAll(project, good, 5);
    expect(held(hostile)).toBe(heldBefore);
    expect(mostHeld).toBeLessThanOrEqual(SHARE);
  }

  it("reach another project's endpoint while one project's 8 endpoints with a backlog never answer", async () => {
    mostHeld = 0;
    await deliveredWhileHeld(await hostileProject(8, () => undefined));
  });

  it("reach another project's endpoint while failing endpoints of three projects never answer again", async () => {
    mostHeld = 0;
    // Each fails its first try at once, which paces it, then holds every later one.
    const failingThenHanging = (tries: number, response: ServerResponse) => {
      if (tries === 1) response.writeHead(500).end();
    };
    const hostile = [];
    for (let p = 0; p < 3; p += 1) hostile.push(...(await hostileProject(4, failingThenHanging)));
    await deliveredWhileHeld(hostile);
  });

  it("pace an endpoint that answers slowly: its next batch comes no sooner than its answer took", async () => {
    const SLOW_MS = 1_500;
    const arrivals: number[] = [];
    const answered: number[] = [];
    const slow = await receiver((_delivery, response) => {
      arrivals.push(performance.now());
      setTimeout(() => {
        answered.push(performance.now());
        response.writeHead(200).end();
      }, SLOW_MS);
    });
    const project = await newProject();
    const { id } = await newEndpoint(project, slow.url);
    for (let n = 1; n <= 3 * SETTINGS.batchSize; n += 1) await identify(project, `slow-${n}`);
    await deliveredAll(project, slow, 3 * SETTINGS.batchSize);
    const gaps = arrivals.slice(1).map((arrival, i) => arrival - (answered[i] as number));
    expect(gaps.length).toBeGreaterThanOrEqual(2);
    // The worker times a try from before its request to after the answer: at least SLOW_MS.
    for (const gap of gaps) expect(gap).toBeGreaterThanOrEqual(SLOW_MS - 100);
    const [row] = await sql<{ last_try_ms: number }[]>`SELECT last_try_ms FROM webhook_endpoints WHERE id = ${id}`;
    expect(row?.last_try_ms).toBeGreaterThanOrEqual(SLOW_MS);
  });
});

describe("webhooks without WEBHOOK_ALLOW_PRIVATE_NETWORKS", () => {
  let closed: TestStack;
  beforeAll(async () => {
    closed = await createTestStack("webhooks_private", { webhooks: { ...SETTINGS, allowPrivateNetworks: false } });
    await closed.worker();
  });
  afterAll(() => closed.close());

  it("refuse a loopback address, and never reach it", async () => {
    const hook = await receiver();
    // Created where the switch is on (the ctl's setting may not be the worker's).
    const created = { sql: closed.db.sql, secretKey, allowPrivateNetworks: true };
    const { endpoint } = await createWebhookEndpoint(created, closed.project.id, { url: hook.url, types: null });
    await sendAccepted((await closed.gateway()).url, closed.project.authToken, "/users/track", { id: "private-1" });
    const lastError = await waitFor("the refusal recorded", async () => {
      const [row] = await closed.db.sql<{ last_error: string | null }[]>`
        SELECT last_error FROM webhook_endpoints WHERE id = ${endpoint.id}`;
      return row?.last_error ?? undefined;
    });
    expect(lastError).toBe(
      "127.0.0.1 is in 127.0.0.0/8 (loopback); WEBHOOK_ALLOW_PRIVATE_NETWORKS=true allows loopback, private-use, shared and unique-local networks and the host's own addresses",
    );
    expect(hook.deliveries).toEqual([]);
  });
});
