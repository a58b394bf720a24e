import type Router from "@koa/router";
import { parseOperation, problemText, type IdentifyReply } from "@cm/domain";
import type Koa from "koa";
import { authenticateIdentify, type VerifiedToken } from "../auth/authenticate";
import { IDENTIFY_CREDENTIAL_FIELDS } from "../auth/repeated-credentials";
import { BodyReservation, declaredBodyBytes, UNVERIFIED } from "../body/body-budget";
import { OPERATION_BODY, type BodyReading, type UsersApiBody } from "../body/identify-body";
import type { Access, BodyLimits, Intake } from "../deps";
import { ApiError } from "../errors/api-error";
import { allowAnyOrigin, answerPreflight } from "../middleware/browser-access";
import { enforceRateLimit } from "../rate-limit/enforce";
import type { IdentifyState } from "../state";
import { acceptOperation, operationContext, type ReceivedRequest } from "../use-cases/queue-operation";
import { koaPath, type Route } from "./table";

// Vero's users API (identify, edit, tags, unsubscribe, resubscribe, reidentify, delete), event
// tracking and the batch: every operation authenticates, reads its body and answers the same way
// (docs/integrations.md).

/** A request whose credential is accepted: the project, the body as read and as sent, when it arrived and its size. */
export interface AuthorizedRequest extends ReceivedRequest {
  projectId: number;
  body: unknown;
  /** The body's text, decompressed. */
  rawBody: string;
  /** How the body's text was read. */
  readAs: BodyReading;
  /** The Idempotency-Key header, when sent. */
  idempotencyKey?: string;
}

/** What an operation of the users API is given: its request read and authorized, what it accepts queued. */
export type UsersApiDeps = Access & BodyLimits & Intake;

const QUERY_CREDENTIAL = new RegExp(`(^|&)(${IDENTIFY_CREDENTIAL_FIELDS.join("|")})=`);

/**
 * Who the body's bytes are held for: the project of a credential in the query string, checked
 * before a byte of the body is read (a bad one is 401 at once, and the connection closed rather
 * than the body read), or UNVERIFIED when the credential can only be in the body.
 */
async function bodyOwner(ctx: Koa.Context, deps: Access): Promise<{ owner: string; verified?: VerifiedToken }> {
  if (!QUERY_CREDENTIAL.test(ctx.querystring)) return { owner: UNVERIFIED };
  try {
    const verified = await authenticateIdentify(deps.credentials, ctx.querystring, undefined);
    return { owner: `project:${verified.credential.projectId}`, verified };
  } catch (error) {
    ctx.set("Connection", "close");
    throw error;
  }
}

/**
 * The credential may be in the body, so the body is read first, but checked before it is
 * parsed: from the fields found in a JSON body's text (a bad token costs no parse), or in the
 * parsed form. A bad token is always 401. Then the project's rate limit, and only then a body
 * that could not be read. What parsing the body costs is held in the budget before it is parsed.
 */
async function authorize(
  ctx: Koa.Context,
  deps: Access & BodyLimits,
  reservation: BodyReservation,
  verified: VerifiedToken | undefined,
  format: UsersApiBody,
): Promise<AuthorizedRequest> {
  const receivedAt = Date.now();
  const read = await format.read(ctx, deps.bodyReadTimeoutMs);
  // A body cut off for arriving too slowly has no credential to check: the deadline answers.
  if (!read.ok && read.error instanceof ApiError && read.error.status === 408) throw read.error;
  const fromText =
    read.ok && read.credentials !== null
      ? await authenticateIdentify(deps.credentials, ctx.querystring, undefined, read.credentials, verified)
      : undefined;
  if (read.ok) reservation.take(ctx, read.parsedBytes);
  const parsed = read.ok ? read.parse() : read;
  const { projectId } = (
    fromText ??
    (await authenticateIdentify(
      deps.credentials,
      ctx.querystring,
      parsed.ok ? parsed.value : undefined,
      parsed.ok ? parsed.repeatedCredentials : [],
      verified,
    ))
  ).credential;
  await enforceRateLimit(ctx, deps.rateLimiter, projectId);
  if (!parsed.ok) throw parsed.error;
  // A DELETE sent without a body (many HTTP clients drop one) names its user in the query string.
  const body = ctx.method === "DELETE" && read.ok && read.bytes === 0 ? { ...ctx.query } : parsed.value;
  const idempotencyKey = ctx.get("idempotency-key");
  return {
    projectId,
    body,
    rawBody: read.ok ? read.text : "",
    readAs: read.ok ? read.readAs : "json",
    receivedAt,
    bytes: read.ok ? read.bytes : 0,
    ...(idempotencyKey === "" ? {} : { idempotencyKey }),
  };
}

/**
 * One operation as `route` declares it: its method and path and its aliases (the `.json` twin,
 * another method), callable from web pages (CORS and its preflight) within the body budget;
 * `act` parses the body (read as `format` says) and does the work. Any other method on its
 * paths is Vero's 404.
 */
export function usersApiOperation(
  router: Router<IdentifyState>,
  deps: Access & BodyLimits,
  route: Route,
  act: (request: AuthorizedRequest) => Promise<IdentifyReply>,
  format: UsersApiBody = OPERATION_BODY,
): void {
  const answering = [route, ...route.aliases];
  const paths = [...new Set(answering.map(({ path }) => koaPath(path)))];
  router.options(paths, answerPreflight);
  const handler: Koa.Middleware = async (ctx) => {
    const { owner, verified } = await bodyOwner(ctx, deps);
    const declared = declaredBodyBytes(ctx, format.maxBytes);
    if (owner === UNVERIFIED && !deps.unverifiedBodyBytes.tryTake(declared)) {
      ctx.set("Connection", "close");
      throw ApiError.overloaded(
        "bodies with their credential inside arrive faster than UNVERIFIED_BODY_BYTES_PER_SECOND",
      );
    }
    const reservation = new BodyReservation(deps.bodyBudget, owner);
    try {
      reservation.take(ctx, declared);
      ctx.body = await act(await authorize(ctx, deps, reservation, verified, format));
    } finally {
      reservation.release();
    }
  };
  for (const path of paths) {
    const methods = answering.filter((answer) => koaPath(answer.path) === path).map(({ method }) => method);
    router.register(path, methods, [allowAnyOrigin, handler]);
  }
  router.all(paths, () => {
    throw ApiError.notFound();
  });
}

/**
 * A single operation as `route` declares it (api.md, "Identify a user" on): its body read as its
 * `operationType` into what it queues, or 400 naming what is wrong.
 */
export function singleOperation(router: Router<IdentifyState>, deps: UsersApiDeps, route: Route): void {
  const type = route.operationType;
  if (type === undefined) throw new Error(`${route.operation.operationId} names no operation type`);
  usersApiOperation(router, deps, route, (request) => {
    const parsed = parseOperation(type, request.body, operationContext(deps, request));
    if (!parsed.ok) throw ApiError.badRequest(problemText(parsed.problems));
    return acceptOperation(deps, parsed.value, request);
  });
}
