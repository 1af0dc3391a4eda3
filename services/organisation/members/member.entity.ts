import { defineEntity, p, type InferEntity } from "@mikro-orm/core";

export const MemberEntity = defineEntity({
  name: "Member",
  tableName: "member",
  properties: {
    id: p.uuid().primary(),
    organisationId: p.uuid(),
    /** Lower-cased; unique across organisations (a member logs in with it alone). */
    email: p.text().unique(),
    /** scrypt$N$r$p$salt$hash, see password.ts. */
    passwordHash: p.text().hidden(),
    createdAt: p.datetime(3).onCreate(() => new Date()),
  },
});

export type Member = InferEntity<typeof MemberEntity>;
