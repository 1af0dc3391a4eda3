// Rows for the pruning tests (test/prune*.test.ts), inserted by SQL with the
// timestamps of long ago: each kind has OLD rows (more than one batch) that
// must go, and rows that must stay; rowsLeft() reads back what is left.
export type Exec = (sql: string, params?: unknown[]) => Promise<Record<string, unknown>[]>;

/** Old rows per kind: with PRUNE_BATCH_SIZE 100, each kind takes three batches. */
export const OLD_ROWS = 250;
const ORG_1 = "00000000-0000-4000-8000-000000000001";
const ORG_2 = "00000000-0000-4000-8000-000000000002";
const GRANT_1 = "00000000-0000-4000-8000-0000000000a1";
const GRANT_2 = "00000000-0000-4000-8000-0000000000a2";
const FAMILY_A = "00000000-0000-4000-8000-0000000000fa";
const FAMILY_B = "00000000-0000-4000-8000-0000000000fb";
const MEMBER = "00000000-0000-4000-8000-0000000000e1";

const series = `generate_series(1, ${OLD_ROWS}) i`;

export async function seedAuthRows(exec: Exec): Promise<void> {
  await exec(`insert into "auth"."client" ("id", "name", "redirect_uris", "scopes", "public", "created_at", "grant_types")
    values ('prune-client', 'Prune', '[]', '[]', true, now(), '[]')`);
  // Grant 1: every access token expired, its refresh token (family A) alive. Grant 2: nothing alive.
  await exec(`insert into "auth"."grant" ("id", "organisation_id", "client_id", "scopes", "created_at", "updated_at")
    values ('${GRANT_1}', '${ORG_1}', 'prune-client', '[]', now() - interval '90 days', now() - interval '90 days'),
           ('${GRANT_2}', '${ORG_2}', 'prune-client', '[]', now() - interval '90 days', now() - interval '90 days')`);
  await exec(`insert into "auth"."access_token" ("hash", "client_id", "organisation_id", "member_id", "grant_id", "family", "scopes", "created_at", "expires_at")
    select 'old-at-' || i, 'prune-client', '${ORG_1}', '${MEMBER}', '${GRANT_1}', '${FAMILY_A}', '[]', now() - interval '2 days', now() - interval '1 day' from ${series}`);
  await exec(`insert into "auth"."access_token" ("hash", "client_id", "organisation_id", "scopes", "created_at", "expires_at")
    values ('live-at', 'prune-client', '${ORG_2}', '[]', now(), now() + interval '1 hour')`);
  // Family A: a rotated token past its expiry, kept for reuse detection while the family's live one lives.
  await exec(`insert into "auth"."refresh_token" ("hash", "grant_id", "family", "member_id", "scopes", "created_at", "expires_at", "rotated_at")
    values ('old-rt-a', '${GRANT_1}', '${FAMILY_A}', '${MEMBER}', '[]', now() - interval '40 days', now() - interval '1 hour', now() - interval '1 day'),
           ('live-rt-a', '${GRANT_1}', '${FAMILY_A}', '${MEMBER}', '[]', now() - interval '1 day', now() + interval '29 days', null)`);
  await exec(`insert into "auth"."refresh_token" ("hash", "grant_id", "family", "member_id", "scopes", "created_at", "expires_at")
    select 'old-rt-b-' || i, '${GRANT_2}', '${FAMILY_B}', '${MEMBER}', '[]', now() - interval '40 days', now() - interval '10 days' from ${series}`);
  const code = (hash: string, expires: string, used: string) =>
    `select ${hash}, '${GRANT_1}'::uuid, 'prune-client', '${ORG_1}'::uuid, '${MEMBER}'::uuid, 'https://app.test/cb', '[]'::jsonb, 'challenge', ${expires}, (${used})::timestamptz`;
  await exec(`insert into "auth"."authorization_code" ("hash", "grant_id", "client_id", "organisation_id", "member_id", "redirect_uri", "scopes", "code_challenge", "expires_at", "used_at")
    ${code("'old-code-' || i", "now() - interval '2 days'", "now() - interval '2 days'")} from ${series}
    union all ${code("'recent-code'", "now() - interval '1 hour'", "now() - interval '1 hour'")}
    union all ${code("'live-code'", "now() + interval '5 minutes'", "null")}`);
  await exec(`insert into "auth"."session" ("id_hash", "member_id", "organisation_id", "member_email", "csrf_token", "created_at", "expires_at")
    select 'old-session-' || i, '${MEMBER}'::uuid, '${ORG_1}'::uuid, 'm@prune.test', 'c', now() - interval '1 day', now() - interval '1 hour' from ${series}
    union all select 'live-session', '${MEMBER}', '${ORG_1}', 'm@prune.test', 'c', now(), now() + interval '8 hours'`);
  await exec(`insert into "auth"."interaction" ("id", "kind", "csrf_token", "scopes", "created_at", "expires_at")
    select 'old-interaction-' || i, 'login', 'c', '[]'::jsonb, now() - interval '1 day', now() - interval '1 hour' from ${series}
    union all select 'live-interaction', 'login', 'c', '[]', now(), now() + interval '10 minutes'`);
  const nowMs = `(extract(epoch from now()) * 1000)::bigint`;
  await exec(`insert into "auth"."rate_limit" ("key", "points", "expire")
    select 'old-rl-' || i, 3, ${nowMs} - 1000 from ${series}
    union all select 'live-rl', 3, ${nowMs} + 60000`);
}

