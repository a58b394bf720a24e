import { hash } from "node:crypto";
import type { Credential } from "@cm/db";
import { TokenBucket } from "@cm/domain";

export class CredentialStoreUnavailable extends Error {}

/** Too many tokens the cache does not know were looked up lately: this one waits its turn. */
export class CredentialLookupsThrottled extends Error {}

export interface CredentialCacheOptions {
  /** How long a verdict is trusted without asking the store again. */
  ttlMs: number;
  /** Unknown tokens are remembered for less time, so a new credential works quickly. */
  negativeTtlMs: number;
  /** While the store is unreachable, an expired verdict younger than this still answers. */
  staleMs: number;
  maxEntries: number;
  /**
   * Lookups of tokens not in the cache, per second: a flood of random tokens would otherwise
   * reach Postgres at line rate. Known tokens keep answering from the cache meanwhile.
   */
  lookupsPerSecond: number;
}

interface Entry {
  credential: Credential | null;
  checkedAt: number;
}

const DEFAULTS: CredentialCacheOptions = {
  ttlMs: 30_000,
  negativeTtlMs: 5_000,
  staleMs: 600_000,
  maxEntries: 50_000,
  lookupsPerSecond: 500,
};

/**
 * Keeps the hot path off Postgres: verdicts are cached by a hash of the token (the token itself
 * is not kept), and concurrent requests with the same token share one lookup.
 */
export class CredentialCache {
  private readonly entries = new Map<string, Entry>();
  private readonly inFlight = new Map<string, Promise<Credential | null>>();
  private readonly options: CredentialCacheOptions;
  private readonly lookups: TokenBucket;

  constructor(
    private readonly lookup: (token: string) => Promise<Credential | null>,
    options: Partial<CredentialCacheOptions> = {},
    private readonly now: () => number = Date.now,
  ) {
    this.options = { ...DEFAULTS, ...options };
    this.lookups = new TokenBucket(this.options.lookupsPerSecond, this.options.lookupsPerSecond, now);
  }

  /**
   * The credential, null for an unknown token; throws CredentialStoreUnavailable when it cannot
   * tell, CredentialLookupsThrottled when it may not ask now.
   */
  async verify(token: string): Promise<Credential | null> {
    const cacheKey = hash("sha256", token, "base64");
    const entry = this.entries.get(cacheKey);
    if (entry !== undefined && this.isFresh(entry)) return entry.credential;

    let pending = this.inFlight.get(cacheKey);
    if (pending === undefined) {
      if (!this.lookups.tryTake()) {
        if (entry !== undefined && this.now() - entry.checkedAt < this.options.staleMs) return entry.credential;
        throw new CredentialLookupsThrottled("too many unknown tokens looked up lately");
      }
      pending = this.lookup(token).finally(() => this.inFlight.delete(cacheKey));
      this.inFlight.set(cacheKey, pending);
    }
    try {
      const credential = await pending;
      this.remember(cacheKey, { credential, checkedAt: this.now() });
      return credential;
    } catch (error) {
      if (entry !== undefined && this.now() - entry.checkedAt < this.options.staleMs) return entry.credential;
      throw new CredentialStoreUnavailable("credential store unreachable", { cause: error });
    }
  }

  private isFresh(entry: Entry): boolean {
    const ttl = entry.credential === null ? this.options.negativeTtlMs : this.options.ttlMs;
    return this.now() - entry.checkedAt < ttl;
  }

  private remember(cacheKey: string, entry: Entry): void {
    this.entries.delete(cacheKey);
    this.entries.set(cacheKey, entry);
    if (this.entries.size > this.options.maxEntries) {
      const oldest = this.entries.keys().next().value as string;
      this.entries.delete(oldest);
    }
  }
}
