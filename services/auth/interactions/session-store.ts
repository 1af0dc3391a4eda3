// Member sessions (server-side, so any gateway replica serves any request and
// logout is real). The cookie's value is a random secret; the table keys the
// session by its SHA-256. Reads are one statement.
import type { MikroORM } from "@mikro-orm/postgresql";
import { tokenHash } from "../../shared/token-hash.js";
import { newSessionSecret, randomToken } from "./secrets.js";

export interface SessionRow {
  memberId: string;
  organisationId: string;
  memberEmail: string;
  csrfToken: string;
  expiresAt: Date;
}

export interface SessionStore {
  /** Opens a session; returns the cookie's value (the secret) and the row. */
  open(member: {
    memberId: string;
    organisationId: string;
    memberEmail: string;
  }): Promise<{ secret: string; session: SessionRow }>;
  /** The live session behind a cookie value, or null. */
  find(secret: string): Promise<SessionRow | null>;
  end(secret: string): Promise<void>;
  deleteExpired(now: Date): Promise<void>;
}

export function createSessionStore(orm: MikroORM, schema: string, ttlSeconds: number): SessionStore {
  const table = `"${schema}"."session"`;
  const conn = () => orm.em.getConnection();
  const date = (v: unknown) => orm.em.getPlatform().parseDate(v as string) as Date;
  return {
    async open(member) {
      const secret = newSessionSecret();
      const now = new Date();
      const session: SessionRow = {
        ...member,
        csrfToken: randomToken(),
        expiresAt: new Date(now.getTime() + ttlSeconds * 1000),
      };
      await conn().execute(
        `insert into ${table} ("id_hash", "member_id", "organisation_id", "member_email", "csrf_token", "created_at", "expires_at") values (?, ?, ?, ?, ?, ?, ?)`,
        [
          tokenHash(secret),
          member.memberId,
          member.organisationId,
          member.memberEmail,
          session.csrfToken,
          now,
          session.expiresAt,
        ],
      );
      return { secret, session };
    },
    async find(secret) {
      if (!secret) return null;
      const row = (await conn().execute(
        `select "member_id", "organisation_id", "member_email", "csrf_token", "expires_at" from ${table} where "id_hash" = ? and "expires_at" > ?`,
        [tokenHash(secret), new Date()],
        "get",
      )) as Record<string, unknown> | undefined;
      if (!row) return null;
      return {
        memberId: String(row.member_id),
        organisationId: String(row.organisation_id),
        memberEmail: String(row.member_email),
        csrfToken: String(row.csrf_token),
        expiresAt: date(row.expires_at),
      };
    },
    async end(secret) {
      await conn().execute(`delete from ${table} where "id_hash" = ?`, [tokenHash(secret)]);
    },
    async deleteExpired(now) {
      await conn().execute(`delete from ${table} where "expires_at" <= ?`, [now]);
    },
  };
}
