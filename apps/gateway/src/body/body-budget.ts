import { Transform, type Readable } from "node:stream";
import type { TokenBucket } from "@cm/domain";
import type Koa from "koa";
import { ApiError } from "../errors/api-error";

/**
 * Requests whose credential could not be checked before their body was read (it is in the body,
 * or there is none) share one owner, and so one share of the budget.
 */
export const UNVERIFIED = "unverified";

/** What a parsed JSON object or array costs the process beyond its text, about (V8, small objects). */
export const BYTES_PER_PARSED_OBJECT = 64;

/**
 * What a decompressor holds besides what it puts out: zlib's state, its 32 KiB window and its
 * 16 KiB output chunk (53 KiB measured, once 100 bytes went in). Without it, stalled compressed
 * bodies would hold memory the budget does not see: 10,000 of them about 520 MB.
 */
export const DECOMPRESSOR_BYTES = 64 * 1024;

/** A request holding some of the budget, as the budget sees it. */
export interface Hold {
  /** A project (`project:<id>`), or UNVERIFIED. */
  readonly owner: string;
  /** The address it came from: an owner's share is shared between its clients. */
  readonly client: string;
  /** Whether cutting it off frees what it holds: its body is still arriving. */
  readonly cuttable: boolean;
  /** Ends its read with 503; the budget has released what it held. */
  cutOff(): void;
}

type Holds = ReadonlyMap<Hold, number>;

/**
 * Whom to cut off so that `mine` (a `key` of `holds`) gets its fair share of `capacity`, the
 * capacity split evenly between the keys holding some, its own included: nobody when it holds
 * that share already; else the most recent request still arriving of those whose key holds more
 * than the share, the largest first.
 */
function fairVictim(holds: Holds, key: (hold: Hold) => string, mine: string, capacity: number): Hold | undefined {
  const held = new Map<string, number>();
  for (const [hold, bytes] of holds) held.set(key(hold), (held.get(key(hold)) ?? 0) + bytes);
  const share = capacity / new Set([...held.keys(), mine]).size;
  if ((held.get(mine) ?? 0) >= share) return undefined;
  const over = [...held].filter(([, bytes]) => bytes > share).sort(([, a], [, b]) => b - a);
  for (const [name] of over) {
    const cuttable = [...holds.keys()].filter((hold) => key(hold) === name && hold.cuttable);
    if (cuttable.length > 0) return cuttable[cuttable.length - 1];
  }
  return undefined;
}

/**
 * Whose request is cut off to make room for `requester` when the budget (`maxBytes`) is full
 * (`holds`: what each request holds, oldest first): max-min fairness between owners, then
 * between the clients of the requester's owner, for what that owner holds. Nobody's when the
 * requester's owner and client hold their shares: the requester is refused.
 */
export function victimFor(holds: Holds, requester: Hold, maxBytes: number): Hold | undefined {
  const sameOwner = new Map([...holds].filter(([hold]) => hold.owner === requester.owner));
  const ownerHolds = [...sameOwner.values()].reduce((sum, bytes) => sum + bytes, 0);
  return (
    fairVictim(holds, (hold) => hold.owner, requester.owner, maxBytes) ??
    fairVictim(sameOwner, (hold) => hold.client, requester.client, ownerHolds)
  );
}

/**
 * The bytes of request bodies one gateway process reads and holds at once, raw and parsed.
 * Micro-batches bound what is written per job, but every request in flight holds its body until
 * its batch is written: 500 connections sending 256 KiB bodies took a gateway past 900 MiB.
 * A body holds its bytes as they arrive, inflated, not what it announces: a connection that
 * sends headers and then waits holds nothing.
 *
 * When it is full, an owner (a project whose token was checked before its body, or UNVERIFIED)
 * holding less than its fair share still gets room: the latest request still arriving of the
 * owner holding the most is cut off (503) to make it. Within an owner, its clients share the same
 * way. A request past its share when the budget is full is refused (503). Anyone may send bodies
 * in a project's name (the identify token sits in web pages), or in none, and hold what they
 * send until they are cut off: they then starve that project, or the unverified, never another.
 */
