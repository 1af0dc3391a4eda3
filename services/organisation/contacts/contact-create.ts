// CreateContact's write: the contact and its contact.created event in ONE
// statement (data-modifying CTEs), only if the organisation exists: one round
// trip instead of a transaction's five, and the outbox lock (writer.ts) held
// only until this statement commits. Calls that arrive while AT_ONCE statements
// run are written together by the next one (shared/statement-batcher.ts); a
// failed batch is written again one by one, so one bad row fails only its call.
import type { MikroORM } from "@mikro-orm/postgresql";
import { v7 } from "uuid";
import { EventType } from "../../../gen/bizcard/events/v1/events_pb.js";
import type { Contact as ContactMessage } from "../../../gen/bizcard/organisation/v1/organisation_pb.js";
import { statementBatcher, type Queued } from "../../shared/statement-batcher.js";
import { outboxInsertManySql, outboxRowOf } from "../../shared/outbox/writer.js";
import { CONTACT_FIELDS, snakeCase, type Contact, type ContactField } from "./contact.entity.js";
import { contactEvent, toContactMessage } from "./contact-message.js";

/** Statements writing contacts at once (each on a pooled connection). */
const AT_ONCE = 2;
/** The most contacts one statement writes. */
const BATCH_MAX = 200;

const COLUMNS = CONTACT_FIELDS.map((f) => `"${snakeCase(f)}"`).join(", ");

/** One call: its row of the statement's input, and its answer should the row be written. */
type Call = Queued<{ row: Record<string, unknown>; message: ContactMessage }, ContactMessage | undefined>;

function batchSql(schema: string): string {
  const s = `"${schema}"`;
  return `with "input" as (
       select * from jsonb_to_recordset(?::jsonb) as r("id" uuid, "organisation_id" uuid, ${CONTACT_FIELDS.map((f) => `"${snakeCase(f)}" text`).join(", ")},
         "created_at" timestamptz, "event_id" uuid, "subject" text, "payload" text, "traceparent" text, "tracestate" text, "order_key" text)
     ), "contact" as (
       insert into ${s}."contact" ("id", "organisation_id", ${COLUMNS}, "created_at", "updated_at")
       select i."id", o."id", ${CONTACT_FIELDS.map((f) => `i."${snakeCase(f)}"`).join(", ")}, i."created_at", i."created_at"
         from "input" i join ${s}."organisation" o on o."id" = i."organisation_id"
       returning "id"
     ), "event" as (
       ${outboxInsertManySql(
         schema,
         `(select i."event_id" as "id", i."subject", decode(i."payload", 'base64') as "payload", i."traceparent", i."tracestate", i."order_key"
            from "input" i join "contact" c on c."id" = i."id")`,
       )}
     )
     select "id"::text as "id" from "contact"`;
}

export function contactCreator(orm: MikroORM, events: { schema: string; subjectPrefix: string }, prepared: boolean) {
  const knex = orm.em.getKnex();
  const sql = batchSql(events.schema);
  // A named prepared statement on real PostgreSQL: knex hands options() to pg.
  const name = prepared ? { name: "organisation-create-contacts" } : {};
  const write = async (batch: Call[]): Promise<void> => {
    const { rows } = await knex
      .raw<{ rows: { id: string }[] }>(sql, [JSON.stringify(batch.map((c) => c.item.row))])
      .options(name);
    const created = new Set(rows.map((r) => r.id));
    for (const c of batch) c.resolve(created.has(c.item.message.id) ? c.item.message : undefined);
  };
  const written = statementBatcher<Call["item"], ContactMessage | undefined>({
    atOnce: AT_ONCE,
    max: BATCH_MAX,
    write: async (batch) => {
      try {
        await write(batch);
      } catch (err) {
        if (batch.length === 1) throw err;
        // One by one: a row that fails the statement fails only its own call.
        for (const c of batch) await write([c]).catch(c.reject);
      }
    },
  });

  return {
    /** The new contact as answered and as its event carries it; undefined when the organisation does not exist. */
    create(organisationId: string, fields: Partial<Record<ContactField, string>>) {
      const now = new Date();
      const contact = { id: v7(), organisationId, createdAt: now, updatedAt: now } as Contact;
      for (const f of CONTACT_FIELDS) contact[f] = fields[f] ?? "";
      const message = toContactMessage(contact);
      const event = contactEvent(events, EventType.CONTACT_CREATED, message);
      const row: Record<string, unknown> = {
        id: contact.id,
        organisation_id: organisationId,
        created_at: now.toISOString(),
        ...outboxRowOf(event),
      };
      for (const f of CONTACT_FIELDS) row[snakeCase(f)] = contact[f];
      return written({ row, message });
    },
  };
}
