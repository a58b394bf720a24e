/**
 * Offline checks of k8s/: every YAML file and the rendered output of every overlay validate
 * against the Kubernetes (1.27) and KEDA schemas, unknown fields included, and the rendered
 * overlays follow the deployment policies (docs/operations-kubernetes.md).
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import { parseAllDocuments } from "yaml";
import { beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "@cm/config";
import { EVENTS_QUEUE, PROFILE_OPERATIONS_QUEUE, TOPIC_FANOUT_QUEUE } from "../../libs/queue/src/names";
import {
  type KObject,
  KustomizeError,
  kustomizationPath,
  kustomizeBuild,
  kustomizeHash,
  loadJsonPatch,
  loadKustomization,
  parseYamlDocuments,
} from "./kustomize";
import { policyViolations } from "./policy";
import { preloadDeclaredTypes, validateManifest } from "./validate";

const ROOT = resolve(__dirname, "..", "..");
const K8S = join(ROOT, "k8s");
const OVERLAYS = {
  dev: join(K8S, "overlays", "dev"),
  prod: join(K8S, "overlays", "prod"),
  prodSentinel: join(K8S, "overlays", "prod-sentinel"),
  prodCluster: join(K8S, "overlays", "prod-cluster"),
};
const QUEUES = [PROFILE_OPERATIONS_QUEUE, EVENTS_QUEUE, TOPIC_FANOUT_QUEUE];

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    return statSync(path).isDirectory() ? walk(path) : [path];
  });
}

const yamlFiles = walk(K8S).filter((f) => /\.ya?ml$/.test(f));
const rel = (f: string) => relative(ROOT, f);

/** What each YAML file is, according to the kustomizations that reference it. */
function classify(): Map<string, "kustomization" | "resource" | "patch"> {
  const roles = new Map<string, "kustomization" | "resource" | "patch">();
  for (const file of yamlFiles.filter((f) => f.endsWith("/kustomization.yaml"))) {
    const dir = dirname(file);
    roles.set(file, "kustomization");
    const k = loadKustomization(dir);
    for (const entry of k.resources ?? []) {
      const path = resolve(dir, entry);
      if (!statSync(path).isDirectory()) roles.set(path, "resource");
    }
    for (const patch of k.patches ?? []) if (patch.path !== undefined) roles.set(resolve(dir, patch.path), "patch");
  }
  return roles;
}

function expectValid(objects: unknown[], where: string): void {
  const problems = objects.flatMap((o) =>
    validateManifest(o).map((p) => `${where}: ${(o as KObject).kind}/${(o as KObject).metadata?.name}: ${p}`),
  );
  expect(problems).toEqual([]);
}

/** A kustomize v5 on this machine (kustomize or kubectl's built-in), if any. */
function kustomizeBinary(): ((dir: string) => string) | undefined {
  const run = (cmd: string, args: string[]) => spawnSync(cmd, args, { encoding: "utf8", timeout: 20_000 });
  const standalone = run("kustomize", ["version"]);
  if (standalone.status === 0 && /v5\./.test(standalone.stdout))
    return (dir) => run("kustomize", ["build", dir]).stdout;
  const kubectl = run("kubectl", ["version", "--client"]);
  if (kubectl.status === 0 && /Kustomize Version: v5\./.test(kubectl.stdout)) {
    return (dir) => {
      const out = run("kubectl", ["kustomize", dir]);
      if (out.status !== 0) throw new Error(out.stderr);
      return out.stdout;
    };
  }
  return undefined;
}
const realKustomize = kustomizeBinary();

// Reading the TypeScript declarations of the schemas takes seconds on a busy machine.
beforeAll(() => preloadDeclaredTypes(), 120_000);

const byId = (objects: KObject[]) =>
  new Map(objects.map((o) => [`${o.kind}/${o.metadata?.namespace ?? ""}/${o.metadata?.name}`, o]));

/** The environment a container of the overlay gets: its ConfigMap plus the Secret (or stand-ins). */
function containerEnv(objects: KObject[], secretStandIns: Record<string, string> = {}): NodeJS.ProcessEnv {
  const config = objects.find((o) => o.kind === "ConfigMap")!.data as Record<string, string>;
  const secret = objects.find((o) => o.kind === "Secret");
  const secretData = Object.fromEntries(
    Object.entries((secret?.data ?? {}) as Record<string, string>).map(([k, v]) => [
      k,
      Buffer.from(v, "base64").toString(),
    ]),
  );
  return { ...config, ...secretStandIns, ...secretData };
}

