// The platform behind the OAuth pages, for the page and browser tests: the
// real organisation and auth services on PostgreSQL and the bus, and a
// gateway listening on the port PUBLIC_URL names (so that iss and the cookie
// agree with the address the client uses), plus an organisation with a member.
import type { AddressInfo } from "node:net";
import type { FastifyInstance } from "fastify";
import { buildGateway } from "../../gateway/app.js";
import { createServiceClients } from "../../gateway/clients.js";
import { AuthService } from "../../gen/bizcard/auth/v1/auth_pb.js";
import { OrganisationService } from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import { createAuthApp } from "../../services/auth/auth-app.js";
import { createOrganisationApp } from "../../services/organisation/organisation-app.js";
import type { EventBus } from "../../services/shared/event-bus/event-bus.js";
import { createLogger } from "../../services/shared/logger.js";
import type { ServiceApp } from "../../services/shared/service-app.js";
import { createTestDatabase, testConfig, type TestDatabase } from "./backends.js";
import { freePort } from "./processes.js";
import { openTestBus, startService, type StartedService } from "./services.js";

export interface PagePlatform {
  /** The gateway's base URL (http://127.0.0.1:port), which is also its PUBLIC_URL. */
  base: string;
  organisationId: string;
  member: { email: string; password: string };
  auth: StartedService<ServiceApp>;
  /** Another gateway in front of the same services whose PUBLIC_URL is https. */
  buildHttpsGateway(): Promise<{ base: string; close(): Promise<void> }>;
  createClient(name: string, redirectUris: string[], options?: { public?: boolean; scopes?: string[] }): Promise<{ clientId: string; clientSecret: string }>;
  stop(): Promise<void>;
}

export async function startPagePlatform(prefix: string): Promise<PagePlatform> {
  const token = "p".repeat(40);
  const db: TestDatabase = await createTestDatabase();
  const base0 = testConfig({ INTERNAL_RPC_TOKEN: token });
  const bus: EventBus = await openTestBus(base0);
  const shared = { INTERNAL_RPC_TOKEN: token, NATS_STREAM: base0.NATS_STREAM, NATS_SUBJECT_PREFIX: base0.NATS_SUBJECT_PREFIX };
  const organisation = await startService(createOrganisationApp, { config: base0, db, bus });
  const logger = createLogger("page-test", base0.LOG_LEVEL);
  const gateways: FastifyInstance[] = [];
  // The gateway must listen where PUBLIC_URL (the issuer) says, known before
  // the auth service starts: a free port, and another one should a parallel
  // test take it in between.
  let started: { base: string; auth: StartedService<ServiceApp>; gatewayConfig: ReturnType<typeof testConfig> } | undefined;
  for (let attempt = 0; !started; attempt++) {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const config = testConfig({ ...shared, PUBLIC_URL: base, ORGANISATION_RPC_URL: organisation.server.url });
    const auth = await startService(createAuthApp, { config, db, bus });
    const gatewayConfig = testConfig({ ...shared, PUBLIC_URL: base, ORGANISATION_RPC_URL: organisation.server.url, AUTH_RPC_URL: auth.server.url });
    const gateway = await buildGateway({ clients: createServiceClients(gatewayConfig), serviceUrls: {}, logger, publicUrl: base });
    try {
      await gateway.listen({ port, host: "127.0.0.1" });
      gateways.push(gateway);
      started = { base, auth, gatewayConfig };
    } catch (err) {
      await gateway.close();
      await auth.stop();
      if ((err as { code?: string }).code !== "EADDRINUSE" || attempt >= 4) throw err;
    }
  }
  const { base, auth, gatewayConfig } = started;

  const member = { email: `${prefix}-owner@pages.test`, password: "correct horse battery" };
  const created = await organisation.client(OrganisationService).createOrganisation({
    name: `${prefix} Org`,
    ownerEmail: member.email,
    ownerPassword: member.password,
  });
  return {
    base,
    organisationId: created.organisation!.id,
    member,
    auth,
    async buildHttpsGateway() {
      const https = await buildGateway({
        clients: createServiceClients(gatewayConfig),
        serviceUrls: {},
        logger,
        publicUrl: "https://bizcard.test",
      });
      gateways.push(https);
      await https.listen({ port: 0, host: "127.0.0.1" });
      return { base: `http://127.0.0.1:${(https.server.address() as AddressInfo).port}`, close: () => https.close() };
    },
    async createClient(name, redirectUris, options = {}) {
      const res = await auth.client(AuthService).createClient({ name, redirectUris, public: options.public ?? false, scopes: options.scopes ?? [] });
      return { clientId: res.client!.clientId, clientSecret: res.clientSecret };
    },
    async stop() {
      for (const g of gateways) await g.close();
      await auth.stop();
      await organisation.stop();
      await bus.close();
      await db.drop();
    },
  };
}

/** A PKCE pair (RFC 7636 §4.1, §4.2: S256). */
export async function pkcePair(): Promise<{ verifier: string; challenge: string }> {
  const { createHash, randomBytes } = await import("node:crypto");
  const verifier = randomBytes(32).toString("base64url");
  return { verifier, challenge: createHash("sha256").update(verifier).digest("base64url") };
}
