import { defineEntity, p, type InferEntity } from "@mikro-orm/core";
import { OrganisationEntity } from "../organisations/organisation.entity.js";

export const MemberEntity = defineEntity({
  name: "Member",
  tableName: "member",
  properties: {
    id: p.uuid().primary(),
    /** The organisation's id (a foreign key, deleted with it). */
    organisationId: () =>
      p
        .manyToOne(OrganisationEntity)
        .mapToPk()
        .fieldName("organisation_id")
        .foreignKeyName("member_organisation_id_fkey")
        .deleteRule("cascade")
        .updateRule("no action")
        .index("member_organisation_id_index"),
    /** Lower-cased; unique across organisations (a member logs in with it alone). */
    email: p.text().unique(),
    /** scrypt$N$r$p$salt$hash, see password.ts. */
    passwordHash: p.text().hidden(),
    createdAt: p.datetime(3).onCreate(() => new Date()),
  },
});

export type Member = InferEntity<typeof MemberEntity>;
