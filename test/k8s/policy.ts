/**
 * Deployment policies for a rendered overlay (docs/operations-kubernetes.md). Each returns
 * readable violations; [] means the overlay complies.
 */
import { EVENTS_QUEUE, PROFILE_OPERATIONS_QUEUE, queueName, shardNumbers } from "@cm/queue";
import type { KObject } from "./kustomize";

export const MIN_TERMINATION_GRACE_SECONDS = 35;
/** apps/gateway/src/main.ts: after SHUTDOWN_DELAY_MS the gateway gets this long to stop. */
export const GATEWAY_SHUTDOWN_TIMEOUT_SECONDS = 25;

export interface PolicyContext {
  /** BullMQ queue names the ScaledObject must watch (from libs/queue). */
  queues: string[];
  /** Whether the overlay is expected to ship its own (placeholder) Secret. */
  shipsSecret: boolean;
}

const WORKLOAD_KINDS = new Set(["Deployment", "Job"]);
/** KEDA's scalers of a Redis list's length: on one server, on the primary Sentinels name, on a Redis Cluster. */
const REDIS_LIST_SCALERS = new Set(["redis", "redis-sentinel", "redis-cluster"]);
/** The queues split into INTAKE_QUEUE_SHARDS shards, each a queue of its own to watch. */
const INTAKE_QUEUES = new Set([PROFILE_OPERATIONS_QUEUE, EVENTS_QUEUE]);

function name(o: KObject): string {
  return `${o.kind}/${o.metadata?.name}`;
}

function labelsMatch(
  selector: Record<string, string> | undefined,
  labels: Record<string, string> | undefined,
): boolean {
  if (selector === undefined || Object.keys(selector).length === 0) return false;
  return Object.entries(selector).every(([k, v]) => labels?.[k] === v);
}

function configValue(objects: KObject[], key: string): string | undefined {
  const maps = objects.filter((o) => o.kind === "ConfigMap");
  return maps.map((m) => m.data?.[key]).find((v) => v !== undefined);
}

function portNumber(container: KObject, port: unknown): number | undefined {
  if (typeof port === "number")
    return (container.ports ?? []).some((p: KObject) => p.containerPort === port) ? port : undefined;
  return (container.ports ?? []).find((p: KObject) => p.name === port)?.containerPort;
}

