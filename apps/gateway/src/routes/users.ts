import { findProfile, allTopicsOfProject } from "@cm/db";
import { profileKeyForId, topicSubscriptions, unstorableText, visibleProfile } from "@cm/domain";
import type Router from "@koa/router";
import { ApiError } from "../api-error";
import { requireApiKey } from "../auth/authenticate";
import type { GatewayDeps } from "../deps";
import { useApiErrors } from "../middleware/error-style";
import { requireRevision } from "../middleware/revision";

/** decisions.md "Profile read": what the workers have applied so far. */
export function userRoutes(router: Router, deps: GatewayDeps): void {
  router.get(
    "/users/:id",
    useApiErrors,
    requireApiKey(deps.credentials, "profile:read", deps.rateLimiter),
    requireRevision,
    async (ctx) => {
      const ref = ctx.params.id as string;
      // An id Postgres text cannot hold (U+0000, a lone surrogate) was never stored.
      if (unstorableText(ref) !== null) throw ApiError.notFound();
      const { projectId } = ctx.state.credential;
      const stored = await findProfile(deps.sql, projectId, profileKeyForId(ref));
      const profile = stored && visibleProfile(stored.state);
      if (stored === null || profile === null) throw ApiError.notFound();
      const topics = await allTopicsOfProject(deps.sql, projectId);
      ctx.body = {
        id: stored.externalId,
        email: profile.email,
        phone_number: profile.phoneNumber,
        channels: profile.channels,
        data: profile.data,
        topics: topicSubscriptions(profile.topics, topics),
        created_at: new Date(stored.state.createdT as number).toISOString(),
        updated_at: stored.updatedAt.toISOString(),
      };
    },
  );
}
