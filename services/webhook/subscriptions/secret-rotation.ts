// Rotating a subscription's signing secret with an overlap, during which the
// old one signs too. Standard Webhooks: "The reason it is a list, and not just
// one signature is to support zero downtime secret rotation." The row is
// locked while it changes.
import type { EntityManager } from "@mikro-orm/postgresql";
import type { Pair } from "../../shared/owner.js";
import type { Subscription } from "./subscription.entity.js";

const SCHEMA = `"webhook"`;

export interface Rotation {
  pair: Pair;
  id: bigint;
  /** The new secret, as stored (sealed). */
  secret: string;
  overlapSeconds: number;
}

/**
 * Gives the pair's subscription `id` the secret `secret`; the old one, stored
 * as `keep` makes it, signs until now + overlapSeconds. Answers that time
 * (null: no overlap), or undefined when the pair has no such subscription.
 */
export async function rotateSecret(em: EntityManager, rotation: Rotation, keep: (stored: string) => string) {
  const { pair, id, secret, overlapSeconds } = rotation;
  const now = new Date();
  const expiresAt = overlapSeconds > 0 ? new Date(now.getTime() + overlapSeconds * 1000) : null;
  return em.transactional(async (tx) => {
    const [row] = await tx.execute<{ secret: string }[]>(
      `select "secret" from ${SCHEMA}."subscription" where "id" = ? and "organisation_id" = ? and "client_id" = ? for update`,
      [id.toString(), pair.organisationId, pair.clientId],
    );
    if (!row) return undefined;
    await tx.execute(
      `update ${SCHEMA}."subscription" set "previous_secret" = ?, "previous_secret_expires_at" = ?, "secret" = ?, "updated_at" = ? where "id" = ?`,
      [expiresAt ? keep(row.secret) : null, expiresAt, secret, now, id.toString()],
    );
    return { previousSecretExpiresAt: expiresAt };
  });
}

/** The secret before the last rotation while it still signs at `at`, else undefined. */
export function signingPreviousSecret(
  s: Pick<Subscription, "previousSecret" | "previousSecretExpiresAt">,
  at = new Date(),
): { secret: string; expiresAt: Date } | undefined {
  if (!s.previousSecret || !s.previousSecretExpiresAt || s.previousSecretExpiresAt <= at) return undefined;
  return { secret: s.previousSecret, expiresAt: s.previousSecretExpiresAt };
}
