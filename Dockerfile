# syntax=docker/dockerfile:1
# One image for every bizcard process, in two stages: the build stage compiles
# the TypeScript (npm run build: esbuild, file by file, into dist/, migrations
# included; the same build a checkout's commands run);
# the runtime stage holds the production dependencies and dist/ only, with no
# TypeScript loader, compiler or test tools. The default command runs the
# gateway; each service's container overrides it (see docker-compose.yml):
#   node --max-old-space-size=1024 dist/services/<name>/main.js
# No HEALTHCHECK here: docker-compose.yml probes /readyz of each process.

FROM node:22-bookworm-slim AS build
# No embedded PGlite templates in the image: its processes run on PostgreSQL.
ENV NPM_CONFIG_UPDATE_NOTIFIER=false \
    NPM_CONFIG_FUND=false \
    BIZCARD_PGLITE_TEMPLATE=off
WORKDIR /app
# Every dependency, dev ones included: the compiler is one.
COPY package.json package-lock.json ./
# npm's postinstall runs them (the embedded default's PGlite templates, which exit at once here,
# see ENV; and the checkout's build, which has nothing to compile before the sources are copied).
COPY scripts/pglite-template.mjs scripts/run-compiled.mjs scripts/compile-sources.mjs ./scripts/
RUN npm ci
COPY tsconfig.json tsconfig.build.json ./
COPY gen ./gen
COPY services ./services
COPY gateway ./gateway
COPY bin ./bin
COPY scripts ./scripts
RUN npm run build

FROM node:22-bookworm-slim
# The commit built (docker build --build-arg GIT_COMMIT=$(git rev-parse HEAD)):
# /healthz answers it. The image holds no .git to read it from.
ARG GIT_COMMIT=""
ENV GIT_COMMIT=$GIT_COMMIT
# MALLOC_MMAP_THRESHOLD_: scripts/platform-processes.ts PLATFORM_ENV (freed large blocks go back to the system).
ENV NODE_ENV=production \
    NPM_CONFIG_UPDATE_NOTIFIER=false \
    NPM_CONFIG_FUND=false \
    MALLOC_MMAP_THRESHOLD_=1048576
WORKDIR /app

# Production dependencies first, so that a source change reuses this layer.
COPY package.json package-lock.json ./
# No install scripts: the project's postinstall is for the embedded default (PGlite), which the
# containers do not use, and no production dependency needs one (@scarf/scarf's is telemetry).
RUN npm ci --omit=dev --ignore-scripts && npm cache clean --force

# The compiled code, owned by root and read-only for the user that runs it.
# bin/bizcard.js runs dist/bin/bizcard-cli.js when dist/ is there.
COPY --from=build /app/dist ./dist
COPY bin/bizcard.js ./bin/bizcard.js

USER node
# Gateway 8080; auth, organisation, webhook, delivery RPC 7101-7104.
EXPOSE 8080 7101 7102 7103 7104
# SIGTERM reaches node directly (exec form): every process drains and exits 0.
STOPSIGNAL SIGTERM
CMD ["node", "--no-allocation-site-pretenuring", "--min-semi-space-size=16", "--max-semi-space-size=16", "--no-memory-reducer", "dist/gateway/main.js"]
