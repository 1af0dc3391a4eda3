// Tenancy is never optional: every RPC that reads or changes an organisation's
// data names the organisation (or the owner pair of the webhook and delivery
// services). An empty or malformed one is INVALID_ARGUMENT; another
// organisation's row is NOT_FOUND, or, in a list, simply not there.
import { randomUUID } from "node:crypto";
import { fromBinary } from "@bufbuild/protobuf";
import { Code, type Client } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DeliveryService } from "../../gen/bizcard/delivery/v1/delivery_pb.js";
import { ContactEventSchema, EventType, type ContactEvent } from "../../gen/bizcard/events/v1/events_pb.js";
import { OrganisationService } from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import { DELIVERY_ENTITIES } from "../../services/delivery/delivery-app.js";
import { DELIVERY_SCHEMA } from "../../services/delivery/delivery-service.js";
import { deliveryMigrations } from "../../services/delivery/migrations/index.js";
import { openServiceDatabase } from "../../services/shared/database.js";
import type { EventBus } from "../../services/shared/event-bus/event-bus.js";
import { createLogger } from "../../services/shared/logger.js";
import { createTestDatabase, type TestDatabase } from "../support/backends.js";
import { startPlatform } from "../support/platform.js";
import { waitFor } from "../support/processes.js";
import { rpcError } from "../support/rpc.js";

const TOKEN = "t".repeat(40);
let bus: EventBus;
const databases: TestDatabase[] = [];
const stops: (() => Promise<void>)[] = [];
const received: ContactEvent[] = [];

// Two owners of the same organisation, and one of another organisation.
const ORG_A = randomUUID();
const ORG_B = randomUUID();
const OWNER_A = { organisationId: ORG_A, clientId: "bc_app_one" };
const OWNER_A2 = { organisationId: ORG_A, clientId: "bc_app_two" };
const OWNER_B = { organisationId: ORG_B, clientId: "bc_app_one" };
const SUBSCRIPTION_A = 7n;
const SUBSCRIPTION_A2 = 8n;

/** Attempt rows, written straight to the delivery schema: nothing writes them over RPC yet. */
async function seedDeliveryAttempts(db: TestDatabase): Promise<void> {
  const orm = await openServiceDatabase(
    {
      databaseUrl: db.url,
      databasePoolMax: db.poolMax,
      logger: createLogger("test", "silent"),
      config: { MIGRATE_ON_START: true },
    },
    { schema: DELIVERY_SCHEMA, entities: DELIVERY_ENTITIES, migrations: deliveryMigrations },
  );
  try {
    const insert = (
      owner: { organisationId: string; clientId: string },
      subscriptionId: bigint,
      attempt: number,
      at: string,
    ) =>
      orm.em.fork().execute(
        `insert into "delivery"."delivery_attempt"
           ("id", "organisation_id", "client_id", "event_id", "subscription_id", "delivery_id", "event_type", "attempt", "response_status", "outcome", "attempted_at")
         values (?, ?, ?, ?, ?, 1, 'contact.created', ?, 200, 'succeeded', ?)`,
        [randomUUID(), owner.organisationId, owner.clientId, randomUUID(), subscriptionId.toString(), attempt, at],
      );
    for (let i = 1; i <= 3; i++) await insert(OWNER_A, SUBSCRIPTION_A, i, `2026-11-22T10:00:0${i}.000Z`);
    await insert(OWNER_A2, SUBSCRIPTION_A2, 1, "2026-11-22T10:00:05.000Z");
    // A row of another owner that even carries A's subscription id: still never A's.
    await insert(OWNER_B, SUBSCRIPTION_A, 9, "2026-11-22T10:00:09.000Z");

    // The index serves "this owner's subscription's attempts, newest first" without a sort.
    const em = orm.em.fork();
    await em.transactional(async (tx) => {
      await tx.execute("set local enable_seqscan = off");
      const plan: { "QUERY PLAN": string }[] = await tx.execute(
        `explain select * from "delivery"."delivery_attempt"
          where "organisation_id" = ? and "client_id" = ? and "subscription_id" = ?
          order by "attempted_at" desc, "id" desc limit 51`,
        [ORG_A, OWNER_A.clientId, SUBSCRIPTION_A.toString()],
      );
      const text = plan.map((r) => r["QUERY PLAN"]).join("\n");
      expect(text).toContain("delivery_attempt_owner_subscription_index");
      expect(text).not.toMatch(/\bSort\b/);
    });
  } finally {
    await orm.close();
  }
}