export class BodyBudget {
  private total = 0;
  /** What each request holds, oldest first. */
  private readonly holds = new Map<Hold, number>();

  constructor(private readonly maxBytes: number) {}

  /**
   * Room for `bytes` more for `hold`, made by cutting others off where victimFor says. A request
   * always fits when it is all the budget holds: any one request within its body limit can be served.
   */
  tryReserve(hold: Hold, bytes: number): boolean {
    while (this.total + bytes > this.maxBytes && this.total > (this.holds.get(hold) ?? 0)) {
      const victim = victimFor(this.holds, hold, this.maxBytes);
      if (victim === undefined) return false;
      this.release(victim);
      victim.cutOff();
    }
    this.total += bytes;
    this.holds.set(hold, (this.holds.get(hold) ?? 0) + bytes);
    return true;
  }

  /** What every request holds together. */
  get held(): number {
    return this.total;
  }

  /** Releases what `hold` holds. */
  release(hold: Hold): void {
    this.total -= this.holds.get(hold) ?? 0;
    this.holds.delete(hold);
  }
}

/**
 * One request's hold on the budget: its body's bytes taken as they arrive (`metered`), then what
 * parsing it costs, all released when it is answered. `rate`: what its body's bytes also count
 * against as they arrive (the bodies read before their credential is checked).
 */
export class BodyReservation implements Hold {
  readonly client: string;
  private meter: Transform | undefined;
  /** Cut off or answered: it takes nothing more, though its body may still be arriving. */
  private ended = false;

  constructor(
    private readonly budget: BodyBudget,
    private readonly ctx: Koa.Context,
    readonly owner: string,
    private readonly rate?: TokenBucket,
  ) {
    this.client = ctx.ip;
  }

  /** The 503 a request is turned away with. Its connection is closed: that spares reading the rest of its body only to discard it. */
  private overloaded(reason: string): ApiError {
    this.ctx.set("Connection", "close");
    return ApiError.overloaded(reason);
  }

  /** Holds `bytes` more, or throws 503 when the budget has no room. */
  take(bytes: number): void {
    if (bytes <= 0) return;
    if (this.ended || !this.budget.tryReserve(this, bytes)) {
      throw this.overloaded("the gateway holds as many request bodies as BODY_BYTES_IN_FLIGHT allows");
    }
  }

  /**
   * `body` (inflated) passed on as it arrives, each chunk held before it is: an error (503) when
   * there is no room for it, or when the request is cut off. Destroy it once the body is read.
   */
  metered(body: Readable): Readable {
    const meter = new Transform({
      transform: (chunk: Buffer, _encoding, done) => {
        try {
          if (this.rate !== undefined && !this.rate.tryTake(chunk.length)) {
            throw this.overloaded(
              "bodies with their credential inside arrive faster than UNVERIFIED_BODY_BYTES_PER_SECOND",
            );
          }
          this.take(chunk.length);
          done(null, chunk);
        } catch (error) {
          done(error as Error);
        }
      },
    });
    body.on("error", (error) => meter.destroy(error));
    this.meter = meter;
    return body.pipe(meter);
  }

  get cuttable(): boolean {
    return this.meter !== undefined && !this.meter.destroyed;
  }

  cutOff(): void {
    this.ended = true;
    this.meter?.destroy(
      this.overloaded("cut off to make room for an owner holding less than its share of BODY_BYTES_IN_FLIGHT"),
    );
  }

  release(): void {
    this.ended = true;
    this.meter?.destroy();
    this.budget.release(this);
  }
}

/**
 * What parsing a form's text (or JSON sent as one) will cost besides the text itself: its objects
 * and arrays (a 256 KiB body of `{}` parses into 1.3 MB of objects). Counted by their opening
 * characters, those in strings included: an overestimate, never an underestimate. JSON bodies
 * are counted by scanJson, which skips their strings.
 */
export function parsedObjectBytes(raw: string): number {
  let objects = 0;
  for (let i = raw.indexOf("{"); i !== -1; i = raw.indexOf("{", i + 1)) objects++;
  for (let i = raw.indexOf("["); i !== -1; i = raw.indexOf("[", i + 1)) objects++;
  return objects * BYTES_PER_PARSED_OBJECT;
}