describe("every YAML file under k8s/", () => {
  const roles = classify();

  it("is referenced by a kustomization (no stray manifests)", () => {
    expect(yamlFiles.filter((f) => !roles.has(f)).map(rel)).toEqual([]);
    expect(yamlFiles.length).toBeGreaterThan(10);
  });

  it.each(yamlFiles.map((f) => [rel(f), f]))("%s validates", (_, file) => {
    const role = roles.get(file);
    if (role === "kustomization") {
      expect(() => loadKustomization(dirname(file))).not.toThrow();
    } else if (role === "patch") {
      // Shape only here; what the patch produces is validated in the rendered overlays below.
      expect(loadJsonPatch(dirname(file), { path: file }).length).toBeGreaterThan(0);
    } else {
      const docs = parseYamlDocuments(file);
      expect(docs.length).toBeGreaterThan(0);
      expectValid(docs, rel(file));
      expect(
        docs.filter((d) => (d as KObject).kind === "Secret").map(() => file),
        "no Secret manifests in k8s/",
      ).toEqual([]);
    }
  });
});

describe.each([
  ["base", join(K8S, "base")],
  ["dev", OVERLAYS.dev],
  ["prod", OVERLAYS.prod],
  ["prod-sentinel", OVERLAYS.prodSentinel],
  ["prod-cluster", OVERLAYS.prodCluster],
])("kustomize output of %s", (label, dir) => {
  const objects = kustomizeBuild(dir);

  it("validates against the Kubernetes and KEDA schemas", () => {
    expect(objects.length).toBeGreaterThan(8);
    expectValid(objects, label);
  });

  it.skipIf(realKustomize === undefined)("is exactly what kustomize v5 renders", () => {
    const theirs = parseAllDocuments(realKustomize!(kustomizationPath(dir).replace(/\/kustomization\.yaml$/, ""))).map(
      (d) => d.toJS(),
    );
    expect(byId(objects)).toEqual(byId(theirs));
  });
});

describe.each([
  ["dev", OVERLAYS.dev, "cm-dev", true],
  ["prod", OVERLAYS.prod, "cm-prod", false],
  ["prod-sentinel", OVERLAYS.prodSentinel, "cm-prod", false],
  ["prod-cluster", OVERLAYS.prodCluster, "cm-prod", false],
] as const)("the %s overlay", (label, dir, namespace, shipsSecret) => {
  const objects = kustomizeBuild(dir);

  it("follows the deployment policies", () => {
    expect(policyViolations(objects, { queues: QUEUES, shipsSecret })).toEqual([]);
  });

  it("puts everything in its own namespace", () => {
    const namespaced = objects.filter((o) => o.kind !== "Namespace");
    expect(new Set(namespaced.map((o) => o.metadata.namespace))).toEqual(new Set([namespace]));
    expect(objects.filter((o) => o.kind === "Namespace").map((o) => o.metadata.name)).toEqual([namespace]);
  });

  it("gives the processes a configuration they accept", () => {
    const standIns = {
      DATABASE_URL: "postgres://u:p@db:5432/cm",
      REDIS_URL: "redis://redis:6379",
      ADMIN_TOKEN: "x".repeat(32),
    };
    const env = containerEnv(objects, shipsSecret ? {} : standIns);
    expect(() => loadConfig(env)).not.toThrow();
  });

  it("uses explicit autoscaler ranges", () => {
    const hpa = objects.find((o) => o.kind === "HorizontalPodAutoscaler")!;
    const so = objects.find((o) => o.kind === "ScaledObject")!;
    if (label === "dev") {
      expect([hpa.spec.minReplicas, hpa.spec.maxReplicas, so.spec.minReplicaCount, so.spec.maxReplicaCount]).toEqual([
        1, 1, 1, 1,
      ]);
    } else {
      expect(hpa.spec.minReplicas).toBeGreaterThanOrEqual(3);
      expect(so.spec.minReplicaCount).toBeGreaterThanOrEqual(2);
      expect(so.spec.maxReplicaCount).toBeGreaterThan(so.spec.minReplicaCount);
    }
  });

  if (shipsSecret) {
    it("ships only placeholder credentials", () => {
      const secret = objects.find((o) => o.kind === "Secret")!;
      for (const key of ["DATABASE_URL", "REDIS_URL", "REDIS_PASSWORD", "ADMIN_TOKEN"]) {
        expect(Buffer.from(secret.data[key], "base64").toString()).toContain("placeholder");
      }
    });
  }
});

