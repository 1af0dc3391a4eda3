import type { MikroORM } from "@mikro-orm/postgresql";
import { OrganisationService } from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import { onRealPostgres, openServiceDatabase, pingDatabase } from "../shared/database.js";
import { openRelayDatabase } from "../shared/outbox/relay-database.js";
import { OutboxRelay } from "../shared/outbox/relay.js";
import { runChecks } from "../shared/rpc/health.js";
import type { ServiceApp, ServiceAppDeps } from "../shared/service-app.js";
import { ContactEntity } from "./contacts/contact.entity.js";
import { MemberEntity } from "./members/member.entity.js";
import { dummyHash } from "./members/password.js";
import { organisationMigrations } from "./migrations/index.js";
import { ORGANISATION_SCHEMA, createOrganisationService } from "./organisation-service.js";
import { OrganisationEntity } from "./organisations/organisation.entity.js";

export async function createOrganisationApp(
  deps: ServiceAppDeps,
): Promise<ServiceApp & { relay: OutboxRelay; orm: MikroORM }> {
  const { config, bus, logger } = deps;
  // The dummy password hash (what an unknown email is checked against) is made
  // while the database opens: no login pays for it.
  const dummyHashReady = dummyHash();
  dummyHashReady.catch(() => {}); // awaited below, after the database
  const orm = await openServiceDatabase(deps, {
    schema: ORGANISATION_SCHEMA,
    entities: [OrganisationEntity, MemberEntity, ContactEntity],
    migrations: organisationMigrations,
  });
  await dummyHashReady.catch(async (err) => {
    await orm.close();
    throw err;
  });
  const relayDb = await openRelayDatabase(deps, ORGANISATION_SCHEMA, orm);
  const relay = new OutboxRelay({
    orm: relayDb.orm,
    preparedStatements: relayDb.own,
    schema: ORGANISATION_SCHEMA,
    bus,
    logger,
    pollMs: config.OUTBOX_POLL_MS,
    leaseMs: config.OUTBOX_LEASE_MS,
    publishTimeoutMs: config.OUTBOX_PUBLISH_TIMEOUT_MS,
  });
  const service = createOrganisationService({
    orm,
    subjectPrefix: config.NATS_SUBJECT_PREFIX,
    onEventCommitted: () => relay.wake(),
    preparedStatements: onRealPostgres(deps),
  });
  return {
    name: "organisation",
    relay,
    orm,
    routes: (router) => router.service(OrganisationService, service),
    readiness: () => runChecks({ database: () => pingDatabase(orm) }, { bus: () => bus.ping() }),
    start: async () => relay.start(),
    close: async () => {
      await relay.stop();
      await relayDb.close();
      await orm.close();
    },
  };
}
