// The order of locks between issuing tokens under a grant and ending it.
//
// Issuing (a code exchange, a refresh rotation) writes rows that reference the
// grant; ending it (RevokeGrant's delete, with its cascade; an RFC 7009
// revocation of a refresh-token family) deletes them. Both take the grant's
// row lock first: issuing in KEY SHARE mode (issuers never wait for each
// other), ending in UPDATE mode. So a revocation that starts while tokens are
// being issued waits for their commit and then deletes them too, and an
// issue that starts while a revocation runs waits for it and then finds the
// grant (or its code, or its refresh token) gone. Without the order, the
// issuer's foreign-key check and the revocation's cascade wait for each other
// (PostgreSQL aborts one: a server_error), and a family revocation could miss
// a refresh token inserted after its delete began.
import type { EntityManager } from "@mikro-orm/postgresql";

/** In the issuing transaction, before anything else: false when the grant is gone. */
export async function lockGrantForIssue(em: EntityManager, schema: string, grantId: string): Promise<boolean> {
  const rows: unknown[] = await em.execute(`select 1 from "${schema}"."grant" where "id" = ? for key share`, [grantId]);
  return rows.length === 1;
}

/** The same, for a rotation: the grant of the refresh token with this hash. False when there is none. */
export async function lockGrantOfRefreshToken(
  em: EntityManager,
  schema: string,
  refreshTokenHash: string,
): Promise<boolean> {
  const rows: unknown[] = await em.execute(
    `select 1 from "${schema}"."grant" g join "${schema}"."refresh_token" r on r."grant_id" = g."id"
      where r."hash" = ? for key share of g`,
    [refreshTokenHash],
  );
  return rows.length === 1;
}