describe("the validation rejects broken manifests", () => {
  const good = kustomizeBuild(OVERLAYS.prod);
  const deployment = () =>
    structuredClone(good.find((o) => o.kind === "Deployment" && o.metadata.name === "cm-worker")!);

  it("accepts the unmodified manifest (so the failures below mean something)", () => {
    expect(validateManifest(deployment())).toEqual([]);
  });

  it('rejects replicas: "two"', () => {
    const d = deployment();
    d.spec.replicas = "two";
    expect(validateManifest(d).join("\n")).toMatch(/replicas must be integer/);
  });

  it("rejects an unknown field in a container", () => {
    const d = deployment();
    d.spec.template.spec.containers[0].imagePullPolice = "Always";
    expect(validateManifest(d)).toEqual([
      'spec.template.spec.containers[0].imagePullPolice: unknown field "imagePullPolice"',
    ]);
  });

  it("rejects a misspelt probe field and a bad quantity", () => {
    const d = deployment();
    d.spec.template.spec.containers[0].readinessProbe.httpGet.paht = "/readyz";
    d.spec.template.spec.containers[0].resources.limits.memory = "lots";
    const problems = validateManifest(d).join("\n");
    expect(problems).toMatch(/readinessProbe\.httpGet\.paht: unknown field/);
    expect(problems).toMatch(/limits\/memory must match format "quantity"/);
  });

  it("rejects a broken ScaledObject", () => {
    const so = structuredClone(good.find((o) => o.kind === "ScaledObject")!);
    so.spec.triggers[0].authRef = so.spec.triggers[0].authenticationRef;
    so.spec.maxReplicaCount = "thirty";
    const problems = validateManifest(so).join("\n");
    expect(problems).toMatch(/spec\.triggers\[0\]\.authRef: unknown field/);
    expect(problems).toMatch(/maxReplicaCount must be integer/);
  });

  it("rejects kinds it has no schema for", () => {
    expect(validateManifest({ apiVersion: "apps/v1", kind: "Deploymnet", metadata: { name: "x" } })[0]).toMatch(
      /no schema/,
    );
  });
});

