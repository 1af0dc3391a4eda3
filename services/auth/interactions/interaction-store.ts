// Interactions: the validated authorization request (or an account login)
// waiting for the member's login and consent. A read is one statement,
// joining the client's registration and binding the interaction to the
// member of a live session when one is given. Every read checks the expiry.
import type { MikroORM } from "@mikro-orm/postgresql";
import type { Client as ClientMessage } from "../../../gen/bizcard/auth/v1/auth_pb.js";
import { tokenHash } from "../../shared/token-hash.js";
import { toClientMessage } from "../clients/client-message.js";
import { ClientEntity } from "../clients/client.entity.js";
import type { ValidatedRequest } from "./authorization-request.js";
import type { Interaction, StoredParameters } from "./interaction.entity.js";
import { randomToken } from "./secrets.js";

export type InteractionKindName = "authorize" | "account";

export type InteractionRow = Omit<Interaction, "kind" | "clientId" | "createdAt"> & {
  kind: InteractionKindName;
  /** AUTHORIZE: the client's registration now (null for ACCOUNT, or a client since deleted). */
  client: ClientMessage | null;
  /** find(..., bind): the session given was live, and the interaction is now its member's. */
  loggedIn: boolean;
};

export function createInteractionStore(orm: MikroORM, schema: string, ttlSeconds: number) {
  const interaction = `"${schema}"."interaction"`;
  const session = `"${schema}"."session"`;
  const client = `"${schema}"."client"`;
  const conn = () => orm.em.getConnection();
  const date = (v: unknown) => orm.em.getPlatform().parseDate(v as string) as Date;
  const toRow = (r: Record<string, unknown>): InteractionRow => ({
    id: String(r.id),
    kind: r.kind as InteractionKindName,
    csrfToken: String(r.csrf_token),
    // The joined client row (to_jsonb: column names) mapped as its entity is, whatever columns it has.
    client: r.client ? toClientMessage(orm.em.fork().map(ClientEntity, r.client as Record<string, unknown>)) : null,
    parameters: (r.parameters as StoredParameters | null) ?? null,
    scopes: (r.scopes as string[]) ?? [],
    memberId: (r.member_id as string | null) ?? null,
    organisationId: (r.organisation_id as string | null) ?? null,
    memberEmail: (r.member_email as string | null) ?? null,
    expiresAt: date(r.expires_at),
    loggedIn: Boolean(r.logged_in),
  });

  return {
    /** Stores a new interaction, bound at once to the member of sessionSecret's session when it is live. */
    async create(kind: InteractionKindName, request: ValidatedRequest | null, sessionSecret: string): Promise<string> {
      const id = randomToken();
      const now = new Date();
      await conn().execute(
        `insert into ${interaction} ("id", "kind", "csrf_token", "client_id", "parameters", "scopes",
           "member_id", "organisation_id", "member_email", "created_at", "expires_at")
         select ?, ?, ?, ?, ?::jsonb, ?::jsonb, s."member_id", s."organisation_id", s."member_email", ?, ?
         from (select 1) as "one" left join ${session} s on s."id_hash" = ? and s."expires_at" > ?`,
        [
          id,
          kind,
          randomToken(),
          request?.client.clientId ?? null,
          request ? JSON.stringify(request.parameters) : null,
          JSON.stringify(request?.scopes ?? []),
          now,
          new Date(now.getTime() + ttlSeconds * 1000),
          sessionSecret ? tokenHash(sessionSecret) : "",
          now,
        ],
      );
      return id;
    },

    /** The live interaction, or null; a live session's member (bindToSession) becomes its member, and loggedIn true. */
    async find(id: string, bindToSession = ""): Promise<InteractionRow | null> {
      if (!id) return null;
      const now = new Date();
      const row = (await conn().execute(
        `with s as (
           select "member_id", "organisation_id", "member_email" from ${session} where "id_hash" = ? and "expires_at" > ?
         ), bound as (
           update ${interaction} i set "member_id" = s."member_id", "organisation_id" = s."organisation_id", "member_email" = s."member_email"
           from s where i."id" = ? and i."expires_at" > ? returning i.*
         ), found as (
           select * from bound
           union all
           select i.* from ${interaction} i where i."id" = ? and i."expires_at" > ? and not exists (select 1 from bound)
         )
         select f.*, exists (select 1 from bound) as "logged_in", to_jsonb(c) as "client"
         from found f left join ${client} c on c."id" = f."client_id"`,
        [bindToSession ? tokenHash(bindToSession) : "", now, id, now, id, now],
        "get",
      )) as Record<string, unknown> | undefined;
      return row ? toRow(row) : null;
    },

    /** Single use: deletes it; false when it was gone already. */
    async consume(id: string): Promise<boolean> {
      const rows = (await conn().execute(
        `delete from ${interaction} where "id" = ? and "expires_at" > ? returning "id"`,
        [id, new Date()],
      )) as unknown[];
      return rows.length === 1;
    },
  };
}
