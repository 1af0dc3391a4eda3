// The lock order between issuing tokens under a grant (a code exchange, a
// refresh rotation) and ending it (RevokeGrant's cascading delete, an RFC 7009
// family revocation): both take the grant's row lock first, issuing in KEY
// SHARE mode (issuers never wait for each other), ending in UPDATE mode. A
// revocation then waits for an issue in flight and deletes what it wrote; an
// issue waits for a revocation in flight and finds the grant gone. Without
// it, the foreign-key check and the cascade deadlock (a server_error), and a
// family revocation could miss a refresh token inserted after its delete began.
import type { EntityManager } from "@mikro-orm/postgresql";

/** In the issuing transaction, before anything else: false when the grant is gone. */
export async function lockGrantForIssue(em: EntityManager, schema: string, grantId: string): Promise<boolean> {
  const rows: unknown[] = await em.execute(`select 1 from "${schema}"."grant" where "id" = ? for key share`, [grantId]);
  return rows.length === 1;
}

/** The same, for a rotation: the grant of the refresh token with this hash. False when there is none. */
export async function lockGrantOfRefreshToken(em: EntityManager, schema: string, hash: string): Promise<boolean> {
  const rows: unknown[] = await em.execute(
    `select 1 from "${schema}"."grant" g join "${schema}"."refresh_token" r on r."grant_id" = g."id"
      where r."hash" = ? for key share of g`,
    [hash],
  );
  return rows.length === 1;
}
