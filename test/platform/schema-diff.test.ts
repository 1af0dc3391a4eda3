// The entities agree with the committed migrations: on a fresh database, after
// every service's migrations ran, MikroORM's schema diff from the entities to
// the database is empty. A difference either way shows up as SQL: an index,
// unique constraint, foreign key or check the migrations made and the entities
// lack would be dropped; one the entities declare and the migrations lack
// would be created; a column that differs would be altered.
//
// The diff runs with safe: false (drops of columns, indexes, constraints are
// included) and dropTables: true (a table without an entity would be dropped).
// The only tables without an entity are skipped by name, on purpose:
//   organisation.outbox, organisation.outbox_lease, auth.outbox,
//     auth.outbox_lease: written with raw SQL by services/shared/outbox.ts, no entity;
//   mikro_orm_migrations: the migrator's own table (MikroORM leaves it out of
//     every diff by itself).
//
// What MikroORM does not compare: the direction of index columns (it reads
// each column with pg_get_indexdef and drops ASC/DESC). The migrations' "desc"
// indexes are declared in the entities with their columns in order.
import { MikroORM } from "@mikro-orm/postgresql";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AUTH_SCHEMA } from "../../services/auth/auth-service.js";
import { AUTH_ENTITIES } from "../../services/auth/auth-app.js";
import { authMigrations } from "../../services/auth/migrations/index.js";
import { DELIVERY_ENTITIES } from "../../services/delivery/delivery-app.js";
import { DELIVERY_SCHEMA } from "../../services/delivery/delivery-service.js";
import { deliveryMigrations } from "../../services/delivery/migrations/index.js";
import { ContactEntity } from "../../services/organisation/contacts/contact.entity.js";
import { MemberEntity } from "../../services/organisation/members/member.entity.js";
import { organisationMigrations } from "../../services/organisation/migrations/index.js";
import { ORGANISATION_SCHEMA } from "../../services/organisation/organisation-service.js";
import { OrganisationEntity } from "../../services/organisation/organisations/organisation.entity.js";
import { openServiceDatabase } from "../../services/shared/database.js";
import { createLogger } from "../../services/shared/logger.js";
import { webhookMigrations } from "../../services/webhook/migrations/index.js";
import { WEBHOOK_ENTITIES } from "../../services/webhook/webhook-app.js";
import { WEBHOOK_SCHEMA } from "../../services/webhook/webhook-service.js";
import { createTestDatabase, type TestDatabase } from "../support/backends.js";

/** Tables that have no entity on purpose (see above); nothing else is skipped. */
const TABLES_WITHOUT_ENTITY: Record<string, string[]> = {
  [ORGANISATION_SCHEMA]: ["outbox", "outbox_lease"],
  [AUTH_SCHEMA]: ["outbox", "outbox_lease"],
};

const SERVICES = [
  { schema: AUTH_SCHEMA, entities: AUTH_ENTITIES, migrations: authMigrations },
  {
    schema: ORGANISATION_SCHEMA,
    entities: [OrganisationEntity, MemberEntity, ContactEntity],
    migrations: organisationMigrations,
  },
  { schema: WEBHOOK_SCHEMA, entities: WEBHOOK_ENTITIES, migrations: webhookMigrations },
  { schema: DELIVERY_SCHEMA, entities: DELIVERY_ENTITIES, migrations: deliveryMigrations },
];

let db: TestDatabase;
const logger = createLogger("test", "silent");

beforeAll(async () => {
  db = await createTestDatabase();
  // Every service migrated into the one fresh database, as in production.
  for (const svc of SERVICES) {
    const orm = await openServiceDatabase(
      { databaseUrl: db.url, databasePoolMax: db.poolMax, logger, config: { MIGRATE_ON_START: true } },
      svc,
    );
    await orm.close();
  }
});

afterAll(async () => {
  await db?.drop();
});

async function openForDiff(svc: (typeof SERVICES)[number]): Promise<MikroORM> {
  return MikroORM.init({
    clientUrl: db.url,
    schema: svc.schema,
    entities: svc.entities,
    pool: { min: 0, max: 1 },
    allowGlobalContext: false,
    discovery: { warnWhenNoEntities: false },
    schemaGenerator: { skipTables: TABLES_WITHOUT_ENTITY[svc.schema] ?? [] },
  });
}

/** The SQL that would turn the migrated database into what the entities describe. */
async function schemaDiff(orm: MikroORM, schema: string): Promise<string> {
  const sql = await orm.getSchemaGenerator().getUpdateSchemaSQL({ wrap: false, safe: false, dropTables: true, schema });
  return sql.trim();
}

describe("entities agree with the committed migrations", () => {
  for (const svc of SERVICES) {
    it(`${svc.schema}: the schema diff against the migrated database is empty`, async () => {
      const orm = await openForDiff(svc);
      try {
        const sql = await schemaDiff(orm, svc.schema);
        // On failure the message is the SQL MikroORM would run: what differs.
        expect(sql, `schema diff of ${svc.schema}:\n${sql}`).toBe("");
      } finally {
        await orm.close();
      }
    });
  }

  it("the diff reports what the entities lack: an index, and a table no entity maps", async () => {
    // Guards the test itself (safe: false, dropTables: true, only the listed tables skipped).
    const svc = SERVICES[1]!;
    const orm = await openForDiff(svc);
    const em = orm.em.fork();
    try {
      await em.execute(`create index "contact_scratch_index" on "organisation"."contact" ("email")`);
      await em.execute(`create table "organisation"."scratch" ("id" int primary key)`);
      const sql = await schemaDiff(orm, svc.schema);
      expect(sql).toContain(`drop index "organisation"."contact_scratch_index"`);
      expect(sql).toContain(`drop table if exists "organisation"."scratch"`);
      expect(sql).not.toContain("outbox");
    } finally {
      await em.execute(`drop index if exists "organisation"."contact_scratch_index"`);
      await em.execute(`drop table if exists "organisation"."scratch"`);
      await orm.close();
    }
  });
});
