import { defineEntity, p, type InferEntity } from "@mikro-orm/core";

/** A member's login session. The cookie holds a random secret; only its SHA-256 (tokenHash) is stored. */
export const SessionEntity = defineEntity({
  name: "MemberSession",
  tableName: "session",
  properties: {
    idHash: p.text().primary(),
    memberId: p.uuid(),
    organisationId: p.uuid(),
    memberEmail: p.text(),
    /** What the session's forms carry (connected applications, logout). */
    csrfToken: p.text(),
    createdAt: p.datetime(3),
    expiresAt: p.datetime(3).index("session_expires_at_index"),
  },
});

export type Session = InferEntity<typeof SessionEntity>;
