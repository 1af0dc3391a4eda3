// Client rows kept from metadata documents that nobody uses: anyone can make
// the service keep one (per URL), so a row without a grant or a sign-in under
// way is pruned once its copy has been expired for UNUSED_DOCUMENT_CLIENT_DAYS.
// Nothing is lost: the next request naming that client_id fetches it again.
import type { PruneTarget } from "../../../shared/prune/batch-delete.js";

export const UNUSED_DOCUMENT_CLIENT_DAYS = 30;

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
