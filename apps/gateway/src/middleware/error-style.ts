import type Koa from "koa";

/** Routes under /users that are not identify answer with the `{error}` bodies of API-key routes. */
export const useApiErrors: Koa.Middleware = async (ctx, next) => {
  ctx.state.errorStyle = "api";
  await next();
};
