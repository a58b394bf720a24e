import { MAX_BODY_BYTES } from "@cm/domain";
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
 * The bytes of request bodies one gateway process reads and holds at once, raw and parsed.
 * Micro-batches bound what is written per job, but every request in flight holds its body until
 * its batch is written: 500 connections sending 256 KiB bodies took a gateway past 900 MiB.
 * Past the budget a request is turned away at once (503, Retry-After), before its body is read.
 *
 * No owner may hold more than a share of it: a project whose token was checked before its body
 * a quarter, the requests that could not be checked first (UNVERIFIED) an eighth between them.
 * The identify token sits in web pages, so anyone can send bodies in a project's name, or in
 * none: they then starve that project, or the unverified, never everyone.
 */
export class BodyBudget {
  private inFlight = 0;
  private readonly held = new Map<string, number>();

  constructor(private readonly maxBytes: number) {}

  private share(owner: string): number {
    return owner === UNVERIFIED ? this.maxBytes / 8 : this.maxBytes / 4;
  }

  /**
   * Room for `bytes` more for a request of `owner` that holds `mine` already. A request always
   * fits when it is all the budget holds, and within its owner's share when it is all the owner
   * holds: any one request within its body limit can be served.
   */
  tryReserve(owner: string, bytes: number, mine = 0): boolean {
    const held = this.held.get(owner) ?? 0;
    if (this.inFlight > mine && this.inFlight + bytes > this.maxBytes) return false;
    if (held > mine && held + bytes > this.share(owner)) return false;
    this.inFlight += bytes;
    this.held.set(owner, held + bytes);
    return true;
  }

  release(owner: string, bytes: number): void {
    this.inFlight -= bytes;
    const held = (this.held.get(owner) ?? 0) - bytes;
    if (held > 0) this.held.set(owner, held);
    else this.held.delete(owner);
  }
}

/** One request's hold on the budget: taken before its body is read, grown before it is parsed, released when answered. */
export class BodyReservation {
  private bytes = 0;

  constructor(
    private readonly budget: BodyBudget,
    private readonly owner: string,
  ) {}

  /** Holds `bytes` more, or answers 503 (and closes the connection) when the budget has no room. */
  take(ctx: Koa.Context, bytes: number): void {
    if (bytes <= 0) return;
    if (!this.budget.tryReserve(this.owner, bytes, this.bytes)) {
      // Closing the connection spares reading the body only to discard it, as keeping the
      // connection open would require.
      ctx.set("Connection", "close");
      throw ApiError.overloaded("the gateway holds as many request bodies as BODY_BYTES_IN_FLIGHT allows");
    }
    this.bytes += bytes;
  }

  release(): void {
    this.budget.release(this.owner, this.bytes);
    this.bytes = 0;
  }
}

/**
 * What a body will hold once read, before a byte of it is: its Content-Length, or, for a body
 * compressed on the wire or of unknown length, the most it may inflate to (`maxBytes`: more is 413).
 */
export function declaredBodyBytes(ctx: Koa.Context, maxBytes = MAX_BODY_BYTES): number {
  const declared = Number(ctx.get("content-length"));
  const encoded = !["", "identity"].includes(ctx.get("content-encoding").trim().toLowerCase());
  return !encoded && declared > 0 && declared < maxBytes ? declared : maxBytes;
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
