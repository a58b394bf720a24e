/**
 * A token bucket: `rate` tokens a second, holding at most `burst`. The same rule runs in Redis
 * for the limits shared by every gateway (apps/gateway/src/rate-limit/rate-limiter.ts).
 */
export class TokenBucket {
  private tokens: number;
  private at: number;

  constructor(
    private readonly rate: number,
    private readonly burst: number,
    private readonly now: () => number = Date.now,
  ) {
    this.tokens = burst;
    this.at = now();
  }

  /** Takes `count` tokens when there are as many. */
  tryTake(count = 1): boolean {
    const now = this.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.at) * this.rate) / 1000);
    this.at = now;
    if (this.tokens < count) return false;
    this.tokens -= count;
    return true;
  }
}
