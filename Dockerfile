# syntax=docker/dockerfile:1
# One image for every process: the gateway (default CMD), the worker
# (`node apps/worker/dist/main.js`) and migrations (`node apps/ctl/dist/main.js migrate`).
# Build from the repository root:  docker build -t <registry>/customer-messaging/api:<tag> .

ARG NODE_IMAGE=node:20-bookworm-slim
# The npm the lockfile is written with (package.json "packageManager").
ARG NPM_VERSION=11.19.1

# ---- manifests: npm and every package.json, shared by the two install stages ----------------
FROM ${NODE_IMAGE} AS manifests
ARG NPM_VERSION
ENV NPM_CONFIG_UPDATE_NOTIFIER=false NPM_CONFIG_FUND=false NPM_CONFIG_AUDIT=false
RUN npm install -g "npm@${NPM_VERSION}"
WORKDIR /app
# Manifests first, so the dependency layers are reused until they change.
COPY package.json package-lock.json ./
COPY libs/config/package.json libs/config/
COPY libs/domain/package.json libs/domain/
COPY libs/db/package.json libs/db/
COPY libs/queue/package.json libs/queue/
COPY libs/app/package.json libs/app/
COPY apps/gateway/package.json apps/gateway/
COPY apps/worker/package.json apps/worker/
COPY apps/ctl/package.json apps/ctl/
# Applied to node_modules by the root "postinstall" (patch-package): see patches/README.md.
COPY patches patches

# ---- build: full install, typia transform (ts-patch), turbo build --------------------------
FROM manifests AS build
ENV TURBO_TELEMETRY_DISABLED=1
RUN npm ci
COPY tsconfig.base.json tsconfig.json turbo.json ./
COPY libs libs
COPY apps apps
RUN npx --no-install ts-patch install -s \
 && npx --no-install turbo run build

# ---- prod-deps: production dependencies only -----------------------------------------------
# --ignore-scripts: the root "prepare" (ts-patch) is a dev tool, and the only install script
# left (msgpackr-extract, optional) just looks for the prebuilt binary that npm installs anyway.
FROM manifests AS prod-deps
RUN npm ci --omit=dev --ignore-scripts

# ---- runtime -------------------------------------------------------------------------------
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production
WORKDIR /app
# Everything stays owned by root and read-only to the process (the pods also mount the root
# filesystem read-only; /tmp is an emptyDir there).
COPY package.json ./
# node_modules/@cm/* are symlinks into libs/ and apps/ (npm workspaces); COPY keeps them.
COPY --from=prod-deps /app/node_modules ./node_modules
# prod-deps installs without scripts, so without patches: the patched packages come from build.
COPY --from=build /app/node_modules/postgres node_modules/postgres
COPY --from=build /app/libs/config/package.json libs/config/package.json
COPY --from=build /app/libs/config/dist libs/config/dist
COPY --from=build /app/libs/domain/package.json libs/domain/package.json
COPY --from=build /app/libs/domain/dist libs/domain/dist
COPY --from=build /app/libs/db/package.json libs/db/package.json
COPY --from=build /app/libs/db/dist libs/db/dist
# Read at run time by libs/db/dist/migrate.js (../migrations, ../functions).
COPY --from=build /app/libs/db/migrations libs/db/migrations
COPY --from=build /app/libs/db/functions libs/db/functions
COPY --from=build /app/libs/queue/package.json libs/queue/package.json
COPY --from=build /app/libs/queue/dist libs/queue/dist
COPY --from=build /app/libs/app/package.json libs/app/package.json
COPY --from=build /app/libs/app/dist libs/app/dist
COPY --from=build /app/apps/gateway/package.json apps/gateway/package.json
COPY --from=build /app/apps/gateway/dist apps/gateway/dist
COPY --from=build /app/apps/worker/package.json apps/worker/package.json
COPY --from=build /app/apps/worker/dist apps/worker/dist
COPY --from=build /app/apps/ctl/package.json apps/ctl/package.json
COPY --from=build /app/apps/ctl/dist apps/ctl/dist
# Demo journeys for `ctl demo` / `ctl journey import` (apps/ctl/dist/commands -> ../../fixtures).
COPY --from=build /app/apps/ctl/fixtures apps/ctl/fixtures
# The official image's unprivileged user (uid/gid 1000; the k8s manifests use the numbers).
USER node
EXPOSE 3000 9464
# Started directly, not through npm: signals (SIGTERM) reach node, and npm would want a
# writable cache on a read-only filesystem.
CMD ["node", "apps/gateway/dist/main.js"]
