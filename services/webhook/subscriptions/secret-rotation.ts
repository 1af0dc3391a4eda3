// Rotating a subscription's signing secret with an overlap: the new secret
// signs from now on, and the one it replaces keeps signing too (a second
// signature in the same webhook-signature header) for the overlap, so a
// receiver verifies with either while it switches. Standard Webhooks: "The
// reason it is a list, and not just one signature is to support zero downtime
// secret rotation." One statement: a concurrent rotation of the same
// subscription waits for the row, then replaces this one's secret in turn.
import type { EntityManager } from "@mikro-orm/postgresql";
import type { Pair } from "../../shared/owner.js";
import type { Subscription } from "./subscription.entity.js";

/** WEBHOOK_SCHEMA (webhook-service.ts imports this file). */
const SCHEMA = `"webhook"`;

/**
 * Gives the pair's subscription `id` the secret `secret`; the one it had signs
 * until `now + overlapSeconds` (none does when 0, nor an older one). Answers
 * that time (null: no overlap), or undefined when the pair has no such subscription.
 */
export async function rotateSecret(
  em: EntityManager,
  pair: Pair,
  id: bigint,
  secret: string,
  overlapSeconds: number,
): Promise<{ previousSecretExpiresAt: Date | null } | undefined> {
  const now = new Date();
  const expiresAt = overlapSeconds > 0 ? new Date(now.getTime() + overlapSeconds * 1000) : null;
  // On the right of SET, "secret" is the row's value before this update: the secret being replaced.
  const rows = await em.execute<{ id: string }[]>(
    `update ${SCHEMA}."subscription"
        set "previous_secret" = ${expiresAt ? `"secret"` : "null"}, "previous_secret_expires_at" = ?, "secret" = ?, "updated_at" = ?
      where "id" = ? and "organisation_id" = ? and "client_id" = ?
      returning "id"`,
    [expiresAt, secret, now, id.toString(), pair.organisationId, pair.clientId],
  );
  return rows.length > 0 ? { previousSecretExpiresAt: expiresAt } : undefined;
}

/** The secret before the last rotation while it still signs at `at`, else undefined. */
export function signingPreviousSecret(s: Pick<Subscription, "previousSecret" | "previousSecretExpiresAt">, at = new Date()): { secret: string; expiresAt: Date } | undefined {
  if (!s.previousSecret || !s.previousSecretExpiresAt || s.previousSecretExpiresAt <= at) return undefined;
  return { secret: s.previousSecret, expiresAt: s.previousSecretExpiresAt };
}
