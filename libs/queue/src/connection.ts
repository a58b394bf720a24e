import type { Config } from "@cm/config";
import { Cluster, Redis, type ClusterNode, type ClusterOptions, type RedisOptions } from "ioredis";
import type { RedisConnection } from "./redis-nodes";
import { acknowledgeWrites } from "./replica-acknowledgement";

/**
 * What a Redis connection is made from: the server, or the Sentinels that know its primary, or
 * nodes of a Redis Cluster; and the replicas a job write must reach.
 */
export type RedisSettings = Pick<Config, "redisUrl" | "redisSentinel" | "redisCluster" | "redisReplicasAck">;

/** Where a deployment's queues are: its Redis, the prefix of their keys (QUEUE_PREFIX) and the intake's shards (INTAKE_QUEUE_SHARDS). */
export interface QueuesAt {
  redis: RedisSettings;
  prefix: string;
  shards: number;
}

/**
 * A Redis Cluster's client: ioredis asks the nodes given for the others and the slots each
 * serves, sends each command to the primary of its key's slot, and follows the cluster when it
 * moves slots or promotes a replica (MOVED, a node lost). REDIS_URL gives every node's user,
 * password and TLS (rediss:).
 */
function clusterConnection(
  settings: RedisSettings,
  nodes: ClusterNode[],
  given: RedisOptions,
  clusterOptions: ClusterOptions,
): Cluster {
  const url = new URL(settings.redisUrl);
  const { enableOfflineQueue, ...redisOptions } = given;
  return new Cluster(nodes, {
    ...clusterOptions,
    ...(enableOfflineQueue === undefined ? {} : { enableOfflineQueue }),
    redisOptions: {
      ...redisOptions,
      ...(url.username ? { username: decodeURIComponent(url.username) } : {}),
      ...(url.password ? { password: decodeURIComponent(url.password) } : {}),
      ...(url.protocol === "rediss:" ? { tls: {} } : {}),
    },
  });
}

/**
 * Every connection to Redis of the apps is made here. With Sentinels, ioredis asks them for the
 * primary at each (re)connection and checks that the server it reaches is one (ROLE, at its ready
 * check); a primary demoted closes its clients' connections, or refuses their writes (READONLY).
 * Not ioredis's failoverDetector: a promotion announced while a connection was being made again
 * ended it for good (status "end": every write 500 until a restart, in test/faults/redis-failover).
 * Without Sentinels, a managed service's failover moves its address (DNS) to the promoted replica.
 */
function connection(
  settings: RedisSettings,
  given: RedisOptions,
  clusterOptions: ClusterOptions = {},
): RedisConnection {
  if (settings.redisCluster !== undefined) {
    return clusterConnection(settings, settings.redisCluster.nodes, given, clusterOptions);
  }
  const options: RedisOptions = {
    ...given,
    // A write that reaches a primary demoted meanwhile is refused (READONLY): reconnect, to the new one.
    reconnectOnError: (error) => error.message.startsWith("READONLY"),
  };
  const sentinel = settings.redisSentinel;
  if (sentinel === undefined) return new Redis(settings.redisUrl, options);
  return new Redis(settings.redisUrl, {
    ...options,
    sentinels: sentinel.sentinels,
    name: sentinel.name,
    sentinelPassword: sentinel.password,
    role: "master",
    // The URL's rediss: sets `tls`, which a Sentinel-found primary is reached with only when told.
    enableTLSForSentinelMode: settings.redisUrl.startsWith("rediss:"),
  });
}

/**
 * Producers fail fast while Redis is away instead of waiting in an offline queue: the gateway
 * holds a write through a failover itself, trying it again within REDIS_FAILOVER_HOLD_MS, each try
 * within its write timeout; consumers (BullMQ workers) must retry forever instead. On a cluster, a
 * command goes through at most 4 redirections, not ioredis's 16 (100 ms apart while the cluster
 * is down or a node is lost: 1.6 s, which with the WAIT after it outlasted a try's 2 s). A
 * producer's job writes wait for the replicas REDIS_REPLICAS_ACK asks for (batch-queues.ts).
 */
export function producerConnection(settings: RedisSettings): RedisConnection {
  const redis = connection(
    settings,
    { enableOfflineQueue: false, maxRetriesPerRequest: 1, commandTimeout: 5_000, connectTimeout: 5_000 },
    { maxRedirections: 4 },
  );
  acknowledgeWrites(redis, settings.redisReplicasAck.replicas, settings.redisReplicasAck.timeoutMs);
  return redis;
}

export function consumerConnection(settings: RedisSettings): RedisConnection {
  return connection(settings, { maxRetriesPerRequest: null, connectTimeout: 5_000 });
}
