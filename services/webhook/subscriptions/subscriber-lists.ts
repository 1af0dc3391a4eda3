// The subscribers the delivery service reads: ListSubscribers (a worker's
// cache miss) and ListSubscribersOfMany (a fan-out batch's lookups in one
// read), their signing secrets opened.
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import type { MikroORM } from "@mikro-orm/postgresql";
import { SubscriberSchema, type Subscriber } from "../../../gen/bizcard/webhook/v1/webhook_pb.js";
import type { WebhookService } from "../../../gen/bizcard/webhook/v1/webhook_pb.js";
import { eventTypeName } from "../../shared/event-types.js";
import { invalid, requireUuid } from "../../shared/validation.js";
import { readingSecret, type SecretBox } from "./secret-box.js";
import { signingPreviousSecret } from "./secret-rotation.js";

const SCHEMA = `"webhook"`;

/** The most lookups of one ListSubscribersOfMany. */
const MANY_LOOKUPS_MAX = 1000;

type Deps = { orm: MikroORM; secrets: SecretBox; preparedStatements?: boolean };
type Lists = Pick<ServiceImpl<typeof WebhookService>, "listSubscribers" | "listSubscribersOfMany">;

export function subscriberLists({ orm, secrets, preparedStatements }: Deps): Lists {
  // knex's raw skips the ORM's per-query work; a name in options() makes it a prepared statement in pg.
  const knex = orm.em.getKnex();
  const run = async (name: string, sql: string, values: (string | boolean)[]) =>
    (await knex.raw<{ rows: Record<string, unknown>[] }>(sql, values).options(preparedStatements ? { name } : {})).rows;
  const subscribersSql = `select "id"::text as "id", "client_id", "target_url", "secret", "previous_secret", "previous_secret_expires_at", "disabled_at", "ordered"
       from ${SCHEMA}."subscription"
      where "organisation_id" = ?::uuid and "event_type" = ?::text and (?::boolean or "disabled_at" is null) order by "id"`;
  // The fan-out's batch: every lookup in one read (the rows tagged with their lookup's index).
  const manySql = `select l."n", s."id"::text as "id", s."client_id", s."target_url", s."secret", s."previous_secret", s."previous_secret_expires_at", s."disabled_at", s."ordered"
       from jsonb_to_recordset(?::jsonb) as l("n" int, "organisation_id" uuid, "event_type" text, "include_disabled" boolean)
       join ${SCHEMA}."subscription" s on s."organisation_id" = l."organisation_id" and s."event_type" = l."event_type"
        and (l."include_disabled" or s."disabled_at" is null)
      order by l."n", s."id"`;

  return {
    async listSubscribers(req) {
      const organisationId = requireUuid("organisation_id", req.organisationId);
      const eventType = eventTypeName(req.eventType);
      // A disabled subscription gets nothing until its owner re-enables it (listed, marked, only when asked).
      const values = [organisationId, eventType, req.includeDisabled];
      const rows = await run("webhook-list-subscribers", subscribersSql, values);
      return { subscribers: rows.map((r) => subscriberOfRow(r, secrets)) };
    },

    async listSubscribersOfMany(req) {
      if (req.lookups.length > MANY_LOOKUPS_MAX) throw invalid("lookups", `at most ${MANY_LOOKUPS_MAX}`);
      const lookups = req.lookups.map((l, n) => ({
        n,
        organisation_id: requireUuid(`lookups[${n}].organisation_id`, l.organisationId),
        event_type: eventTypeName(l.eventType),
        include_disabled: l.includeDisabled,
      }));
      const results = lookups.map(() => ({ subscribers: [] as Subscriber[] }));
      if (lookups.length === 0) return { results };
      for (const r of await run("webhook-list-subscribers-of-many", manySql, [JSON.stringify(lookups)]))
        results[r.n as number]!.subscribers.push(subscriberOfRow(r, secrets));
      return { results };
    },
  };
}

/** One row of the service's subscriber statements as a Subscriber, its secrets opened. */
function subscriberOfRow(r: Record<string, unknown>, secrets: SecretBox): Subscriber {
  const at = r.previous_secret_expires_at as string | Date | null;
  const previousSecret = r.previous_secret as string | null;
  const previous = signingPreviousSecret({ previousSecret, previousSecretExpiresAt: at ? new Date(at) : null });
  const open = (stored: string) => readingSecret(r.id as string, () => secrets.open(stored));
  return create(SubscriberSchema, {
    subscriptionId: BigInt(r.id as string),
    clientId: r.client_id as string,
    targetUrl: r.target_url as string,
    secret: open(r.secret as string),
    disabled: r.disabled_at !== null,
    ordered: r.ordered as boolean,
    ...(previous
      ? { previousSecret: open(previous.secret), previousSecretExpireTime: timestampFromDate(previous.expiresAt) }
      : {}),
  });
}