export function policyViolations(objects: KObject[], context: PolicyContext): string[] {
  const v: string[] = [];
  const byKind = (kind: string) => objects.filter((o) => o.kind === kind);
  const find = (kind: string, n: string) => objects.find((o) => o.kind === kind && o.metadata?.name === n);
  const configMapNames = new Set(byKind("ConfigMap").map((o) => o.metadata.name));
  const secrets = new Map(byKind("Secret").map((o) => [o.metadata.name, o]));

  if (context.shipsSecret && secrets.size === 0) v.push("expected a (placeholder) Secret in this overlay");
  if (!context.shipsSecret && secrets.size > 0)
    v.push(`no Secret may be shipped here, found ${[...secrets.keys()].join(", ")}`);

  for (const workload of objects.filter((o) => WORKLOAD_KINDS.has(o.kind))) {
    const where = name(workload);
    const pod = workload.spec?.template?.spec ?? {};
    const podSecurity = pod.securityContext ?? {};
    if ((pod.terminationGracePeriodSeconds ?? 30) < MIN_TERMINATION_GRACE_SECONDS) {
      v.push(`${where}: terminationGracePeriodSeconds must be >= ${MIN_TERMINATION_GRACE_SECONDS}`);
    }
    if (pod.automountServiceAccountToken !== false) v.push(`${where}: automountServiceAccountToken must be false`);
    if (podSecurity.runAsUser === 0) v.push(`${where}: pod runs as uid 0`);
    const tmpVolumes = new Set(
      (pod.volumes ?? [])
        .filter((vol: KObject) => vol.emptyDir !== undefined)
        .map((vol: KObject) => vol.name as string),
    );
    const containers: KObject[] = [...(pod.initContainers ?? []), ...(pod.containers ?? [])];
    if ((pod.containers ?? []).length === 0) v.push(`${where}: no containers`);
    for (const c of containers) {
      const at = `${where} container ${c.name}`;
      const sc = c.securityContext ?? {};
      if ((sc.runAsNonRoot ?? podSecurity.runAsNonRoot) !== true) v.push(`${at}: runAsNonRoot must be true`);
      if ((sc.runAsUser ?? podSecurity.runAsUser) === 0) v.push(`${at}: runs as uid 0`);
      if (sc.readOnlyRootFilesystem !== true) v.push(`${at}: readOnlyRootFilesystem must be true`);
      if (sc.allowPrivilegeEscalation !== false) v.push(`${at}: allowPrivilegeEscalation must be false`);
      if (sc.privileged === true) v.push(`${at}: must not be privileged`);
      if (!(sc.capabilities?.drop ?? []).includes("ALL")) v.push(`${at}: capabilities must drop ALL`);
      if ((sc.capabilities?.add ?? []).length > 0) v.push(`${at}: must not add capabilities`);
      if ((sc.seccompProfile ?? podSecurity.seccompProfile)?.type !== "RuntimeDefault")
        v.push(`${at}: seccompProfile must be RuntimeDefault`);
      for (const kind of ["requests", "limits"]) {
        for (const resource of ["cpu", "memory"]) {
          if (c.resources?.[kind]?.[resource] === undefined) v.push(`${at}: resources.${kind}.${resource} missing`);
        }
      }
      const tmp = (c.volumeMounts ?? []).find((m: KObject) => m.mountPath === "/tmp");
      if (tmp === undefined || !tmpVolumes.has(tmp.name) || tmp.readOnly === true)
        v.push(`${at}: needs a writable emptyDir at /tmp`);
      if (
        typeof c.image !== "string" ||
        !/^[^@]+(:[\w][\w.-]*|@sha256:[0-9a-f]{64})$/.test(c.image.replace(/^[^/]+:\d+\//, ""))
      ) {
        v.push(`${at}: image "${c.image}" needs an explicit tag or digest`);
      } else if (c.image.endsWith(":latest")) v.push(`${at}: image must not use :latest`);
      for (const source of c.envFrom ?? []) {
        if (source.configMapRef && !configMapNames.has(source.configMapRef.name))
          v.push(`${at}: ConfigMap ${source.configMapRef.name} not in the output`);
      }
      for (const env of c.env ?? []) {
        const ref = env.valueFrom?.secretKeyRef;
        if (ref === undefined) continue;
        const secret = secrets.get(ref.name);
        if (context.shipsSecret && secret?.data?.[ref.key] === undefined)
          v.push(`${at}: Secret ${ref.name} has no key ${ref.key}`);
      }
    }
  }

  // Both long-running Deployments: probes, migrations first, an autoscaler owns the count.
  const queuePrefix = configValue(objects, "QUEUE_PREFIX");
  const expectations = [
    { deployment: "cm-gateway", container: "gateway", portKey: "PORT" },
    { deployment: "cm-worker", container: "worker", portKey: "METRICS_PORT" },
  ];
  for (const { deployment, container, portKey } of expectations) {
    const d = find("Deployment", deployment);
    if (d === undefined) {
      v.push(`Deployment ${deployment} missing`);
      continue;
    }
    const pod = d.spec.template.spec;
    const main = (pod.containers ?? []).find((c: KObject) => c.name === container);
    if (main === undefined) {
      v.push(`${deployment}: container ${container} missing`);
      continue;
    }
    if (d.spec.replicas !== undefined) v.push(`${deployment}: spec.replicas must be left to the autoscaler`);
    const expectedPort = Number(configValue(objects, portKey));
    for (const [probe, path] of [
      ["readinessProbe", "/readyz"],
      ["livenessProbe", "/healthz"],
    ] as const) {
      const get = main[probe]?.httpGet;
      if (get?.path !== path) v.push(`${deployment}: ${probe} must GET ${path}`);
      else if (portNumber(main, get.port) !== expectedPort)
        v.push(`${deployment}: ${probe} must use ${portKey} (${expectedPort})`);
    }
    const migrate = (pod.initContainers ?? []).find(
      (c: KObject) => (c.command ?? []).join(" ") === "node apps/ctl/dist/main.js migrate",
    );
    if (migrate === undefined) v.push(`${deployment}: needs an initContainer running the migrations`);
    else if (migrate.image !== main.image) v.push(`${deployment}: the migrate initContainer must use the app's image`);
    if (!labelsMatch(d.spec.selector?.matchLabels, d.spec.template.metadata?.labels))
      v.push(`${deployment}: selector does not match its pods`);
    const pdb = byKind("PodDisruptionBudget").find((p) =>
      labelsMatch(p.spec?.selector?.matchLabels, d.spec.template.metadata?.labels),
    );
    if (pdb === undefined) v.push(`${deployment}: no PodDisruptionBudget selects its pods`);
  }

  const gateway = find("Deployment", "cm-gateway")?.spec.template.spec.containers.find(
    (c: KObject) => c.name === "gateway",
  );
  const preStop = gateway?.lifecycle?.preStop?.exec?.command;
  if (!Array.isArray(preStop) || preStop[0] !== "sleep" || !(Number(preStop[1]) > 0))
    v.push("cm-gateway: needs a preStop sleep");
  else {
    const budget =
      Number(preStop[1]) +
      Number(configValue(objects, "SHUTDOWN_DELAY_MS") ?? 0) / 1000 +
      GATEWAY_SHUTDOWN_TIMEOUT_SECONDS;
    const grace = find("Deployment", "cm-gateway")!.spec.template.spec.terminationGracePeriodSeconds ?? 30;
    if (grace <= budget)
      v.push(
        `cm-gateway: terminationGracePeriodSeconds ${grace} must exceed preStop + SHUTDOWN_DELAY_MS + ${GATEWAY_SHUTDOWN_TIMEOUT_SECONDS} s (${budget} s)`,
      );
  }
  const service = find("Service", "cm-gateway");
  const gatewayPodLabels = find("Deployment", "cm-gateway")?.spec.template.metadata?.labels;
  if (service === undefined || !labelsMatch(service.spec?.selector, gatewayPodLabels))
    v.push("Service cm-gateway must select the gateway pods");
  else if (gateway && portNumber(gateway, service.spec.ports?.[0]?.targetPort) === undefined)
    v.push("Service cm-gateway targets no gateway port");

  const hpa = find("HorizontalPodAutoscaler", "cm-gateway");
  const cpu = hpa?.spec?.metrics?.find((m: KObject) => m.type === "Resource" && m.resource?.name === "cpu");
  if (
    hpa?.apiVersion !== "autoscaling/v2" ||
    hpa.spec.scaleTargetRef?.name !== "cm-gateway" ||
    cpu?.resource?.target?.type !== "Utilization"
  ) {
    v.push("cm-gateway needs an autoscaling/v2 HPA on CPU utilisation");
  } else if (!(hpa.spec.minReplicas >= 1 && hpa.spec.maxReplicas >= hpa.spec.minReplicas))
    v.push("HPA cm-gateway has a bad range");

  const so = find("ScaledObject", "cm-worker");
  if (so === undefined || so.spec?.scaleTargetRef?.name !== "cm-worker")
    v.push("cm-worker needs a ScaledObject targeting it");
  else {
    if (!(so.spec.minReplicaCount >= 1 && so.spec.maxReplicaCount >= so.spec.minReplicaCount))
      v.push("ScaledObject cm-worker has a bad range");
    const lists = (so.spec.triggers ?? []).map((t: KObject) =>
      REDIS_LIST_SCALERS.has(t.type) ? t.metadata?.listName : undefined,
    );
    const clusterNodes = configValue(objects, "REDIS_CLUSTER_NODES");
    const shards = shardNumbers(Number(configValue(objects, "INTAKE_QUEUE_SHARDS") ?? 1));
    for (const queue of context.queues) {
      for (const shard of INTAKE_QUEUES.has(queue) ? shards : [0]) {
        const wanted = `${queuePrefix}:${queueName(queue, clusterNodes !== undefined, shard)}:wait`;
        if (!lists.includes(wanted)) v.push(`ScaledObject cm-worker has no redis trigger on ${wanted}`);
      }
    }
    for (const trigger of so.spec.triggers ?? []) {
      // KEDA must read the primary the processes write to.
      if (trigger.type === "redis-sentinel") {
        const sentinels = configValue(objects, "REDIS_SENTINELS");
        const name = configValue(objects, "REDIS_SENTINEL_NAME") ?? "mymaster";
        if (trigger.metadata?.addresses !== sentinels || trigger.metadata?.sentinelMaster !== name)
          v.push(
            `ScaledObject trigger ${trigger.name}: not on the Sentinels ${sentinels} and primary ${name} of the processes`,
          );
      }
      if (trigger.type === "redis-cluster" && trigger.metadata?.addresses !== clusterNodes)
        v.push(`ScaledObject trigger ${trigger.name}: not on the Redis Cluster nodes ${clusterNodes} of the processes`);
      if (clusterNodes !== undefined && trigger.type !== "redis-cluster")
        v.push(`ScaledObject trigger ${trigger.name}: the processes are on a Redis Cluster, the trigger is not`);
      const auth = trigger.authenticationRef?.name;
      const ta = auth && find("TriggerAuthentication", auth);
      if (!ta) v.push(`ScaledObject trigger ${trigger.name}: TriggerAuthentication ${auth} missing`);
      else if (context.shipsSecret) {
        for (const ref of ta.spec?.secretTargetRef ?? []) {
          if (secrets.get(ref.name)?.data?.[ref.key] === undefined)
            v.push(`TriggerAuthentication ${auth}: Secret ${ref.name} has no key ${ref.key}`);
        }
      }
    }
  }

  const job = byKind("Job").find((j) =>
    (j.spec?.template?.spec?.containers ?? []).some(
      (c: KObject) => (c.command ?? []).join(" ") === "node apps/ctl/dist/main.js migrate",
    ),
  );
  if (job === undefined) v.push("a migration Job is missing");
  return v;
}
