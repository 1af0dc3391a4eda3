// A fetched metadata document kept as a client row (id: the document's URL;
// public, no secret), so that grants and tokens reference it like any client.
// Two first uses at once both write: an upsert, never a duplicate-key failure;
// a row of another kind with that id is never overwritten.
import type { MikroORM } from "@mikro-orm/postgresql";
import { ClientEntity, type Client } from "../client.entity.js";
import type { DocumentMetadata } from "./parse-document.js";

export async function storeDocumentClient(
  orm: MikroORM,
  schema: string,
  url: string,
  m: DocumentMetadata,
  copy: { fetchedAt: Date; expiresAt: Date },
): Promise<Client> {
  const em = orm.em.fork();
  const rows = await em.execute<Record<string, unknown>[]>(
    `insert into "${schema}"."client" as c
       ("id", "name", "redirect_uris", "scopes", "public", "owner_organisation_id", "secret_hash", "grant_types", "created_at",
        "registration", "client_uri", "application_type", "token_endpoint_auth_method", "metadata_fetched_at", "metadata_expires_at")
     values (?, ?, ?::jsonb, ?::jsonb, true, null, null, ?::jsonb, ?, 'metadata_document', ?, ?, 'none', ?, ?)
     on conflict ("id") do update set
       "name" = excluded."name", "redirect_uris" = excluded."redirect_uris", "scopes" = excluded."scopes",
       "grant_types" = excluded."grant_types", "client_uri" = excluded."client_uri", "application_type" = excluded."application_type",
       "metadata_fetched_at" = excluded."metadata_fetched_at", "metadata_expires_at" = excluded."metadata_expires_at"
     where c."registration" = 'metadata_document'
     returning *`,
    [
      url,
      m.name,
      JSON.stringify(m.redirectUris),
      JSON.stringify(m.scopes),
      JSON.stringify(m.grantTypes),
      copy.fetchedAt,
      m.clientUri,
      m.applicationType,
      copy.fetchedAt,
      copy.expiresAt,
    ],
  );
  const row = rows[0];
  if (!row) throw new Error(`client ${url} exists and is not a metadata document client`);
  return em.map(ClientEntity, row);
}