let organisations: Client<typeof OrganisationService>;
let deliveries: Client<typeof DeliveryService>;

beforeAll(async () => {
  // One database per service: on the embedded backends each is a single-session PGlite.
  const organisation = await startPlatform({ token: TOKEN });
  stops.push(organisation.stop);
  bus = organisation.bus;
  await bus.consume({ durable: "tenancy-test", subject: "contact.>" }, async (m) => {
    received.push(fromBinary(ContactEventSchema, m.data));
  });
  organisations = organisation.organisation.client(OrganisationService);
  const deliveryDb = await createTestDatabase();
  databases.push(deliveryDb);
  await seedDeliveryAttempts(deliveryDb);
  const { NATS_STREAM, NATS_SUBJECT_PREFIX } = organisation.config;
  const delivery = await startPlatform({
    token: TOKEN,
    config: { NATS_STREAM, NATS_SUBJECT_PREFIX },
    db: deliveryDb,
    bus,
    organisation: false,
    delivery: true,
  });
  stops.push(delivery.stop);
  deliveries = delivery.delivery.client(DeliveryService);
}, 120_000);

afterAll(async () => {
  for (const stop of stops.reverse()) await stop();
  for (const db of databases) await db.drop();
});

describe("contacts belong to one organisation", () => {
  let orgId: string;
  let otherOrgId: string;
  let contactId: string;

  beforeAll(async () => {
    const a = await organisations.createOrganisation({
      name: "Tenant A",
      ownerEmail: "a@tenant-a.test",
      ownerPassword: "password-a",
    });
    const b = await organisations.createOrganisation({
      name: "Tenant B",
      ownerEmail: "b@tenant-b.test",
      ownerPassword: "password-b",
    });
    orgId = a.organisation!.id;
    otherOrgId = b.organisation!.id;
    const { contact } = await organisations.createContact({
      organisationId: orgId,
      fields: { firstName: "Grace", notes: "original" },
    });
    contactId = contact!.id;
  });

  it("GetContact and UpdateContact without an organisation are INVALID_ARGUMENT", async () => {
    for (const organisationId of ["", "not-a-uuid"]) {
      const get = await rpcError(organisations.getContact({ id: contactId, organisationId }));
      expect(get.code, `get, organisation_id ${JSON.stringify(organisationId)}`).toBe(Code.InvalidArgument);
      expect(get.rawMessage).toMatch(/^organisation_id: /);
      const upd = await rpcError(
        organisations.updateContact({ id: contactId, organisationId, fields: { notes: "changed" } }),
      );
      expect(upd.code, `update, organisation_id ${JSON.stringify(organisationId)}`).toBe(Code.InvalidArgument);
      expect(upd.rawMessage).toMatch(/^organisation_id: /);
    }
    expect((await organisations.getContact({ id: contactId, organisationId: orgId })).contact?.notes).toBe("original");
  });

  it("another organisation's contact is NOT_FOUND, for reads and updates alike, and the update changes nothing", async () => {
    const get = await rpcError(organisations.getContact({ id: contactId, organisationId: otherOrgId }));
    expect(get.code).toBe(Code.NotFound);
    expect(get.rawMessage).toBe("contact not found");
    const upd = await rpcError(
      organisations.updateContact({ id: contactId, organisationId: otherOrgId, fields: { notes: "hijacked" } }),
    );
    expect(upd.code).toBe(Code.NotFound);
    expect(upd.rawMessage).toBe("contact not found");
    // The same answer as for a contact that does not exist: nothing tells them apart.
    const missing = await rpcError(organisations.getContact({ id: randomUUID(), organisationId: otherOrgId }));
    expect(missing.code).toBe(Code.NotFound);
    expect(missing.rawMessage).toBe(get.rawMessage);

    const own = await organisations.getContact({ id: contactId, organisationId: orgId.toUpperCase() });
    expect(own.contact?.notes).toBe("original");
    expect(own.contact?.updateTime).toEqual(own.contact?.createTime);
  });

  it("the refused updates emitted no event: the contact's events are its creation and its one real update", async () => {
    const { contact } = await organisations.updateContact({
      id: contactId,
      organisationId: orgId,
      fields: { notes: "by its owner" },
    });
    expect(contact?.notes).toBe("by its owner");
    // Events of one contact leave in commit order, so once the owner's update has
    // arrived, any event of an earlier (refused) update would have arrived before it.
    const mine = () => received.filter((e) => e.contact?.id === contactId);
    const events = await waitFor(
      () => (mine().some((e) => e.contact?.notes === "by its owner") ? mine() : undefined),
      20_000,
      "the owner's update event",
    );
    expect(events.map((e) => [e.type, e.contact?.notes])).toEqual([
      [EventType.CONTACT_CREATED, "original"],
      [EventType.CONTACT_UPDATED, "by its owner"],
    ]);
  });
});

