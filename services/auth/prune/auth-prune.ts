// What the auth service prunes (services/shared/prune/): expired codes and
// tokens (tokens/expired-sweep.ts), expired member sessions and browser
// interactions, the failure counters whose window has ended, and the clients
// kept from metadata documents that nobody uses (clients/metadata-document/).
import type { PruneTarget } from "../../shared/prune/batch-delete.js";
import { unusedDocumentClients } from "../clients/metadata-document/unused-clients.js";
import { RATE_LIMIT_TABLE } from "../rate-limit/postgres-failure-limits.js";
import { expiredTokenTargets } from "../tokens/expired-sweep.js";

export function authPruneTargets(schema: string): PruneTarget[] {
  const table = (name: string) => `"${schema}"."${name}"`;
  return [
    ...expiredTokenTargets(schema),
    { name: "sessions", table: table("session"), where: `t."expires_at" <= now()` },
    { name: "interactions", table: table("interaction"), where: `t."expires_at" <= now()` },
    // rate-limiter-flexible's "expire" is epoch milliseconds; a row past it counts nothing.
    {
      name: "rate-limit counters",
      table: table(RATE_LIMIT_TABLE),
      where: `t."expire" < (extract(epoch from now()) * 1000)::bigint`,
    },
    unusedDocumentClients(schema),
  ];
}