async function keys(exec: Exec, table: string, column: string): Promise<string[]> {
  const rows = await exec(`select "${column}"::text as k from ${table} order by 1`);
  return rows.map((r) => String(r.k));
}

export async function authRowsLeft(exec: Exec): Promise<Record<string, string[]>> {
  return {
    grant: await keys(exec, `"auth"."grant"`, "id"),
    access_token: await keys(exec, `"auth"."access_token"`, "hash"),
    refresh_token: await keys(exec, `"auth"."refresh_token"`, "hash"),
    authorization_code: await keys(exec, `"auth"."authorization_code"`, "hash"),
    session: await keys(exec, `"auth"."session"`, "id_hash"),
    interaction: await keys(exec, `"auth"."interaction"`, "id"),
    rate_limit: await keys(exec, `"auth"."rate_limit"`, "key"),
  };
}

export const AUTH_ROWS_KEPT = {
  grant: [GRANT_1, GRANT_2],
  access_token: ["live-at"],
  refresh_token: ["live-rt-a", "old-rt-a"],
  authorization_code: ["live-code", "recent-code"],
  session: ["live-session"],
  interaction: ["live-interaction"],
  rate_limit: ["live-rl"],
};

const EVENT_OLD = "00000000-0000-4000-8000-0000000000b1";
const EVENT_PENDING = "00000000-0000-4000-8000-0000000000b2";
const EVENT_RECENT = "00000000-0000-4000-8000-0000000000b3";

/** With DELIVERY_LOG_RETENTION_DAYS=7: rows of 10 days ago go (but a pending delivery and its event), rows of 3 days ago stay. */
export async function seedDeliveryRows(exec: Exec): Promise<void> {
  const event = (id: string, age: string) =>
    `('${id}', 'contact.created', '${ORG_1}', '{}', now() - interval '${age}')`;
  await exec(`insert into "delivery"."delivery_event" ("event_id", "event_type", "organisation_id", "body", "created_at")
    values ${event(EVENT_OLD, "10 days")}, ${event(EVENT_PENDING, "10 days")}, ${event(EVENT_RECENT, "3 days")}`);
  const delivery = (event: string, subscription: string, status: string, age: string) =>
    `select '${event}'::uuid, ${subscription}, '${ORG_1}'::uuid, 'prune-client', 'contact.created', '${status}', now() - interval '${age}', now() - interval '${age}'`;
  await exec(`insert into "delivery"."delivery" ("event_id", "subscription_id", "organisation_id", "client_id", "event_type", "status", "created_at", "updated_at")
    ${delivery(EVENT_OLD, "i", "succeeded", "10 days")} from ${series}
    union all ${delivery(EVENT_PENDING, "1000001", "pending", "10 days")}
    union all ${delivery(EVENT_RECENT, "1000002", "gave_up", "3 days")}`);
  const attempt = (id: string, age: string) =>
    `select ${id}, '${EVENT_OLD}'::uuid, 1, 1, 'succeeded', now() - interval '${age}', '${ORG_1}'::uuid, 'prune-client', 1, 'contact.created'`;
  await exec(`insert into "delivery"."delivery_attempt" ("id", "event_id", "subscription_id", "attempt", "outcome", "attempted_at", "organisation_id", "client_id", "delivery_id", "event_type")
    ${attempt("gen_random_uuid()", "10 days")} from ${series}
    union all ${attempt("'00000000-0000-4000-8000-0000000000c1'::uuid", "3 days")}`);
}

export async function deliveryRowsLeft(exec: Exec): Promise<Record<string, string[]>> {
  return {
    delivery: (
      await exec(`select "status" || ':' || "subscription_id" as k from "delivery"."delivery" order by 1`)
    ).map((r) => String(r.k)),
    delivery_attempt: await keys(exec, `"delivery"."delivery_attempt"`, "id"),
    delivery_event: await keys(exec, `"delivery"."delivery_event"`, "event_id"),
  };
}

export const DELIVERY_ROWS_KEPT = {
  delivery: ["gave_up:1000002", "pending:1000001"],
  delivery_attempt: ["00000000-0000-4000-8000-0000000000c1"],
  delivery_event: [EVENT_PENDING, EVENT_RECENT],
};