describe("the delivery log belongs to one owner", () => {
  it("ListDeliveryAttempts without a complete owner is INVALID_ARGUMENT", async () => {
    const cases = [
      { subscriptionId: SUBSCRIPTION_A },
      { owner: {}, subscriptionId: SUBSCRIPTION_A },
      { owner: { organisationId: "", clientId: OWNER_A.clientId }, subscriptionId: SUBSCRIPTION_A },
      { owner: { organisationId: "not-a-uuid", clientId: OWNER_A.clientId }, subscriptionId: SUBSCRIPTION_A },
      { owner: { organisationId: ORG_A, clientId: "" }, subscriptionId: SUBSCRIPTION_A },
    ];
    for (const req of cases) {
      const err = await rpcError(deliveries.listDeliveryAttempts(req));
      expect(
        err.code,
        JSON.stringify(req, (_k, v) => (typeof v === "bigint" ? v.toString() : v)),
      ).toBe(Code.InvalidArgument);
      expect(err.rawMessage).toMatch(/^owner/);
    }
  });

  it("lists the owner's attempts of its subscription, newest first, and never another owner's", async () => {
    const mine = await deliveries.listDeliveryAttempts({ owner: OWNER_A, subscriptionId: SUBSCRIPTION_A });
    expect(mine.attempts.map((a) => a.attempt)).toEqual([3, 2, 1]);
    expect(mine.nextPageToken).toBe("");

    // Another client of the same organisation, and the same client in another organisation,
    // asking for A's subscription: nothing of A's.
    for (const owner of [OWNER_A2, OWNER_B]) {
      const theirs = await deliveries.listDeliveryAttempts({ owner, subscriptionId: SUBSCRIPTION_A });
      expect(
        theirs.attempts.map((a) => a.attempt),
        owner.clientId + owner.organisationId,
      ).toEqual(owner === OWNER_B ? [9] : []);
    }
    expect(
      (await deliveries.listDeliveryAttempts({ owner: OWNER_A, subscriptionId: SUBSCRIPTION_A2 })).attempts,
    ).toEqual([]);
    expect(
      (await deliveries.listDeliveryAttempts({ owner: OWNER_A2, subscriptionId: SUBSCRIPTION_A2 })).attempts.map(
        (a) => a.attempt,
      ),
    ).toEqual([1]);
  });

  it("a page token of one owner reads nothing of theirs for another", async () => {
    const first = await deliveries.listDeliveryAttempts({
      owner: OWNER_A,
      subscriptionId: SUBSCRIPTION_A,
      pageSize: 1,
    });
    expect(first.attempts.map((a) => a.attempt)).toEqual([3]);
    expect(first.nextPageToken).not.toBe("");
    const next = await deliveries.listDeliveryAttempts({
      owner: OWNER_A,
      subscriptionId: SUBSCRIPTION_A,
      pageSize: 5,
      pageToken: first.nextPageToken,
    });
    expect(next.attempts.map((a) => a.attempt)).toEqual([2, 1]);
    const other = await deliveries.listDeliveryAttempts({
      owner: OWNER_A2,
      subscriptionId: SUBSCRIPTION_A,
      pageSize: 5,
      pageToken: first.nextPageToken,
    });
    expect(other.attempts).toEqual([]);
  });
});
