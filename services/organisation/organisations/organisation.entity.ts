import { defineEntity, p, type InferEntity } from "@mikro-orm/core";

export const OrganisationEntity = defineEntity({
  name: "Organisation",
  tableName: "organisation",
  properties: {
    id: p.uuid().primary(),
    name: p.text(),
    createdAt: p.datetime(3).onCreate(() => new Date()),
  },
});

export type Organisation = InferEntity<typeof OrganisationEntity>;
