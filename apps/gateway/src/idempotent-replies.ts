import { hash, randomUUID } from "node:crypto";
import type { BatchReply, IdentifyReply } from "@cm/domain";
import { isCluster, replicasAcknowledged, type RedisConnection } from "@cm/queue";

/** How long a batch's answer is kept for a retry with its Idempotency-Key. */
export const IDEMPOTENT_REPLY_TTL_MS = 7 * 24 * 3_600_000;
/**
 * How long a batch being answered holds its key. Far longer than an answer takes once the body
 * is read (its queue writes time out after the micro-batchers' *_WRITE_TIMEOUT_MS): it only matters when a
 * gateway dies mid-answer, and then retries get 409 until it expires.
 */
export const IN_FLIGHT_TTL_MS = 60_000;

/**
 * Sets the key KEYS[1] (the project's KEYS[2] followed by ':' and ARGV[3]) to ARGV[1] for ARGV[2]
 * ms unless it is set; returns what it held. A key set joins the project's index KEYS[2] as its
 * newest (scored one past the newest, so that keys set within one millisecond keep their order):
 * past ARGV[4] keys, the oldest are forgotten. The index lives ARGV[5] ms past its newest key.
 */
const CLAIM = `
local held = redis.call('GET', KEYS[1])
if held then return held end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
local newest = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')[2]
redis.call('ZADD', KEYS[2], (tonumber(newest) or 0) + 1, ARGV[3])
local over = redis.call('ZCARD', KEYS[2]) - tonumber(ARGV[4])
if over > 0 then
  for _, forgotten in ipairs(redis.call('ZRANGE', KEYS[2], 0, over - 1)) do
    redis.call('DEL', KEYS[2] .. ':' .. forgotten)
  end
  redis.call('ZREMRANGEBYRANK', KEYS[2], 0, over - 1)
end
redis.call('PEXPIRE', KEYS[2], ARGV[5])
return false
`;

/**
 * Replaces the key's value if it still is ARGV[1]: with ARGV[2] for ARGV[3] ms, or deleted
 * without it. A claim forgotten meanwhile (expired, or its project's oldest past the bound)
 * stays forgotten: kept again, it would be outside the project's index and bound.
 */
const SETTLE = `
local held = redis.call('GET', KEYS[1])
if held ~= ARGV[1] then return 0 end
if ARGV[2] == '' then return redis.call('DEL', KEYS[1]) end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1
`;

/** What a key holds: the digest of the body it was first sent with, how it was read, and its answer once there is one. */
interface Held {
  body: string;
  /** The same text read another way (JSON, NDJSON) is another body. Absent from keys held by gateways before it. */
  readAs?: string;
  /** Whose answer is awaited, while there is none. */
  claim?: string;
  /** How many operations the batch held, and the answers that were not Success (index, status, message). */
  count?: number;
  refused?: [number, number, string][];
}

const SUCCESS: IdentifyReply = { status: 200, message: "Success." };

/** Most answers are Success: only the others are kept, so that a key costs about 150 bytes. */
function held(sent: Pick<Held, "body" | "readAs">, reply: BatchReply): Held {
  const refused = reply.results.flatMap((result, index): [number, number, string][] =>
    result.status === SUCCESS.status ? [] : [[index, result.status, result.message]],
  );
  return { ...sent, count: reply.results.length, refused };
}

function replyOf({ count = 0, refused = [] }: Held): BatchReply {
  const results = Array.from({ length: count }, () => SUCCESS);
  for (const [index, status, message] of refused) results[index] = { status, message };
  return { ...SUCCESS, results };
}

/** A key's state as a request finds it. */
export type Claim =
  /** The request holds the key: it answers, then settles the key with its answer (or frees it). */
  | { state: "claimed"; settle(reply: BatchReply | null): Promise<void> }
  /** An earlier request with this body was answered so. */
  | { state: "answered"; reply: BatchReply }
  /** An earlier request with this body is still being answered. */
  | { state: "in-flight" }
  /** The key was sent with another body. */
  | { state: "other-body" };

const digest = (text: string) => hash("sha256", text, "base64url");

/**
 * The name of a project's index of keys, which each of its keys' names begins with. The script
 * that claims a key trims the project's index, so on a Redis Cluster all of a project's keys must
 * be in one slot: there the index's name is a hash tag (`{cm:batch-replies:7}`). Off a cluster
 * the keys keep the names the previous release gives them, so that a retry across a rolling
 * update is answered.
 */
export function batchRepliesIndex(redis: RedisConnection, keyPrefix: string, projectId: number): string {
  const index = `${keyPrefix}:batch-replies:${projectId}`;
  return isCluster(redis) ? `{${index}}` : index;
}

/**
 * Batch answers by Idempotency-Key, per project, in Redis: a retry of a batch gets the answer the
 * first request got, and queues nothing again. Keys may hold anything a client chose (ids,
 * emails), so they and the bodies are kept as SHA-256 digests only. A project keeps at most
 * `keysPerProject` keys, its oldest forgotten first: one client's keys never fill Redis for all.
 */
export class IdempotentReplies {
  constructor(
    private readonly redis: RedisConnection,
    private readonly keyPrefix: string,
    private readonly keysPerProject: number,
  ) {}

  async claim(projectId: number, key: string, body: string, readAs: string): Promise<Claim> {
    const index = batchRepliesIndex(this.redis, this.keyPrefix, projectId);
    const keyDigest = digest(key);
    const redisKey = `${index}:${keyDigest}`;
    const sent = { body: digest(body), readAs };
    const mine = JSON.stringify({ ...sent, claim: randomUUID() } satisfies Held);
    const found = (await this.redis.eval(
      CLAIM,
      2,
      redisKey,
      index,
      mine,
      IN_FLIGHT_TTL_MS,
      keyDigest,
      this.keysPerProject,
      IDEMPOTENT_REPLY_TTL_MS,
    )) as string | null;
    if (found === null) {
      return {
        state: "claimed",
        settle: async (reply) => {
          const answer = reply === null ? "" : JSON.stringify(held(sent, reply));
          await this.redis.eval(SETTLE, 1, redisKey, mine, answer, IDEMPOTENT_REPLY_TTL_MS);
          // An answer kept on the primary alone is lost in a failover, and a retry of a batch
          // whose 200 never reached its client would then queue it again.
          if (reply !== null) await replicasAcknowledged(this.redis, redisKey);
        },
      };
    }
    const other = JSON.parse(found) as Held;
    if (other.body !== sent.body || (other.readAs !== undefined && other.readAs !== readAs)) {
      return { state: "other-body" };
    }
    return other.count === undefined ? { state: "in-flight" } : { state: "answered", reply: replyOf(other) };
  }
}
