import type Router from "@koa/router";
import { waitForIntakeLog } from "@cm/app";
import { intakeLogRequest } from "@cm/domain";
import type { Access, IntakeLogReads, Postgres } from "../deps";
import { ApiError } from "../errors/api-error";
import type { ApiState } from "../state";
import { apiRoute } from "./register";
import { ROUTES } from "./table";

/** docs/intake-log.md: what the project's intake received lately, read and long-polled. */
export function intakeLogRoutes(router: Router<ApiState>, deps: Access & Postgres & IntakeLogReads): void {
  apiRoute(router, deps, ROUTES.readIntakeLog, async (ctx) => {
    const request = intakeLogRequest(ctx.query);
    if (!request.ok) throw ApiError.invalidQuery(request.problems);
    const { projectId } = ctx.state.credential;
    const { waitS, ...read } = request.value;
    // The log is in Redis: a waiting reader holds none of its project's share of the Postgres pool.
    const intakeWaits = {
      wait: (project: number, ms: number) =>
        deps.poolShares.setAside(project, () => deps.intakeWaits.wait(project, ms)),
    };
    const waitMs = Math.min(waitS * 1000, deps.intakeWaits.maxWaitMs);
    ctx.body = await waitForIntakeLog({ intakeLog: deps.intakeLog, intakeWaits }, projectId, read, waitMs);
  });
}
