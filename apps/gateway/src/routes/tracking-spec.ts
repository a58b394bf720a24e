import type Router from "@koa/router";
import { parseSpecMessage, problemText, specBatchMessages, type SpecMessageType } from "@cm/domain";
import { basicAuthUser } from "../auth/authenticate";
import { SPEC_BATCH_BODY, SPEC_MESSAGE_BODY } from "../body/identify-body";
import type { Intake } from "../deps";
import { ApiError } from "../errors/api-error";
import { singleDoorLog, specBatchDoorLog } from "../intake-log/doors";
import type { IdentifyState } from "../state";
import { acceptSpecBatch, acceptSpecOperations, specMessageContext } from "../use-cases/accept-spec-messages";
import { bodyOperation, type CredentialPlaces, type UsersApiDeps } from "./users-api";

// The tracking spec's /v1 API (docs/tracking-spec.md): the paths Segment's and RudderStack's SDKs
// send to, at the root, as they append /v1/... to the host they are given. Not in the OpenAPI
// document, whose API is /api/v2: Segment's documentation of its HTTP API is their reference.

/**
 * The write key is the project's identify token: the user name of HTTP Basic authentication (the
 * SDKs' password is empty), or `writeKey` in the body (analytics-node and Segment's browser SDK
 * send both).
 */
export const WRITE_KEY: CredentialPlaces = {
  outside: (ctx) => {
    const user = basicAuthUser(ctx.get("authorization"));
    return user === null ? [] : [user];
  },
  bodyFields: ["writeKey"],
};

/** Each single call's paths: the full name, and the first letter Segment's browser SDK sends to. */
const SINGLE_CALLS: Record<SpecMessageType, string[]> = {
  identify: ["/v1/identify", "/v1/i"],
  track: ["/v1/track", "/v1/t"],
  page: ["/v1/page", "/v1/p"],
  screen: ["/v1/screen", "/v1/s"],
  group: ["/v1/group", "/v1/g"],
  alias: ["/v1/alias", "/v1/a"],
};

/** The batch: the SDKs' path, Segment's browser SDK's when it batches, and Segment's older name. */
const BATCH_PATHS = ["/v1/batch", "/v1/b", "/v1/import"];

const post = (path: string) => ({ path, methods: ["POST"] });

export function trackingSpecRoutes(
  router: Router<IdentifyState>,
  deps: UsersApiDeps & Pick<Intake, "eventDedupWindowMs">,
) {
  bodyOperation(
    router,
    deps,
    BATCH_PATHS.map(post),
    (request) => {
      const batch = specBatchMessages(request.body);
      if (!batch.ok) throw ApiError.badRequest(problemText(batch.problems));
      return acceptSpecBatch(deps, request, batch.value);
    },
    SPEC_BATCH_BODY,
    WRITE_KEY,
    specBatchDoorLog(deps),
  );
  for (const [type, paths] of Object.entries(SINGLE_CALLS) as [SpecMessageType, string[]][]) {
    bodyOperation(
      router,
      deps,
      paths.map(post),
      (request) => {
        const parsed = parseSpecMessage(request.body, specMessageContext(deps, request), type);
        if (!parsed.ok) throw ApiError.badRequest(problemText(parsed.problems));
        return acceptSpecOperations(deps, parsed.value, request);
      },
      SPEC_MESSAGE_BODY,
      WRITE_KEY,
      singleDoorLog(deps, "v1", type),
    );
  }
}
