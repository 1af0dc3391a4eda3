// A fetched metadata document kept as a client row, so that grants and tokens
// can reference it like any client's: id = the document's URL, registration
// metadata_document, public, no secret, with when it was fetched and when it
// must be fetched again. Two first uses at once both write: insert or update
// on the primary key, never a duplicate-key failure. A row of another kind
// with that id (none can have a URL as id) is never overwritten.
import type { MikroORM } from "@mikro-orm/postgresql";
import { ClientEntity, type Client } from "../client.entity.js";
import type { DocumentMetadata } from "./parse-document.js";

export interface StoredDocument {
  url: string;
  metadata: DocumentMetadata;
  fetchedAt: Date;
  expiresAt: Date;
}

export async function storeDocumentClient(orm: MikroORM, schema: string, doc: StoredDocument): Promise<Client> {
  const em = orm.em.fork();
  const m = doc.metadata;
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
      doc.url,
      m.name,
      JSON.stringify(m.redirectUris),
      JSON.stringify(m.scopes),
      JSON.stringify(m.grantTypes),
      doc.fetchedAt,
      m.clientUri,
      m.applicationType,
      doc.fetchedAt,
      doc.expiresAt,
    ],
  );
  const row = rows[0];
  if (!row) throw new Error(`client ${doc.url} exists and is not a metadata document client`);
  return em.map(ClientEntity, row);
}
