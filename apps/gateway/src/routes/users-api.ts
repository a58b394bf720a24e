import type Router from "@koa/router";
import { parseOperation, problemText, type IdentifyReply } from "@cm/domain";
import type Koa from "koa";
import { authenticateIdentify, bodyCredentials, queryCredentials, type VerifiedToken } from "../auth/authenticate";
import { IDENTIFY_CREDENTIAL_FIELDS } from "../auth/repeated-credentials";
import { BodyReservation, UNVERIFIED } from "../body/body-budget";
import { OPERATION_BODY, type BodyReading, type UsersApiBody } from "../body/identify-body";
import type { Access, BodyLimits, Intake, IntakeLogging } from "../deps";
import { ApiError } from "../errors/api-error";
import { singleDoorLog, type IntakeDoorLog, type IntakeSeen } from "../intake-log/doors";
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
export type UsersApiDeps = Access & BodyLimits & Intake & IntakeLogging;

/**
 * Where an operation takes the project's identify token: outside the body (the query string, a
 * header), checked before a byte of the body is read, and in the body's top-level fields.
 */
export interface CredentialPlaces {
  /** The values given outside the body; none when the credential can only be in it. */
  outside(ctx: Koa.Context): string[];
  bodyFields: readonly string[];
}

const QUERY_CREDENTIAL = new RegExp(`(^|&)(${IDENTIFY_CREDENTIAL_FIELDS.join("|")})(=|&|$)`);

/** Vero's users API: `auth_token` or `tracking_api_key`, in the query string or the body (docs/integrations.md). */
export const USERS_API_CREDENTIALS: CredentialPlaces = {
  // Most identifies put it in the query string; the test spares parsing one that has none.
  outside: (ctx) => (QUERY_CREDENTIAL.test(ctx.querystring) ? queryCredentials(ctx.querystring) : []),
  bodyFields: IDENTIFY_CREDENTIAL_FIELDS,
};

/**
 * Who the body's bytes are held for: the project of a credential given outside the body,
 * checked before a byte of the body is read (a bad one is 401 at once, and the connection closed
 * rather than the body read), or UNVERIFIED when the credential can only be in the body.
 */
async function bodyOwner(
  ctx: Koa.Context,
  deps: Access,
  outside: string[],
): Promise<{ owner: string; verified?: VerifiedToken }> {
  if (outside.length === 0) return { owner: UNVERIFIED };
  try {
    const verified = await authenticateIdentify(deps.credentials, outside);
    return { owner: `project:${verified.credential.projectId}`, verified };
  } catch (error) {
    ctx.set("Connection", "close");
    throw error;
  }
}

/** How an operation reads its request: its body, and where its credential is. */
interface RequestReading {
  format: UsersApiBody;
  places: CredentialPlaces;
  /** The credential's values given outside the body. */
  outside: string[];
  verified: VerifiedToken | undefined;
}

/**
 * The credential may be in the body, so the body is read first, but checked before it is
 * parsed: from the fields found in a JSON body's text (a bad token costs no parse), or in the
 * parsed form. A bad token is always 401. Then the project's rate limit, and only then a body
 * that could not be read (but a body too slow or too large, with no credential outside it, is
 * refused for that at once). What parsing the body costs is held in the budget before it is parsed.
 * What it reads is noted in `seen` as it goes, for the intake log.
 */
