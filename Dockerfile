# syntax=docker/dockerfile:1
# One image for every bizcard process. The services run their TypeScript
# source through tsx (a runtime dependency); generated code is committed in
# gen/, so there is no build step. The default command runs the gateway; each
# service's container overrides it (see docker-compose.yml):
#   node --import tsx services/<name>/main.ts
# No HEALTHCHECK here: docker-compose.yml probes /readyz of each process.
FROM node:22-bookworm-slim

ENV NODE_ENV=production \
    NPM_CONFIG_UPDATE_NOTIFIER=false \
    NPM_CONFIG_FUND=false
WORKDIR /app

# Dependencies first, so that a source change reuses this layer.
COPY package.json package-lock.json ./
RUN npm ci --omit=dev && npm cache clean --force

# The source, owned by root and read-only for the user that runs it.
COPY tsconfig.json ./
COPY gen ./gen
COPY services ./services
COPY gateway ./gateway
COPY bin ./bin
COPY scripts ./scripts

USER node
# Gateway 8080; auth, organisation, webhook, delivery RPC 7101-7104.
EXPOSE 8080 7101 7102 7103 7104
# SIGTERM reaches node directly (exec form): every process drains and exits 0.
STOPSIGNAL SIGTERM
CMD ["node", "--import", "tsx", "gateway/main.ts"]
