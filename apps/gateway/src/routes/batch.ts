import type Router from "@koa/router";
import { batchOperations, problemText } from "@cm/domain";
import { BATCH_BODY } from "../body/identify-body";
import type { Observability } from "../deps";
import { ApiError } from "../errors/api-error";
import { batchDoorLog } from "../intake-log/doors";
import type { IdentifyState } from "../state";
import { acceptBatch } from "../use-cases/accept-batch";
import { ROUTES } from "./table";
import { usersApiOperation, type UsersApiDeps } from "./users-api";

/** An Idempotency-Key is a client's name for a request; as the events' one, it has a bound. */
const MAX_IDEMPOTENCY_KEY_LENGTH = 255;

/** docs/bulk.md: POST /batch, operations of Vero's users API many at a time, authenticated as each of them is. */
export function batchRoutes(router: Router<IdentifyState>, deps: UsersApiDeps & Observability): void {
  usersApiOperation(
    router,
    deps,
    ROUTES.batch,
    (request) => {
      const operations = batchOperations(request.body);
      if (!operations.ok) throw ApiError.badRequest(problemText(operations.problems));
      if ((request.idempotencyKey?.length ?? 0) > MAX_IDEMPOTENCY_KEY_LENGTH) {
        throw ApiError.badRequest(
          `the Idempotency-Key header must be at most ${MAX_IDEMPOTENCY_KEY_LENGTH} characters`,
        );
      }
      return acceptBatch(deps, request, operations.value);
    },
    batchDoorLog(deps),
    BATCH_BODY,
  );
}
