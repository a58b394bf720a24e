import { logThrottle } from "@cm/config";
import type { RedisConnection } from "@cm/queue";
import type { Logger } from "pino";

/**
 * One token bucket per project in Redis, shared by every gateway: `rate` requests a second,
 * `burst` at most at once. Redis's clock refills it, so gateways' clocks do not matter.
 * Returns the tokens granted (at most the lease asked for) and the tokens left.
 */
const TAKE_LEASE = `
local rate, burst, want = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens, at = tonumber(state[1]) or burst, tonumber(state[2]) or now
if now > at then tokens = math.min(burst, tokens + (now - at) * rate / 1000) end
local granted = math.min(want, math.floor(tokens))
tokens = tokens - granted
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(math.max(now, at)))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst / rate * 1000) + 1000)
return {granted, math.floor(tokens)}
`;

export interface RateLimitPolicy {
  /** Requests a second per project, across all gateways. */
  rate: number;
  /** Requests a project may send at once after a quiet spell. */
  burst: number;
}

export interface RateLimitVerdict {
  allowed: boolean;
  /** The bucket's capacity: the most requests the project may send at once (the burst). */
  limit: number;
  /** Requests the project may still send now (as this gateway last heard, plus its lease), at most `limit`. */
  remaining: number;
  /** Seconds until a refused request may be sent again, or the bucket is full again. */
  resetSeconds: number;
}

/** Each gateway takes tokens from Redis in leases of this share of a second's rate. */
const LEASE_SECONDS = 0.02;
/** A lease not spent within this long goes unused: another gateway may need the rate now. */
const LEASE_LIFETIME_MS = 1_000;
/**
 * How long requests wait for a lease before the limit goes unchecked. A stalled Redis answers
 * nothing, not an error: without this bound every request of a project waited out the stall
 * (test/faults/redis-stalled), past the deadline the queue write keeps.
 */
const LEASE_WAIT_MS = 500;

class LeaseTimedOut extends Error {}

/** `promise`, or a LeaseTimedOut after `ms`; the late answer, if any, is ignored. */
function within<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new LeaseTimedOut(`no lease within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

interface Allowance {
  leased: number;
  leasedAt: number;
  /** Tokens left in the shared bucket at the last lease. */
  shared: number;
  /** Refused until then without asking Redis again. */
  refusedUntil: number;
  pending: Promise<void> | null;
}

/**
 * Per-project rate limits without a Redis round trip per request: a gateway takes a lease of
 * tokens from the project's shared bucket (one round trip per lease: 2% of a second's rate)
 * and spends it locally. When the bucket is empty the gateway refuses locally until it has
 * refilled enough for a lease. If Redis cannot be asked, requests are let through: limits
 * protect the service, an unreachable Redis must not turn them into an outage of reads.
 */
export class RateLimiter {
  private readonly allowances = new Map<number, Allowance>();
  private readonly leaseSize: number;
  private readonly logUnchecked = logThrottle(1);

  constructor(
    private readonly redis: RedisConnection,
    private readonly keyPrefix: string,
    private readonly policy: RateLimitPolicy,
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
  ) {
    this.leaseSize = Math.max(1, Math.min(policy.burst, Math.round(policy.rate * LEASE_SECONDS)));
  }

  /** Synchronous while the gateway's lease lasts (nearly every request): no await on the hot path. */
  take(projectId: number): RateLimitVerdict | Promise<RateLimitVerdict> {
    let allowance = this.allowances.get(projectId);
    if (allowance === undefined) {
      allowance = { leased: 0, leasedAt: 0, shared: this.policy.burst, refusedUntil: 0, pending: null };
      this.allowances.set(projectId, allowance);
    }
    const now = this.now();
    if (allowance.leased > 0 && now - allowance.leasedAt > LEASE_LIFETIME_MS) allowance.leased = 0;
    if (allowance.leased === 0 && now >= allowance.refusedUntil) {
      const waiting = allowance;
      waiting.pending ??= this.lease(projectId, waiting).finally(() => {
        waiting.pending = null;
      });
      // Again, not spend: requests that waited together for one lease may outnumber it, and
      // those it did not cover lease again while the shared bucket has tokens.
      return waiting.pending.then(() => this.take(projectId));
    }
    return this.spend(allowance);
  }

  private spend(allowance: Allowance): RateLimitVerdict {
    if (allowance.leased > 0) {
      allowance.leased -= 1;
      // Shared and leased may add up past the burst when a lease was not taken from Redis (unreachable).
      const remaining = Math.min(this.policy.burst, allowance.shared + allowance.leased);
      return {
        allowed: true,
        limit: this.policy.burst,
        remaining,
        resetSeconds: Math.ceil((this.policy.burst - remaining) / this.policy.rate),
      };
    }
    const wait = Math.max(allowance.refusedUntil - this.now(), 1);
    return { allowed: false, limit: this.policy.burst, remaining: 0, resetSeconds: Math.ceil(wait / 1000) };
  }

  private async lease(projectId: number, allowance: Allowance): Promise<void> {
    try {
      const [granted, shared] = (await within(
        this.redis.eval(
          TAKE_LEASE,
          1,
          `${this.keyPrefix}:ratelimit:${projectId}`,
          this.policy.rate,
          this.policy.burst,
          this.leaseSize,
        ),
        LEASE_WAIT_MS,
      )) as [number, number];
      allowance.leased = granted;
      allowance.shared = shared;
      allowance.leasedAt = this.now();
      if (granted === 0) allowance.refusedUntil = this.now() + Math.ceil((this.leaseSize * 1000) / this.policy.rate);
    } catch (error) {
      const err = error instanceof Error ? error.message : String(error);
      this.logUnchecked((suppressed) =>
        this.logger.warn({ err, projectId, suppressed }, "rate limit not checked: Redis unreachable"),
      );
      allowance.leased = this.leaseSize;
      allowance.leasedAt = this.now();
    }
  }
}