describe("the policy checks catch violations", () => {
  const good = kustomizeBuild(OVERLAYS.prod);
  const violationsAfter = (mutate: (objects: KObject[]) => void) => {
    const objects = structuredClone(good);
    mutate(objects);
    return policyViolations(objects, { queues: QUEUES, shipsSecret: false }).join("\n");
  };
  const get = (objects: KObject[], kind: string, name: string) =>
    objects.find((o) => o.kind === kind && o.metadata.name === name)!;

  it.each<[string, (objects: KObject[]) => void, RegExp]>([
    [
      "writable root filesystem",
      (o) =>
        delete get(o, "Deployment", "cm-worker").spec.template.spec.containers[0].securityContext
          .readOnlyRootFilesystem,
      /cm-worker container worker: readOnlyRootFilesystem/,
    ],
    [
      "short grace period",
      (o) => (get(o, "Deployment", "cm-gateway").spec.template.spec.terminationGracePeriodSeconds = 30),
      /cm-gateway: terminationGracePeriodSeconds must be >= 35/,
    ],
    [
      "root user",
      (o) => (get(o, "Job", "cm-migrate").spec.template.spec.containers[0].securityContext.runAsUser = 0),
      /cm-migrate container migrate: runs as uid 0/,
    ],
    [
      "no limits on the init container",
      (o) => delete get(o, "Deployment", "cm-gateway").spec.template.spec.initContainers[0].resources.limits,
      /container migrate: resources\.limits\.cpu missing/,
    ],
    [
      "no readiness probe",
      (o) => delete get(o, "Deployment", "cm-worker").spec.template.spec.containers[0].readinessProbe,
      /cm-worker: readinessProbe must GET \/readyz/,
    ],
    [
      "probe on the wrong port",
      (o) => (get(o, "Deployment", "cm-worker").spec.template.spec.containers[0].livenessProbe.httpGet.port = 3000),
      /cm-worker: livenessProbe must use METRICS_PORT/,
    ],
    [
      "fan-out queue not watched",
      (o) => get(o, "ScaledObject", "cm-worker").spec.triggers.pop(),
      /no redis trigger on cm:topic-fanout:wait/,
    ],
    [
      "queue prefix changed without the triggers",
      (o) => (get(o, "ConfigMap", o.find((x) => x.kind === "ConfigMap")!.metadata.name).data.QUEUE_PREFIX = "prod"),
      /no redis trigger on prod:identify:wait/,
    ],
    [
      "no migrate initContainer",
      (o) => (get(o, "Deployment", "cm-worker").spec.template.spec.initContainers = []),
      /cm-worker: needs an initContainer running the migrations/,
    ],
    [
      "a shipped Secret",
      (o) => o.push({ apiVersion: "v1", kind: "Secret", metadata: { name: "cm-secrets" }, data: {} }),
      /no Secret may be shipped/,
    ],
    [
      "shutdown delay beyond the grace period",
      (o) => (o.find((x) => x.kind === "ConfigMap")!.data.SHUTDOWN_DELAY_MS = "20000"),
      /cm-gateway: terminationGracePeriodSeconds 45 must exceed/,
    ],
    [
      "replicas pinned under an autoscaler",
      (o) => (get(o, "Deployment", "cm-gateway").spec.replicas = 3),
      /cm-gateway: spec\.replicas must be left/,
    ],
  ])("%s", (_, mutate, expected) => {
    expect(violationsAfter(mutate)).toMatch(expected);
  });

  it("KEDA on other Sentinels than the processes'", () => {
    const objects = kustomizeBuild(OVERLAYS.prodSentinel);
    expect(policyViolations(objects, { queues: QUEUES, shipsSecret: false })).toEqual([]);
    objects.find((o) => o.kind === "ConfigMap")!.data.REDIS_SENTINELS = "redis-sentinel:26379";
    expect(policyViolations(objects, { queues: QUEUES, shipsSecret: false }).join("\n")).toMatch(
      /trigger identify-backlog: not on the Sentinels redis-sentinel:26379 and primary mymaster/,
    );
  });

  it("KEDA on other Redis Cluster nodes than the processes', or missing a shard", () => {
    const objects = kustomizeBuild(OVERLAYS.prodCluster);
    expect(policyViolations(objects, { queues: QUEUES, shipsSecret: false })).toEqual([]);
    const config = objects.find((o) => o.kind === "ConfigMap")!.data;
    config.REDIS_CLUSTER_NODES = "redis-cluster:6379";
    config.INTAKE_QUEUE_SHARDS = "4";
    const violations = policyViolations(objects, { queues: QUEUES, shipsSecret: false }).join("\n");
    expect(violations).toMatch(/trigger identify-backlog: not on the Redis Cluster nodes redis-cluster:6379/);
    expect(violations).toMatch(/no redis trigger on cm:\{identify-3\}:wait/);
    expect(violations).toMatch(/no redis trigger on cm:\{events-3\}:wait/);
  });
});

describe("the offline kustomize renderer", () => {
  it("computes kustomize's name hashes (vectors from kustomize v5.5.0)", () => {
    expect(kustomizeHash({ kind: "ConfigMap", data: { A: "1", B: "<x>&y" } })).toBe("4c85dkf8t9");
    expect(kustomizeHash({ kind: "Secret", type: "Opaque", data: { K: "dg==" } })).toBe("8gkfgg4d6d");
  });

  it("refuses features it does not implement instead of rendering them approximately", () => {
    const dir = mkdtempSync(join(tmpdir(), "k8s-kustomize-"));
    try {
      writeFileSync(
        join(dir, "kustomization.yaml"),
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamePrefix: x-\n",
      );
      expect(() => kustomizeBuild(dir)).toThrow(KustomizeError);
      writeFileSync(
        join(dir, "kustomization.yaml"),
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [d.yaml]\npatches:\n  - target: {kind: Deployment}\n    patch: |\n      spec: {replicas: 2}\n",
      );
      writeFileSync(join(dir, "d.yaml"), "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n");
      expect(() => kustomizeBuild(dir)).toThrow(/strategic-merge patches are not supported/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
