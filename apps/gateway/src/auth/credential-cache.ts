import { hash } from "node:crypto";
import type { Credential } from "@cm/db";
import { TokenBucket } from "@cm/domain";

export class CredentialStoreUnavailable extends Error {}

/** Too many tokens the cache does not know were looked up lately: this one waits its turn. */
export class CredentialLookupsThrottled extends Error {
  readonly kind = "overloaded";
}

export interface CredentialCacheOptions {
  /** How long a verdict is trusted without asking the store again. */
  ttlMs: number;
  /** Unknown tokens are remembered for less time, so a new credential works quickly. */
  negativeTtlMs: number;
  /**
   * While the store is unreachable (and only then), an expired verdict younger than this still
   * answers: a revoked credential may work that long during an outage of the store.
   */
  staleMs: number;
  /** Verdicts kept of tokens that name a credential... */
  maxEntries: number;
  /** ...and, apart, of tokens that name none: random tokens never push a valid verdict out. */
  maxUnknownEntries: number;
  /**
   * Lookups of tokens with no valid verdict, per second: a flood of random tokens would otherwise
   * reach Postgres at line rate. A valid verdict's refresh is never held back by it: a revoked
   * credential stops within ttlMs whatever the flood.
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
  maxUnknownEntries: 10_000,
  lookupsPerSecond: 500,
};

/**
 * Keeps the hot path off Postgres: verdicts are cached by a hash of the token (the token itself
 * is not kept), and concurrent requests with the same token share one lookup. Valid verdicts
 * and unknown ones are kept in maps of their own, each bounded, oldest out: a flood of random
 * tokens (the identify token sits in web pages, so anyone can send look-alikes) fills only the
 * second, and the lookup limit never applies to refreshing a valid verdict (at most maxEntries
 * lookups per ttlMs), so a revoke takes effect within ttlMs.
 */
export class CredentialCache {
  private readonly valid = new Map<string, Entry>();
  private readonly unknown = new Map<string, Entry>();
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
    const entry = this.valid.get(cacheKey) ?? this.unknown.get(cacheKey);
    if (entry !== undefined && this.isFresh(entry)) return entry.credential;

    let pending = this.inFlight.get(cacheKey);
    if (pending === undefined) {
      const known = entry !== undefined && entry.credential !== null;
      if (!known && !this.lookups.tryTake()) {
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

  /**
   * Drops the verdicts on the credential `id`, so that its revocation through this gateway holds
   * here from the next request; other gateways learn of it within ttlMs. Revocations are rare:
   * going through the verdicts (at most maxEntries) costs them alone.
   */
  forget(id: string): void {
    for (const [cacheKey, entry] of this.valid) {
      if (entry.credential?.id === id) this.valid.delete(cacheKey);
    }
  }

  private isFresh(entry: Entry): boolean {
    const ttl = entry.credential === null ? this.options.negativeTtlMs : this.options.ttlMs;
    return this.now() - entry.checkedAt < ttl;
  }

  private remember(cacheKey: string, entry: Entry): void {
    this.valid.delete(cacheKey);
    this.unknown.delete(cacheKey);
    const [entries, max] =
      entry.credential === null
        ? [this.unknown, this.options.maxUnknownEntries]
        : [this.valid, this.options.maxEntries];
    entries.set(cacheKey, entry);
    if (entries.size > max) entries.delete(entries.keys().next().value as string);
  }
}
