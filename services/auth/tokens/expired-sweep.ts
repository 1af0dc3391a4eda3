// Expired codes and tokens are deleted now and then (they are refused by
// their expiry anyway; this only keeps the tables small). A used or expired
// code is kept for a day, so that a late replay is still recognised. A
// refresh token family's rows (the rotated ones too) stay while any token of
// the family lives, so that the reuse of a rotated one is still detected and
// revokes the family. Grants are never pruned: a grant is the member's
// consent, one per organisation and client, kept (whether its access tokens
// have all expired or not) until it is revoked.
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