async function authorize(
  ctx: Koa.Context,
  deps: Access & BodyLimits,
  reservation: BodyReservation,
  { format, places, outside, verified }: RequestReading,
  seen: IntakeSeen,
): Promise<AuthorizedRequest> {
  const receivedAt = Date.now();
  seen.receivedAt = receivedAt;
  const read = await format.read(ctx, deps.bodyReadTimeoutMs, places.bodyFields, reservation);
  if (read.ok) seen.text = read.text;
  // A body cut off for arriving too slowly, or for want of room in the budget, has no credential
  // to check: the deadline or the budget answers.
  if (!read.ok && read.error instanceof ApiError && [408, 503].includes(read.error.status)) throw read.error;
  // Nor has a body past its size limit whose credential could only be inside it: a 401 there
  // would be retried for ever by the SDKs, where the size is what the client must change.
  if (!read.ok && outside.length === 0 && read.error instanceof ApiError && read.error.status === 413) {
    throw read.error;
  }
  const fromText =
    read.ok && read.credentials !== null
      ? await authenticateIdentify(deps.credentials, [...outside, ...read.credentials], verified)
      : undefined;
  if (read.ok) reservation.take(read.parsedBytes);
  const parsed = read.ok ? read.parse() : read;
  const inBody = parsed.ok ? [...parsed.repeatedCredentials, ...bodyCredentials(parsed.value, places.bodyFields)] : [];
  const authorized = fromText ?? (await authenticateIdentify(deps.credentials, [...outside, ...inBody], verified));
  const { projectId } = authorized.credential;
  Object.assign(seen, { projectId, token: authorized.token });
  if (parsed.ok) seen.body = parsed.value;
  await enforceRateLimit(ctx, deps.rateLimiter, projectId);
  if (!parsed.ok) throw parsed.error;
  // A DELETE sent without a body (many HTTP clients drop one) names its user in the query string.
  const body = ctx.method === "DELETE" && read.ok && read.bytes === 0 ? { ...ctx.query } : parsed.value;
  seen.body = body;
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

/** A path an operation answers, and its methods. */
export interface Answering {
  path: string;
  methods: string[];
}

/**
 * An operation answering `answering`, callable from web pages (CORS and its preflight) within
 * the body budget; `act` parses the body (read as `format` says, its credential where `places`
 * say) and does the work; `log` notes the request in its project's intake log, accepted or
 * refused. Any other method on its paths is 404.
 */
export function bodyOperation<Reply>(
  router: Router<IdentifyState>,
  deps: Access & BodyLimits,
  answering: Answering[],
  act: (request: AuthorizedRequest) => Promise<Reply>,
  format: UsersApiBody,
  places: CredentialPlaces,
  log: IntakeDoorLog<Reply>,
): void {
  const paths = answering.map(({ path }) => path);
  router.options(paths, answerPreflight);
  const handler: Koa.Middleware = async (ctx) => {
    const outside = places.outside(ctx);
    const { owner, verified } = await bodyOwner(ctx, deps, outside);
    const rate = owner === UNVERIFIED ? deps.unverifiedBodyBytes : undefined;
    const reservation = new BodyReservation(deps.bodyBudget, ctx, owner, rate);
    const seen: IntakeSeen = {
      receivedAt: Date.now(),
      ...(verified ? { projectId: verified.credential.projectId, token: verified.token } : {}),
    };
    try {
      const reply = await act(await authorize(ctx, deps, reservation, { format, places, outside, verified }, seen));
      ctx.body = reply;
      log.accepted(seen, reply);
    } catch (error) {
      log.refused(seen, error);
      throw error;
    } finally {
      reservation.release();
    }
  };
  for (const { path, methods } of answering) router.register(path, methods, [allowAnyOrigin, handler]);
  router.all(paths, () => {
    throw ApiError.notFound();
  });
}

/**
 * One operation of Vero's users API as `route` declares it: its method and path and its aliases
 * (the `.json` twin, another method), its credential where the users API takes it.
 */
export function usersApiOperation<Reply extends IdentifyReply>(
  router: Router<IdentifyState>,
  deps: Access & BodyLimits,
  route: Route,
  act: (request: AuthorizedRequest) => Promise<Reply>,
  log: IntakeDoorLog<Reply>,
  format: UsersApiBody = OPERATION_BODY,
): void {
  const declared = [route, ...route.aliases];
  const answering = [...new Set(declared.map(({ path }) => koaPath(path)))].map((path) => ({
    path,
    methods: declared.filter((answer) => koaPath(answer.path) === path).map(({ method }) => method),
  }));
  bodyOperation(router, deps, answering, act, format, USERS_API_CREDENTIALS, log);
}

/**
 * A single operation as `route` declares it (api.md, "Identify a user" on): its body read as its
 * `operationType` into what it queues, or 400 naming what is wrong.
 */
export function singleOperation(router: Router<IdentifyState>, deps: UsersApiDeps, route: Route): void {
  const type = route.operationType;
  if (type === undefined) throw new Error(`${route.operation.operationId} names no operation type`);
  usersApiOperation(
    router,
    deps,
    route,
    (request) => {
      const parsed = parseOperation(type, request.body, operationContext(deps, request));
      if (!parsed.ok) throw ApiError.badRequest(problemText(parsed.problems));
      return acceptOperation(deps, parsed.value, request);
    },
    singleDoorLog(deps, type === "track" ? "events" : "users", type),
  );
}
