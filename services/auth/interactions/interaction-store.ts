// Interactions: the validated authorization request (or an account login)
// waiting for the member's login and consent. Reads are one statement,
// joining the client's registration and, for a page view, binding the
// interaction to the member of a live session.
import type { MikroORM } from "@mikro-orm/postgresql";
import type { Client as ClientMessage } from "../../../gen/bizcard/auth/v1/auth_pb.js";
import { tokenHash } from "../../shared/token-hash.js";
import { toClientMessage } from "../clients/client-message.js";
import { ClientEntity } from "../clients/client.entity.js";
import type { ValidatedRequest } from "./authorization-request.js";
import type { StoredParameters } from "./interaction.entity.js";
import { randomToken } from "./secrets.js";

export type InteractionKindName = "authorize" | "account";

export interface InteractionRow {
  id: string;
  kind: InteractionKindName;
  csrfToken: string;
  /** AUTHORIZE: the client's registration now (null for ACCOUNT, or a client since deleted). */
  client: ClientMessage | null;
  parameters: StoredParameters | null;
  scopes: string[];
  memberId: string | null;
  organisationId: string | null;
  memberEmail: string | null;
  expiresAt: Date;
  /** find(..., bind): the session given was live, and the interaction is now its member's. */
  loggedIn: boolean;
}

export interface InteractionStore {
  /** Stores a new interaction, bound at once to the member of sessionSecret's session when it is live. */
  create(kind: InteractionKindName, request: ValidatedRequest | null, sessionSecret: string): Promise<string>;
  /**
   * The live interaction, or null. With bindToSession, a live session's member
   * becomes the interaction's (and loggedIn is true); without, nothing changes.
   */
  find(id: string, bindToSession?: string): Promise<InteractionRow | null>;
  /** Single use: deletes it; false when it was gone already. */
  consume(id: string): Promise<boolean>;
  deleteExpired(now: Date): Promise<void>;
}

export function createInteractionStore(orm: MikroORM, schema: string, ttlSeconds: number): InteractionStore {
  const interaction = `"${schema}"."interaction"`;
  const session = `"${schema}"."session"`;
  const client = `"${schema}"."client"`;
  const conn = () => orm.em.getConnection();
  const date = (v: unknown) => orm.em.getPlatform().parseDate(v as string) as Date;
  const toRow = (r: Record<string, unknown>): InteractionRow => ({
    id: String(r.id),
    kind: r.kind as InteractionKindName,
    csrfToken: String(r.csrf_token),
    // The joined row (to_jsonb of auth.client, column names) mapped as the
    // client registry maps its entity: whatever columns the client has.
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
    async create(kind, request, sessionSecret) {
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

    async find(id, bindToSession) {
      if (!id) return null;
      const now = new Date();
      if (bindToSession === undefined) {
        const row = (await conn().execute(
          `select i.*, false as "logged_in", to_jsonb(c) as "client"
           from ${interaction} i left join ${client} c on c."id" = i."client_id"
           where i."id" = ? and i."expires_at" > ?`,
          [id, now],
          "get",
        )) as Record<string, unknown> | undefined;
        return row ? toRow(row) : null;
      }
      // One statement: bind to the live session's member if there is one,
      // else read as it is; either way with the client's registration.
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

    async consume(id) {
      const rows = (await conn().execute(
        `delete from ${interaction} where "id" = ? and "expires_at" > ? returning "id"`,
        [id, new Date()],
      )) as unknown[];
      return rows.length === 1;
    },

    async deleteExpired(now) {
      await conn().execute(`delete from ${interaction} where "expires_at" <= ?`, [now]);
    },
  };
}
