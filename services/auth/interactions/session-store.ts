// Member sessions, server-side so that any gateway replica serves any request
// and logout is real. The cookie's value is a random secret; the row is keyed
// by its SHA-256 (tokenHash). Every read checks the expiry.
import type { MikroORM } from "@mikro-orm/postgresql";
import { tokenHash } from "../../shared/token-hash.js";
import { newSessionSecret, randomToken } from "./secrets.js";
import { SessionEntity, type Session } from "./session.entity.js";

export type SessionRow = Omit<Session, "idHash" | "createdAt">;

export function createSessionStore(orm: MikroORM, ttlSeconds: number) {
  return {
    /** Opens a session; returns the cookie's value (the secret) and the row. */
    async open(member: Pick<SessionRow, "memberId" | "organisationId" | "memberEmail">) {
      const secret = newSessionSecret();
      const createdAt = new Date();
      const expiresAt = new Date(createdAt.getTime() + ttlSeconds * 1000);
      const session: SessionRow = { ...member, csrfToken: randomToken(), expiresAt };
      await orm.em.fork().insert(SessionEntity, { ...session, idHash: tokenHash(secret), createdAt });
      return { secret, session };
    },

    /** The live session behind a cookie value, or null. */
    async find(secret: string): Promise<SessionRow | null> {
      if (!secret) return null;
      return orm.em.fork().findOne(SessionEntity, { idHash: tokenHash(secret), expiresAt: { $gt: new Date() } });
    },

    async end(secret: string): Promise<void> {
      await orm.em.fork().nativeDelete(SessionEntity, { idHash: tokenHash(secret) });
    },
  };
}
