import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { JourneyFile } from "@cm/domain";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { childEnv } from "../support/env";
import { sampleJourney, SECRET } from "../support/journey-files";
import { runCtl } from "../support/processes";
import { createTestStack, type TestStack } from "../support/services";

// Runs the built ctl (apps/ctl/dist): build with `npx tsc -b` first.
let stack: TestStack;
let base: string;
let dir: string;
let fileCount = 0;

const ctl = (args: string[]) => runCtl(childEnv(stack.config), args);

async function journeyFile(content: unknown): Promise<string> {
  fileCount += 1;
  const path = join(dir, `journey-${fileCount}.json`);
  await writeFile(path, typeof content === "string" ? content : JSON.stringify(content));
  return path;
}

async function importJourney(content: unknown, project = stack.project.id) {
  return ctl(["journey", "import", "--project", String(project), await journeyFile(content)]);
}

async function getJourney(id: number, apiKey = stack.project.apiKey) {
  const response = await fetch(`${base}/api/v2/journeys/${id}`, { headers: { authorization: apiKey } });
  return { status: response.status, body: (await response.json()) as any };
}

async function journeyCount(): Promise<number> {
  const [row] = await stack.db.sql<{ count: number }[]>`SELECT count(*)::int AS count FROM journeys`;
  return row?.count ?? 0;
}

/** The sample journey with some nodes and edges changed. */
function brokenJourney(change: (file: JourneyFile) => void): JourneyFile {
  const file = sampleJourney();
  change(file);
  return file;
}

