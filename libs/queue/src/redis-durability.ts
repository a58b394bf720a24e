import { NotReady } from "@cm/config";
import type { Redis } from "ioredis";
import { isCluster, primariesOf, type RedisConnection } from "./redis-nodes";

/**
 * What in the settings of the Redis servers that take writes could lose an identify that was
 * answered 200 (docs/operations-redis.md): each problem once, whichever primaries of a cluster
 * have it. Null when a server does not let us read them (CONFIG is renamed or forbidden on some
 * managed services): then nobody here can tell.
 */
export async function redisDurabilityProblems(connection: RedisConnection): Promise<string[] | null> {
  const problems = await Promise.all((await primariesOf(connection)).map(serverDurabilityProblems));
  return problems.includes(null) ? null : [...new Set(problems.flatMap((found) => found ?? []))];
}

async function serverDurabilityProblems(redis: Redis): Promise<string[] | null> {
  let settings: Record<string, string>;
  try {
    const pairs = (await redis.config("GET", "*")) as string[];
    settings = Object.fromEntries(pairs.flatMap((_, i) => (i % 2 === 0 ? [[pairs[i], pairs[i + 1]]] : [])));
  } catch {
    return null;
  }
  const problems: string[] = [];
  if (settings.appendonly !== "yes")
    problems.push("appendonly is not yes: a Redis restart loses every queued identify");
  else if (settings.appendfsync === "no")
    problems.push("appendfsync is no: a machine crash loses the last ~30 s of queued identifies");
  const policy = settings["maxmemory-policy"];
  if (policy !== undefined && policy !== "noeviction") {
    problems.push(`maxmemory-policy is ${policy}: Redis evicts keys when full, queued identifies included`);
  }
  return problems;
}

/** Memory used as a share of maxmemory (0 when Redis has no limit): of the fullest primary, on a cluster. */
export async function redisMemoryUse(connection: RedisConnection): Promise<number> {
  return Math.max(0, ...(await Promise.all((await primariesOf(connection)).map(serverMemoryUse))));
}

async function serverMemoryUse(redis: Redis): Promise<number> {
  const info = await redis.info("memory");
  const field = (name: string) => Number(new RegExp(`^${name}:(\\d+)`, "m").exec(info)?.[1] ?? 0);
  const limit = field("maxmemory");
  return limit === 0 ? 0 : field("used_memory") / limit;
}

/** Past this share of maxmemory a process reports not ready, before writes start failing. */
export const REDIS_MEMORY_READY_LIMIT = 0.95;

/** Redis refused a write because it reached maxmemory (with noeviction, as it must run). */
export function isRedisOutOfMemory(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith("OOM ");
}

/** REDIS_DURABILITY: refuse to run on a Redis that can lose accepted identifies, or only warn. */
export type RedisDurabilityMode = "require" | "warn";

/**
 * At start-up: throws when Redis may lose accepted identifies and the mode requires it not to,
 * warns otherwise (and when its settings cannot be read).
 */
export async function checkRedisDurability(
  redis: RedisConnection,
  mode: RedisDurabilityMode,
  warn: (message: string) => void,
): Promise<void> {
  const problems = await redisDurabilityProblems(redis);
  if (problems === null) {
    warn("Redis does not let us read its settings (CONFIG GET): durability not verified (docs/operations-redis.md)");
    return;
  }
  if (problems.length === 0) return;
  const message = `Redis may lose accepted identifies: ${problems.join("; ")}`;
  if (mode === "require") {
    throw new Error(
      `${message}. Fix its settings (docs/operations-redis.md), or set REDIS_DURABILITY=warn to run anyway.`,
    );
  }
  warn(message);
}

/**
 * A replica acknowledges its primary's stream every second (INFO's `lag`: seconds since its
 * last acknowledgement). One silent for longer, stalled or cut off though its link is still
 * `online` until repl-timeout (60 s), cannot confirm a write now.
 */
export const REPLICA_SILENT_LIMIT_S = 2;

