// Client rows kept from metadata documents that nobody uses: anyone can make
// the service fetch a document and keep it as a client row (one per URL), so
// rows without a grant are deleted once their copy has been expired for
// UNUSED_DOCUMENT_CLIENT_DAYS. Nothing is lost: the next authorization
// request naming that client_id fetches the document again, as for a new one.
import type { PruneTarget } from "../../../shared/prune/batch-delete.js";

/** How long a metadata document client without a grant is kept after its copy expired. */
export const UNUSED_DOCUMENT_CLIENT_DAYS = 30;

/**
 * The prune target (services/shared/prune/): registration metadata_document,
 * copy expired more than UNUSED_DOCUMENT_CLIENT_DAYS ago, no grant (a member
 * who connected it; its tokens hang on the grant), and no sign-in under way.
 */
export function unusedDocumentClients(schema: string): PruneTarget {
  const table = (name: string) => `"${schema}"."${name}"`;
  return {
    name: "unused metadata document clients",
    table: table("client"),
    where: `t."registration" = 'metadata_document'
      and t."metadata_expires_at" < now() - make_interval(days => ${UNUSED_DOCUMENT_CLIENT_DAYS})
      and not exists (select 1 from ${table("grant")} g where g."client_id" = t."id")
      and not exists (select 1 from ${table("interaction")} i where i."client_id" = t."id" and i."expires_at" > now())`,
  };
}
