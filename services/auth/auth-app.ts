import { Code, ConnectError } from "@connectrpc/connect";
import type { GrantStore } from "./grants/grant-store.js";
import { AuthService } from "../../gen/bizcard/auth/v1/auth_pb.js";
import { OrganisationService } from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import { openServiceDatabase, pingDatabase } from "../shared/database.js";
import { createRpcClient } from "../shared/rpc-client.js";
import { runChecks } from "../shared/rpc-server.js";
import type { ServiceApp, ServiceAppDeps } from "../shared/service-app.js";
import { AUTH_SCHEMA, createAuthService } from "./auth-service.js";
import { ClientEntity } from "./clients/client.entity.js";
import { InteractionEntity } from "./interactions/interaction.entity.js";
import { SessionEntity } from "./interactions/session.entity.js";
import { authMigrations } from "./migrations/index.js";
import { createPostgresFailureLimits } from "./rate-limit/postgres-failure-limits.js";
import { RateLimitEntity } from "./rate-limit/rate-limit.entity.js";

export async function createAuthApp(deps: ServiceAppDeps): Promise<ServiceApp> {
  const { config, logger, bus } = deps;
  const orm = await openServiceDatabase(deps, { schema: AUTH_SCHEMA, entities: [ClientEntity, InteractionEntity, SessionEntity, RateLimitEntity], migrations: authMigrations });
  const organisations = createRpcClient(OrganisationService, {
    baseUrl: config.organisationRpcUrl,
    timeoutMs: config.RPC_TIMEOUT_MS,
    internalToken: config.internalToken,
  });
  // Wiring in progress (OAuth server): grants/grants.ts replaces this.
  const notYet = () => Promise.reject(new ConnectError("not implemented yet", Code.Unimplemented));
  const grants: GrantStore = { issueAuthorizationCode: notYet, listGrants: notYet, revokeGrant: notYet };
  const limits = createPostgresFailureLimits(orm, AUTH_SCHEMA, config);
  const service = createAuthService({
    orm,
    organisations,
    allowInsecureRedirects: config.OAUTH_ALLOW_INSECURE_REDIRECTS,
    config,
    issuer: config.publicUrl,
    grants,
    limits,
  });
  return {
    name: "auth",
    routes: (router) => router.service(AuthService, service),
    readiness: () => runChecks({ database: () => pingDatabase(orm) }, { bus: () => bus.ping() }),
    start: async () => {},
    close: () => orm.close(),
  };
}