/**
 * Replicas of the primary this connection reaches that are in sync with it (INFO replication:
 * online, and heard from within REPLICA_SILENT_LIMIT_S): on a cluster, of the primary that has
 * the fewest, since each replicates its own slots' writes.
 */
export async function replicasInSync(connection: RedisConnection): Promise<number> {
  const counts = await Promise.all(
    (await primariesOf(connection)).map(async (redis) => {
      const replicas = (await redis.info("replication")).match(/^slave\d+:.*$/gm) ?? [];
      return replicas.filter((replica) => {
        const lag = Number(/,lag=(\d+)/.exec(replica)?.[1] ?? Infinity);
        return replica.includes("state=online") && lag <= REPLICA_SILENT_LIMIT_S;
      }).length;
    }),
  );
  return counts.length === 0 ? 0 : Math.min(...counts);
}

/** Redis's min-replicas-to-write, or null where CONFIG GET is not allowed (managed services). */
async function minReplicasToWrite(redis: Redis): Promise<number | null> {
  try {
    const [, value] = (await redis.config("GET", "min-replicas-to-write")) as string[];
    return value === undefined ? null : Number(value);
  } catch {
    return null;
  }
}

/**
 * Why a primary this connection reaches would refuse a write now, or null: it is a replica
 * (READONLY: a URL left on a node that was demoted), or it has fewer good replicas than its
 * min-replicas-to-write (NOREPLICAS).
 */
async function writesRefused(connection: RedisConnection): Promise<string | null> {
  for (const redis of await primariesOf(connection)) {
    const info = await redis.info("replication");
    if (!/^role:master\b/m.test(info)) return "the Redis it writes to is a replica: it refuses writes (READONLY)";
    const good = /^min_slaves_good_slaves:(\d+)/m.exec(info)?.[1];
    const wanted = good === undefined ? null : await minReplicasToWrite(redis);
    if (good !== undefined && wanted !== null && Number(good) < wanted) {
      return `the Redis primary has ${good} good replicas of the ${wanted} its min-replicas-to-write needs: it refuses writes (NOREPLICAS)`;
    }
  }
  return null;
}

/**
 * A Redis Cluster takes writes while its own state is ok (CLUSTER INFO, as the node asked sees
 * it): with cluster-require-full-coverage yes (Redis's default), not once any slot has no primary.
 */
async function clusterState(connection: RedisConnection): Promise<string> {
  if (!isCluster(connection)) return "ok";
  const info = (await connection.cluster("INFO")) as string;
  return /^cluster_state:(\w+)/m.exec(info)?.[1] ?? "unknown";
}

/**
 * For readiness probes: Redis answers (a cluster's state is ok), takes writes (a primary, with
 * the replicas its min-replicas-to-write needs), has room (below 95% of maxmemory, so that traffic moves
 * elsewhere before writes fail), and, where durability is required, cannot lose jobs; where
 * writes wait for replicas (`replicasAck`), the primary has that many in sync, or every write
 * would wait for them in vain and be answered 503: within seconds of a replica stalling, and
 * ready again once it acknowledges.
 */
export async function checkRedisReady(
  redis: RedisConnection,
  mode: RedisDurabilityMode,
  replicasAck = 0,
): Promise<void> {
  const [state, refused, memory, problems, replicas] = await Promise.all([
    clusterState(redis),
    writesRefused(redis),
    redisMemoryUse(redis),
    mode === "require" ? redisDurabilityProblems(redis) : Promise.resolve([]),
    replicasAck > 0 ? replicasInSync(redis) : Promise.resolve(0),
  ]);
  if (state !== "ok") throw new NotReady(`the Redis Cluster's state is ${state}`);
  if (refused !== null) throw new NotReady(refused);
  if (memory >= REDIS_MEMORY_READY_LIMIT) throw new NotReady(`Redis is at ${Math.round(memory * 100)}% of maxmemory`);
  if (problems !== null && problems.length > 0) throw new NotReady("Redis may lose accepted identifies");
  if (replicas < replicasAck) {
    throw new NotReady(
      `the Redis primary has ${replicas} replicas in sync, of the ${replicasAck} REDIS_REPLICAS_ACK requires`,
    );
  }
}
