// Every service's committed migrations, from an empty database: each creates
// its own schema only, a second start applies nothing, and
// MIGRATE_ON_START=false leaves the database untouched.
import { Migration } from "@mikro-orm/migrations";
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
import { hasPendingMigrations, migrator, openServiceDatabase } from "../../services/shared/database.js";
import { createLogger } from "../../services/shared/logger.js";
import { webhookMigrations } from "../../services/webhook/migrations/index.js";
import { WEBHOOK_ENTITIES } from "../../services/webhook/webhook-app.js";
import { WEBHOOK_SCHEMA } from "../../services/webhook/webhook-service.js";
import { createTestDatabase, type TestDatabase } from "../support/backends.js";

const SERVICES = [
  {
    schema: AUTH_SCHEMA,
    entities: AUTH_ENTITIES,
    migrations: authMigrations,
    tables: [
      "access_token",
      "authorization_code",
      "client",
      "grant",
      "interaction",
      "outbox",
      "outbox_lease",
      "rate_limit",
      "refresh_token",
      "session",
    ],
  },
  {
    schema: ORGANISATION_SCHEMA,
    entities: [OrganisationEntity, MemberEntity, ContactEntity],
    migrations: organisationMigrations,
    tables: ["contact", "member", "organisation", "outbox", "outbox_lease"],
  },
  {
    schema: WEBHOOK_SCHEMA,
    entities: WEBHOOK_ENTITIES,
    migrations: webhookMigrations,
    tables: ["subscription", "subscription_end"],
  },
  {
    schema: DELIVERY_SCHEMA,
    entities: DELIVERY_ENTITIES,
    migrations: deliveryMigrations,
    tables: ["consumer_position", "delivery", "delivery_attempt", "delivery_event", "subscription_pause"],
  },
];

let db: TestDatabase;
const logger = createLogger("test", "silent");
const deps = (migrate: boolean) => ({
  databaseUrl: db.url,
  databasePoolMax: db.poolMax,
  logger,
  config: { MIGRATE_ON_START: migrate },
});

beforeAll(async () => {
  db = await createTestDatabase();
});

afterAll(async () => {
  await db?.drop();
});

async function tablesOf(schema: string): Promise<string[]> {
  const orm = await openServiceDatabase(deps(false), { schema, entities: SERVICES[0]!.entities, migrations: [] });
  try {
    const rows: { table_name: string }[] = await orm.em
      .fork()
      .execute(`select table_name from information_schema.tables where table_schema = ? order by table_name`, [schema]);
    return rows.map((r) => r.table_name);
  } finally {
    await orm.close();
  }
}

describe("migrations from an empty database", () => {
  it("MIGRATE_ON_START=false touches nothing", async () => {
    const { schema, entities, migrations } = SERVICES[1]!;
    const orm = await openServiceDatabase(deps(false), { schema, entities, migrations });
    await orm.close();
    expect(await tablesOf(schema)).toEqual([]);
  });

  for (const svc of SERVICES) {
    it(`${svc.schema}: applies its migrations into its own schema, once`, async () => {
      const first = await openServiceDatabase(deps(true), svc);
      const executed = await (await migrator(first)).getExecutedMigrations();
      await first.close();
      expect(executed.map((m) => m.name)).toEqual(svc.migrations.map((m) => m.name));
      expect(await tablesOf(svc.schema)).toEqual([...svc.tables, "mikro_orm_migrations"].sort());

      const second = await openServiceDatabase(deps(true), svc);
      expect(await (await migrator(second)).getPendingMigrations()).toEqual([]);
      expect((await (await migrator(second)).getExecutedMigrations()).length).toBe(svc.migrations.length);
      await second.close();
    });
  }

  it("replicas that start together on an empty database all come up, and migrate once", async () => {
    const fresh = await createTestDatabase();
    try {
      const svc = SERVICES[1]!;
      const replica = () =>
        openServiceDatabase(
          { databaseUrl: fresh.url, databasePoolMax: fresh.poolMax, logger, config: { MIGRATE_ON_START: true } },
          svc,
        );
      const orms = await Promise.all([replica(), replica(), replica()]);
      const executed = await (await migrator(orms[0]!)).getExecutedMigrations();
      expect(executed.map((m) => m.name)).toEqual(svc.migrations.map((m) => m.name));
      await Promise.all(orms.map((o) => o.close()));
    } finally {
      await fresh.drop();
    }
  });

  it("a start finds a migration committed since the last one, and applies it; with none, the check is one select", async () => {
    const svc = SERVICES[2]!;
    const first = await openServiceDatabase(deps(true), svc);
    expect(await hasPendingMigrations(first, svc.schema, svc.migrations)).toBe(false);
    await first.close();
    class Later extends Migration {
      override async up(): Promise<void> {
        this.addSql(`create table "${svc.schema}"."later" ("id" int primary key)`);
      }
    }
    const withLater = { ...svc, migrations: [...svc.migrations, { name: "2099-01-01-later", class: Later }] };
    const orm = await openServiceDatabase(deps(false), withLater);
    try {
      expect(await hasPendingMigrations(orm, svc.schema, withLater.migrations)).toBe(true);
    } finally {
      await orm.close();
    }
    const next = await openServiceDatabase(deps(true), withLater);
    try {
      expect(await hasPendingMigrations(next, svc.schema, withLater.migrations)).toBe(false);
      expect(await tablesOf(svc.schema)).toContain("later");
      await next.em.getConnection().execute(`drop table "${svc.schema}"."later"`);
      await next.em
        .getConnection()
        .execute(`delete from "${svc.schema}"."mikro_orm_migrations" where "name" = '2099-01-01-later'`);
    } finally {
      await next.close();
    }
  });

  it("no service's tables land in public", async () => {
    expect(await tablesOf("public")).toEqual([]);
  });
});
