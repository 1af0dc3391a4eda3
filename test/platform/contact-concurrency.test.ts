// Concurrent updates of one contact: updateContact locks the contact's row
// (PESSIMISTIC_WRITE), so N concurrent updates commit one after the other,
// each on top of the one before, and emit N contact.updated events, in the
// order they committed, each carrying the state after its own update.
import { fromBinary } from "@bufbuild/protobuf";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ContactEventSchema, EventType, type ContactEvent } from "../../gen/bizcard/events/v1/events_pb.js";
import { OrganisationService, type Contact } from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import { CONTACT_FIELDS, type ContactField } from "../../services/organisation/contacts/contact.entity.js";
import { startPlatform, type OrganisationApp, type Platform, type StartedService } from "../support/platform.js";
import { waitFor } from "../support/processes.js";

let platform: Platform;
let svc: StartedService<OrganisationApp>;
const received: ContactEvent[] = [];

beforeAll(async () => {
  platform = await startPlatform({ sessions: "many" }); // row and advisory locks need concurrent sessions
  svc = platform.organisation;
  await platform.bus.consume({ durable: "concurrency-test", subject: "contact.>" }, async (m) => {
    received.push(fromBinary(ContactEventSchema, m.data));
  });
});

afterAll(async () => {
  await platform?.stop();
});

/** One update per field, each setting a field no other update touches. */
const UPDATES: [ContactField, string][] = [
  ["lastName", "Lovelace"],
  ["email", "ada@concurrency.test"],
  ["phone", "+44 20 7946 0000"],
  ["company", "Analytical Engines"],
  ["jobTitle", "Programmer"],
  ["website", "https://ada.concurrency.test"],
  ["address", "12 St James's Square"],
  ["notes", "wrote the first program"],
];

const fieldsOf = (c: Contact | undefined) => Object.fromEntries(CONTACT_FIELDS.map((f) => [f, c?.[f] ?? ""]));

describe("concurrent updates of one contact", () => {
  it.each([1, 2, 3])(
    "emit one event each, in commit order, each the state after the updates before it (round %i)",
    async (round) => {
      const client = svc.client(OrganisationService);
      const { organisation } = await client.createOrganisation({
        name: `Concurrent ${round}`,
        ownerEmail: `owner${round}@concurrency.test`,
        ownerPassword: "password-c",
      });
      const { contact } = await client.createContact({
        organisationId: organisation!.id,
        fields: { firstName: "Ada" },
      });
      const id = contact!.id;

      // All at once: the requests race for the row.
      const answers = await Promise.all(
        UPDATES.map(([field, value]) =>
          client.updateContact({ id, organisationId: organisation!.id, fields: { [field]: value } }),
        ),
      );

      const events = await waitFor(
        () => {
          const mine = received.filter((e) => e.contact?.id === id);
          return mine.length === 1 + UPDATES.length ? mine : undefined;
        },
        30_000,
        "every event of the contact",
      );
      expect(events[0]!.type).toBe(EventType.CONTACT_CREATED);
      const updated = events.slice(1);
      expect(updated.every((e) => e.type === EventType.CONTACT_UPDATED)).toBe(true);

      // Applying the updates one by one, in the order of their events, gives each event's state.
      let state = fieldsOf(contact);
      const applied = new Set<ContactField>();
      const stateAfter = new Map<ContactField, Record<string, string>>();
      for (const event of updated) {
        const got = fieldsOf(event.contact);
        const added = UPDATES.filter(([field]) => !applied.has(field) && got[field] !== "");
        expect(added, `one new field in each event, after ${[...applied].join(", ") || "none"}`).toHaveLength(1);
        const [field, value] = added[0]!;
        state = { ...state, [field]: value };
        applied.add(field);
        expect(got).toEqual(state);
        stateAfter.set(field, state);
      }
      // ... and the last of them is what the contact holds now.
      const now = await client.getContact({ id, organisationId: organisation!.id });
      expect(fieldsOf(now.contact)).toEqual(state);
      expect(Object.values(state).every((v) => v !== "")).toBe(true);

      // Each caller was answered with the state its own update committed, the one its event carries.
      for (const [i, [field]] of UPDATES.entries()) {
        expect(fieldsOf(answers[i]!.contact), `the answer to the update of ${field}`).toEqual(stateAfter.get(field));
      }
      const times = updated.map((e) => timestampMs(e.contact!.updateTime!));
      expect(times).toEqual([...times].sort((a, b) => a - b));
    },
  );
});
