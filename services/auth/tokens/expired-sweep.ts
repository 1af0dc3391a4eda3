// Expired codes and tokens, deleted now and then to keep the tables small
// (their expiry refuses them anyway). A used or expired code stays a day, so
// a late replay is still recognised; a refresh token family's rows stay while
// any of them lives, so the reuse of a rotated one still revokes the family.
// Grants (a member's consent) are never pruned, only revoked.
import type { MikroORM } from "@mikro-orm/postgresql";
import { deleteInBatches, type PruneTarget } from "../../shared/prune/batch-delete.js";

export function expiredTokenTargets(schema: string): PruneTarget[] {
  const table = (name: string) => `"${schema}"."${name}"`;
  return [
    {
      name: "authorization codes",
      table: table("authorization_code"),
      where: `t."expires_at" < now() - interval '1 day'`,
    },
    { name: "access tokens", table: table("access_token"), where: `t."expires_at" < now()` },
    {
      name: "refresh tokens",
      table: table("refresh_token"),
      where: `t."expires_at" < now() and not exists (
        select 1 from ${table("refresh_token")} l where l."family" = t."family" and l."expires_at" >= now())`,
    },
  ];
}

/** Deletes every expired code and token now (in batches); answers how many. */
export async function deleteExpired(orm: MikroORM, schema: string, batchSize = 500): Promise<number> {
  let deleted = 0;
  for (const target of expiredTokenTargets(schema)) {
    for (const count of await deleteInBatches(orm, target, batchSize)) deleted += count;
  }
  return deleted;
}