beforeAll(async () => {
  stack = await createTestStack("ctl_journeys");
  base = (await stack.gateway()).url;
  dir = await mkdtemp(join(tmpdir(), "ctl-journeys-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
  await stack.close();
});

describe("journey import", () => {
  it("stores the journey with new node ids and prints it exactly as GET returns it", async () => {
    const result = await importJourney(sampleJourney());
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    const printed = JSON.parse(result.stdout);
    expect(await getJourney(printed.id)).toEqual({ status: 200, body: printed });
    expect(printed.nodes.map((node: { type: string }) => node.type)).toEqual([
      "enter",
      "delay",
      "email",
      "branch",
      "sms",
      "push",
      "exit",
    ]);
    const ids = printed.nodes.map((node: { id: number }) => node.id);
    expect(printed.edges[0]).toEqual({ from: ids[0], to: ids[1] });
    expect(result.stdout).not.toContain(SECRET);
  });

  it("remaps the same local ids anew for every import", async () => {
    const first = JSON.parse((await importJourney(sampleJourney())).stdout);
    const second = JSON.parse((await importJourney(sampleJourney())).stdout);
    const ids = (journey: { nodes: { id: number }[] }) => journey.nodes.map((node) => node.id);
    expect(ids(second).filter((id: number) => ids(first).includes(id))).toEqual([]);
  });

  it("accepts its own output (the GET shape) as input", async () => {
    const printed = JSON.parse((await importJourney(sampleJourney())).stdout);
    const again = await importJourney(printed);
    expect(again.code).toBe(0);
    const copy = JSON.parse(again.stdout);
    expect(copy.id).not.toBe(printed.id);
    expect(copy.nodes.map((node: { type: string }) => node.type)).toEqual(
      printed.nodes.map((node: { type: string }) => node.type),
    );
  });

  it.each([
    [
      "one-enter",
      "node 80 (enter)",
      (f: JourneyFile) => {
        f.nodes.push({ id: 80, type: "enter" });
        f.edges.push({ from: 80, to: 70 });
      },
    ],
    ["enter-no-incoming", "node 10 (enter)", (f: JourneyFile) => f.edges.push({ from: 50, to: 10 })],
    [
      "has-exit",
      "no exit node",
      (f: JourneyFile) => {
        f.nodes = f.nodes.filter((node) => node.type !== "exit");
        f.edges = f.edges.filter((edge) => edge.to !== 70);
      },
    ],
    [
      "reachable",
      "node 7 (email) cannot be reached from the enter node",
      (f: JourneyFile) => {
        f.nodes.push({ id: 7, type: "email", title: "Orphan", message: { from: null, reply_to: null, contents: [] } });
        f.edges.push({ from: 7, to: 70 });
      },
    ],
    ["acyclic", "node 20 (delay) is on a cycle", (f: JourneyFile) => f.edges.push({ from: 50, to: 20 })],
    ["same-journey", "node 99", (f: JourneyFile) => f.edges.push({ from: 50, to: 99 })],
    [
      "branch-index",
      "edge 40 -> 50 leaves node 40 (branch) without a branch_index",
      (f: JourneyFile) => {
        f.edges = f.edges.map((edge) => (edge.from === 40 && edge.to === 50 ? { from: 40, to: 50 } : edge));
      },
    ],
    [
      "branch-index",
      "node 20 (delay) is not a branch",
      (f: JourneyFile) => {
        f.edges = f.edges.map((edge) => (edge.from === 20 ? { ...edge, branch_index: 0 } : edge));
      },
    ],
  ])('refuses a graph that breaks rule "%s", naming %s', async (rule, naming, change) => {
    const before = await journeyCount();
    const result = await importJourney(brokenJourney(change));
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain(`rule "${rule}"`);
    expect(result.stderr).toContain(naming);
    expect(await journeyCount()).toBe(before);
  });

  it.each([
    ["a file that is not JSON", "{nope", /cannot read .*JSON/],
    [
      "a node of an unknown type",
      brokenJourney((f) => f.nodes.push({ id: 5, type: "webhook" } as never)),
      /nodes\[7\]/,
    ],
    [
      "a delay without duration",
      brokenJourney((f) => {
        f.nodes = f.nodes.map((node) =>
          node.type === "delay" ? { ...node, delay: { duration_unit: "days", delivery_option: 0 } } : node,
        ) as never;
      }),
      /nodes\[1\]\.delay\.duration is required and must be a number of at least 0/,
    ],
    ["an unknown status", { ...sampleJourney(), status: "running" }, /status/],
    ["an event trigger without event_name", { ...sampleJourney(), trigger: { type: "event" } }, /event_name/],
    [
      "a sender on an SMS message",
      brokenJourney((f) => {
        f.nodes = f.nodes.map((node) =>
          node.type === "sms" ? { ...node, message: { ...node.message, from: "+15550100" } } : node,
        );
      }),
      /node 50 \(sms\): message\.from/,
    ],
  ])("refuses %s", async (_, content, message) => {
    const before = await journeyCount();
    const result = await importJourney(content);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(message);
    expect(await journeyCount()).toBe(before);
  });

  it("refuses an unknown project and a missing FILE", async () => {
    const unknown = await importJourney(sampleJourney(), 999_999);
    expect(unknown).toMatchObject({ code: 1, stdout: "" });
    expect(unknown.stderr).toContain("project 999999 does not exist");
    const missing = await ctl(["journey", "import", "--project", String(stack.project.id)]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("exactly one FILE");
    const absent = await ctl(["journey", "import", "--project", String(stack.project.id), join(dir, "absent.json")]);
    expect(absent.code).toBe(1);
    expect(absent.stderr).toContain("cannot read");
  });
});

describe("journey status", () => {
  it("moves a journey through its states and prints it as GET returns it", async () => {
    const { id } = JSON.parse((await importJourney({ ...sampleJourney(), status: "draft" })).stdout);
    for (const status of ["active", "paused", "active", "archived", "archived", "draft"]) {
      const result = await ctl(["journey", "status", "--id", String(id), "--status", status]);
      expect(result.code, result.stderr).toBe(0);
      const printed = JSON.parse(result.stdout);
      expect(printed.status).toBe(status);
      expect(await getJourney(id)).toEqual({ status: 200, body: printed });
    }
  });

  it("returns an archived journey from GET with 200", async () => {
    const { id } = JSON.parse((await importJourney(sampleJourney())).stdout);
    expect((await ctl(["journey", "status", "--id", String(id), "--status", "archived"])).code).toBe(0);
    expect(await getJourney(id)).toMatchObject({ status: 200, body: { id, status: "archived" } });
  });

  it("refuses a transition that is not allowed, an unknown status and an unknown journey", async () => {
    const { id } = JSON.parse((await importJourney({ ...sampleJourney(), status: "cancelled" })).stdout);
    const refused = await ctl(["journey", "status", "--id", String(id), "--status", "active"]);
    expect(refused).toMatchObject({ code: 1, stdout: "" });
    expect(refused.stderr).toContain(`journey ${id} cannot go from cancelled to active`);
    expect((await getJourney(id)).body.status).toBe("cancelled");

    const unknownStatus = await ctl(["journey", "status", "--id", String(id), "--status", "running"]);
    expect(unknownStatus.code).toBe(2);
    expect(unknownStatus.stderr).toContain("--status must be one of draft, active, paused, archived, cancelled");

    const unknownJourney = await ctl(["journey", "status", "--id", "999999", "--status", "paused"]);
    expect(unknownJourney.code).toBe(1);
    expect(unknownJourney.stderr).toContain("journey 999999 does not exist");

    expect((await ctl(["journey", "status", "--status", "paused"])).code).toBe(2);
  });
});

describe("demo", () => {
  it("creates the demo project with its journeys, read through the API, once however often it runs", async () => {
    const [result, concurrent] = await Promise.all([ctl(["demo"]), ctl(["demo"])]);
    expect(result.code, result.stderr).toBe(0);
    const demo = JSON.parse(result.stdout);
    const journeys = await Promise.all(
      demo.journeys.map(async ({ id }: { id: number }) => (await getJourney(id, demo.api_key)).body),
    );
    expect(demo.journeys).toEqual(journeys.map(({ id, name, status }) => ({ id, name, status })));
    expect(journeys.map((journey) => [journey.name, journey.status])).toEqual([
      ["Re-engagement", "active"],
      ["Welcome series", "active"],
      ["Win-back (2023)", "archived"],
    ]);
    const types = (journey: { nodes: { type: string }[] }) => new Set(journey.nodes.map((node) => node.type));
    const [reEngagement, welcome] = journeys;
    expect(types(welcome)).toEqual(new Set(["enter", "email", "delay", "branch", "exit"]));
    expect(types(reEngagement)).toEqual(new Set(["enter", "push", "delay", "branch", "sms", "exit"]));
    const welcomeEmail = welcome.nodes.find((node: { type: string }) => node.type === "email");
    expect(welcomeEmail.message.contents.map((content: { locale: string }) => content.locale)).toEqual([
      "en",
      "de",
      "fr",
    ]);

    const topics = await fetch(`${base}/api/v2/topics`, { headers: { authorization: demo.api_key } });
    expect(demo.topics).toEqual(
      ((await topics.json()) as { data: { id: number; name: string }[] }).data.map(({ id, name }) => ({ id, name })),
    );
    expect(demo.topics.map((topic: { name: string }) => topic.name)).toEqual([
      "Newsletter",
      "Product updates",
      "Promotions",
    ]);

    for (const run of [concurrent, await ctl(["demo"])]) {
      const again = JSON.parse(run.stdout);
      expect(again).toMatchObject({ project: demo.project, topics: demo.topics, journeys: demo.journeys });
      expect(again.api_key).not.toBe(demo.api_key);
    }
  });
});
