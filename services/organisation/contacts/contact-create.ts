// CreateContact's write: the contact and its contact.created event in ONE
// statement (data-modifying CTEs, committed on their own), only if the
// organisation exists. One round trip instead of a transaction's five
// (BEGIN, the organisation read, the two inserts, COMMIT), and the outbox
// lock (writer.ts) is held only from the event's insert to this statement's
// commit, never across a round trip to this process. Without the ORM's
// per-query work, and prepared on real PostgreSQL (shared/pooled-query.ts).
import { randomUUID } from "node:crypto";
import type { MikroORM } from "@mikro-orm/postgresql";
import { EventType } from "../../../gen/bizcard/events/v1/events_pb.js";
import type { Contact as ContactMessage } from "../../../gen/bizcard/organisation/v1/organisation_pb.js";
import { pooledStatement } from "../../shared/pooled-query.js";
import { outboxInsertParams, outboxInsertSql } from "../../shared/outbox/writer.js";
import { CONTACT_FIELDS, type Contact, type ContactField } from "./contact.entity.js";
import { contactEvent } from "./contact-events.js";
import { toContactMessage } from "./contact-message.js";

const snake = (f: string) => f.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
const COLUMNS = CONTACT_FIELDS.map((f) => `"${snake(f)}"`).join(", ");

/** The new contact as answered and as its event carries it; undefined when the organisation does not exist (nothing written). */
export async function createContactWithEvent(
  orm: MikroORM,
  events: { schema: string; subjectPrefix: string },
  organisationId: string,
  fields: Partial<Record<ContactField, string>>,
  prepared: boolean,
): Promise<ContactMessage | undefined> {
  const now = new Date();
  const contact = { id: randomUUID(), organisationId, createdAt: now, updatedAt: now } as Contact;
  for (const f of CONTACT_FIELDS) contact[f] = fields[f] ?? "";
  const message = toContactMessage(contact);
  const event = contactEvent(events, EventType.CONTACT_CREATED, message);
  const s = `"${events.schema}"`;
  const statement = pooledStatement(
    orm,
    "organisation-create-contact",
    `with "contact" as (
       insert into ${s}."contact" ("id", "organisation_id", ${COLUMNS}, "created_at", "updated_at")
       select ?::uuid, o."id", ${CONTACT_FIELDS.map(() => "?::text").join(", ")}, ?::timestamptz, ?::timestamptz from ${s}."organisation" o where o."id" = ?::uuid
       returning "id"
     ), "event" as (
       ${outboxInsertSql(events.schema, `"contact"`)}
     )
     select count(*)::int as "created" from "contact"`,
    prepared,
  );
  const [row] = await statement<{ created: number }>([contact.id, ...CONTACT_FIELDS.map((f) => contact[f]), now, now, organisationId, ...outboxInsertParams(events.schema, event)]);
  return row?.created === 1 ? message : undefined;
}
