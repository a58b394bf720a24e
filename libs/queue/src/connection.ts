import type { Config } from "@cm/config";
import { Redis, type RedisOptions } from "ioredis";
import { acknowledgeWrites } from "./replica-acknowledgement";

/** What a Redis connection is made from: the server, or the Sentinels that know its primary, and the replicas a job write must reach. */
export type RedisSettings = Pick<Config, "redisUrl" | "redisSentinel" | "redisReplicasAck">;

/** Where a deployment's queues are: its Redis, and the prefix of their keys (QUEUE_PREFIX). */
export interface QueuesAt {
  redis: RedisSettings;
  prefix: string;
}

/**
 * Every connection to Redis of the apps is made here. With Sentinels, ioredis asks them for the
 * primary at each (re)connection and checks that the server it reaches is one (ROLE, at its ready
 * check); a primary demoted closes its clients' connections, or refuses their writes (READONLY).
 * Not ioredis's failoverDetector: a promotion announced while a connection was being made again
 * ended it for good (status "end": every write 500 until a restart, in test/faults/redis-failover).
 * Without Sentinels, a managed service's failover moves its address (DNS) to the promoted replica.
 */
function connection(settings: RedisSettings, given: RedisOptions): Redis {
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
 * Producers fail fast while Redis is away, so a request gets its 500 at once instead of
 * waiting in an offline queue; consumers (BullMQ workers) must retry forever instead. A
 * producer's job writes wait for the replicas REDIS_REPLICAS_ACK asks for (batch-queues.ts).
 */
export function producerConnection(settings: RedisSettings): Redis {
  const redis = connection(settings, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    commandTimeout: 5_000,
    connectTimeout: 5_000,
  });
  acknowledgeWrites(redis, settings.redisReplicasAck.replicas, settings.redisReplicasAck.timeoutMs);
  return redis;
}

export function consumerConnection(settings: RedisSettings): Redis {
  return connection(settings, { maxRetriesPerRequest: null, connectTimeout: 5_000 });
}
