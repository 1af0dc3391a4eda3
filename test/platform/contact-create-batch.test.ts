// CreateContact under concurrency (contacts/contact-create.ts): calls that
// arrive while the service's statements are busy are written together, one
// statement for many contacts; each call still gets its own answer: its
// contact, or NOT_FOUND for an organisation that does not exist, and exactly
// one contact.created event per contact written. A row that fails the
// batch's statement fails only its own call.
import { fromBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ContactEventSchema, EventType, type ContactEvent } from "../../gen/bizcard/events/v1/events_pb.js";
import { OrganisationService } from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import { startPlatform, type OrganisationApp, type Platform, type StartedService } from "../support/platform.js";
import { waitFor } from "../support/processes.js";

let platform: Platform;
let svc: StartedService<OrganisationApp>;
const received: ContactEvent[] = [];

beforeAll(async () => {
  platform = await startPlatform({ sessions: "many" });
  svc = platform.organisation;
  await platform.bus.consume({ durable: "create-batch-test", subject: "contact.>" }, async (m) => {
    received.push(fromBinary(ContactEventSchema, m.data));
  });
});

afterAll(async () => {
  await platform?.stop();
});

const codeOf = (r: PromiseSettledResult<unknown>) =>
  r.status === "rejected" ? ConnectError.from(r.reason).code : undefined;

describe("CreateContact, many at once", () => {
  it("answers each call for itself, writes each contact once with one event, and writes calls that came together in one transaction", async () => {
    const client = svc.client(OrganisationService);
    const organisations: string[] = [];
    for (let o = 0; o < 3; o++) {
      const { organisation } = await client.createOrganisation({
        name: `Batch ${o}`,
        ownerEmail: `owner${o}@batch.test`,
        ownerPassword: "password-b",
      });
      organisations.push(organisation!.id);
    }
    const missing = randomUUID();
    const calls = Array.from({ length: 120 }, (_, i) =>
      i % 20 === 7
        ? { organisationId: missing, firstName: `Nobody${i}` }
        : { organisationId: organisations[i % 3]!, firstName: `C${i}` },
    );
    const answers = await Promise.allSettled(
      calls.map((c) =>
        client.createContact({
          organisationId: c.organisationId,
          fields: { firstName: c.firstName, email: `${c.firstName.toLowerCase()}@batch.test` },
        }),
      ),
    );

    const created = new Map<string, string>();
    for (const [i, a] of answers.entries()) {
      if (calls[i]!.organisationId === missing) {
        expect(codeOf(a), `call ${i}: its organisation does not exist`).toBe(Code.NotFound);
        continue;
      }
      expect(a.status, `call ${i}`).toBe("fulfilled");
      const contact = (a as PromiseFulfilledResult<Awaited<ReturnType<typeof client.createContact>>>).value.contact!;
      expect(contact.firstName).toBe(calls[i]!.firstName);
      expect(contact.organisationId).toBe(calls[i]!.organisationId);
      created.set(contact.id, contact.firstName);
      // Readable as answered, in its own organisation.
      const { contact: read } = await client.getContact({ id: contact.id, organisationId: contact.organisationId });
      expect(read?.firstName).toBe(contact.firstName);
    }
    expect(created.size).toBe(114);

    // One contact.created each, carrying the contact as answered; none for the missing organisation.
    const mine = await waitFor(
      () => {
        const m = received.filter(
          (e) => e.type === EventType.CONTACT_CREATED && organisations.includes(e.organisationId),
        );
        return m.length >= 114 ? m : undefined;
      },
      30_000,
      "every contact.created",
    );
    expect(mine).toHaveLength(114);
    expect(new Map(mine.map((e) => [e.contact!.id, e.contact!.firstName]))).toEqual(created);
    expect(received.some((e) => e.organisationId === missing)).toBe(false);

    // Calls that came together shared a statement: some transaction wrote several events.
    const [row] = await svc.app.orm.em
      .fork()
      .execute<{ most: number }[]>(
        `select coalesce(max("n"), 0)::int as "most" from (select count(*) as "n" from "organisation"."outbox" group by xmin::text) t`,
      );
    expect(row!.most).toBeGreaterThan(1);
  });

  it("a contact the database refuses fails its own call only; the others that came with it are written", async () => {
    const client = svc.client(OrganisationService);
    const { organisation } = await client.createOrganisation({
      name: "Refused",
      ownerEmail: "owner@refused.test",
      ownerPassword: "password-r",
    });
    const organisationId = organisation!.id;
    // This test's own database refuses one first name (what a failing row looks like to the statement).
    await svc.app.orm.em
      .fork()
      .execute(`alter table "organisation"."contact" add constraint "test_refuses" check ("first_name" <> 'RefuseMe')`);
    try {
      const names = Array.from({ length: 30 }, (_, i) => (i === 11 ? "RefuseMe" : `R${i}`));
      const answers = await Promise.allSettled(
        names.map((firstName) => client.createContact({ organisationId, fields: { firstName } })),
      );
      expect(answers.filter((a) => a.status === "fulfilled")).toHaveLength(29);
      // Unexpected for the service: INTERNAL, its cause logged, not sent.
      expect(codeOf(answers[11]!)).toBe(Code.Internal);
      const { contacts } = await client.listContacts({ organisationId, pageSize: 100 });
      expect(contacts.map((c) => c.firstName).sort()).toEqual(names.filter((n) => n !== "RefuseMe").sort());
      // And its event was not written either.
      await waitFor(
        () => (received.filter((e) => e.organisationId === organisationId).length >= 29 ? true : undefined),
        30_000,
        "the 29 events",
      );
      expect(
        received
          .filter((e) => e.organisationId === organisationId)
          .map((e) => e.contact!.firstName)
          .sort(),
      ).toEqual(contacts.map((c) => c.firstName).sort());
    } finally {
      await svc.app.orm.em.fork().execute(`alter table "organisation"."contact" drop constraint "test_refuses"`);
    }
  });
});
