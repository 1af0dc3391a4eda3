import { defineEntity, p } from "@mikro-orm/core";
import { ClientEntity } from "../clients/client.entity.js";

/** An organisation's consent to a client: one per (organisation, client). Its codes and tokens go with it. */
export const GrantEntity = defineEntity({
  name: "Grant",
  tableName: "grant",
  properties: {
    id: p.uuid().primary(),
    organisationId: p.uuid(),
    clientId: () =>
      p
        .manyToOne(ClientEntity)
        .mapToPk()
        .fieldName("client_id")
        .foreignKeyName("grant_client_id_fkey")
        .deleteRule("cascade")
        .updateRule("no action")
        .index("grant_client_id_index"),
    /** Consented scopes, in the server's order. */
    scopes: p.json<string[]>(),
    createdAt: p.datetime(3),
    updatedAt: p.datetime(3),
  },
  uniques: [{ name: "grant_organisation_client_unique", properties: ["organisationId", "clientId"] }],
  // ListGrants: newest first within an organisation (the unique index leads with organisation_id).
});
