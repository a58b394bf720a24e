import type Router from "@koa/router";
import { waitForChangeFeed } from "@cm/app";
import { changeFeedRequest } from "@cm/domain";
import type { Access, ChangeFeed, Postgres } from "../deps";
import { ApiError } from "../errors/api-error";
import type { ApiState } from "../state";
import { apiRoute } from "./register";
import { ROUTES } from "./table";

/** docs/changes.md: the project's change feed, read and long-polled. */
export function changeRoutes(router: Router<ApiState>, deps: Access & Postgres & ChangeFeed): void {
  apiRoute(router, deps, ROUTES.readChanges, async (ctx) => {
    const request = changeFeedRequest(ctx.query);
    if (!request.ok) throw ApiError.invalidQuery(request.problems);
    const { projectId } = ctx.state.credential;
    const { waitS, ...read } = request.value;
    // A waiting reader holds none of its project's share of the pool while it waits.
    const changeWaits = {
      wait: (project: number, ms: number) =>
        deps.poolShares.setAside(project, () => deps.changeWaits.wait(project, ms)),
    };
    const waitMs = Math.min(waitS * 1000, deps.changeWaits.maxWaitMs);
    ctx.body = await waitForChangeFeed({ sql: deps.sql, changeWaits }, projectId, read, waitMs);
  });
}
