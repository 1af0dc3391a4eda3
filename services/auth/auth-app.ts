// The auth service as an app: its database and outbox relay, the client of the
// organisation service, the AuthService RPCs, and pruning.
import type { FailureLimits } from "./rate-limit/failure-limits.js";
import type { MikroORM } from "@mikro-orm/postgresql";
import type { GrantStore } from "./grants/grant-store.js";
import { AuthService } from "../../gen/bizcard/auth/v1/auth_pb.js";
import { OrganisationService } from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import { openServiceDatabase, pingDatabase } from "../shared/database.js";
import { createRpcClient } from "../shared/rpc/client.js";
import { runChecks } from "../shared/rpc/health.js";
import type { ServiceApp, ServiceAppDeps } from "../shared/service-app.js";
import { AUTH_SCHEMA } from "./auth-schema.js";
import { createAuthService } from "./auth-service.js";
import { ClientEntity } from "./clients/client.entity.js";
import { InteractionEntity } from "./interactions/interaction.entity.js";
import { SessionEntity } from "./interactions/session.entity.js";
import { authMigrations } from "./migrations/index.js";
import { openRelayDatabase } from "../shared/outbox/relay-database.js";
import { OutboxRelay } from "../shared/outbox/relay.js";
import { AuthorizationCodeEntity } from "./grants/authorization-code.entity.js";
import { GrantEntity } from "./grants/grant.entity.js";
import { createGrantStore } from "./grants/grants.js";
import { AccessTokenEntity } from "./tokens/access-token.entity.js";
import { RefreshTokenEntity } from "./tokens/refresh-token.entity.js";
import { createPostgresFailureLimits } from "./rate-limit/postgres-failure-limits.js";
import { RateLimitEntity } from "./rate-limit/rate-limit.entity.js";
import { authPruneTargets } from "./prune/auth-prune.js";
import { startPruning } from "../shared/prune/prune-loop.js";

/** Every table of the auth schema but the outbox's (written with SQL by services/shared/outbox/). */
export const AUTH_ENTITIES = [
  ClientEntity,
  GrantEntity,
  AuthorizationCodeEntity,
  AccessTokenEntity,
  RefreshTokenEntity,
  InteractionEntity,
  SessionEntity,
  RateLimitEntity,
];

/** options.limits: the brute-force limits; the PostgreSQL ones when unset (tests may inject others). */
export async function createAuthApp(
  deps: ServiceAppDeps,
  options: { limits?: FailureLimits } = {},
): Promise<ServiceApp & { relay: OutboxRelay; orm: MikroORM; grants: GrantStore }> {
  const { config, logger, bus } = deps;
  const orm = await openServiceDatabase(deps, {
    schema: AUTH_SCHEMA,
    entities: AUTH_ENTITIES,
    migrations: authMigrations,
  });
  const relayDb = await openRelayDatabase(deps, AUTH_SCHEMA, orm);
  const relay = new OutboxRelay({
    orm: relayDb.orm,
    preparedStatements: relayDb.own,
    schema: AUTH_SCHEMA,
    bus,
    logger,
    pollMs: config.OUTBOX_POLL_MS,
    leaseMs: config.OUTBOX_LEASE_MS,
    publishTimeoutMs: config.OUTBOX_PUBLISH_TIMEOUT_MS,
  });
  const onEventCommitted = () => relay.wake();
  let pruning: { stop(): Promise<void> } | undefined;
  const organisations = createRpcClient(OrganisationService, {
    baseUrl: config.organisationRpcUrl,
    timeoutMs: config.RPC_TIMEOUT_MS,
    internalToken: config.internalToken,
  });
  const grants = createGrantStore({
    orm,
    schema: AUTH_SCHEMA,
    subjectPrefix: config.NATS_SUBJECT_PREFIX,
    codeTtlSeconds: config.AUTHORIZATION_CODE_TTL_SECONDS,
    onEventCommitted,
  });
  const service = createAuthService({
    orm,
    organisations,
    allowInsecureRedirects: config.OAUTH_ALLOW_INSECURE_REDIRECTS,
    config,
    issuer: config.publicUrl,
    grants,
    limits: options.limits ?? createPostgresFailureLimits(orm, AUTH_SCHEMA, config),
    logger,
    onEventCommitted,
  });
  return {
    name: "auth",
    relay,
    orm,
    grants,
    routes: (router) => router.service(AuthService, service),
    readiness: () => runChecks({ database: () => pingDatabase(orm) }, { bus: () => bus.ping() }),
    start: async () => {
      relay.start();
      pruning = startPruning({ orm, targets: () => authPruneTargets(AUTH_SCHEMA), settings: config, logger });
    },
    close: async () => {
      await pruning?.stop();
      await relay.stop();
      await relayDb.close();
      await orm.close();
    },
  };
}
