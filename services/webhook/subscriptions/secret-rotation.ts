// Rotating a subscription's signing secret with an overlap, during which the
// old one signs too. Standard Webhooks: "The reason it is a list, and not just
// one signature is to support zero downtime secret rotation." The row is
// locked while it changes. And ReencryptSecrets (`bizcard secrets reencrypt`):
// the stored secrets sealed again under the current key, unchanged themselves.
import type { EntityManager } from "@mikro-orm/postgresql";
import type { Pair } from "../../shared/owner.js";
import { readingSecret, type SecretBox } from "./secret-box.js";
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

type PreviousSecret = Pick<Subscription, "previousSecret" | "previousSecretExpiresAt">;

/** The secret before the last rotation while it still signs at `at`, else undefined. */
export function signingPreviousSecret(s: PreviousSecret, at = new Date()) {
  if (!s.previousSecret || !s.previousSecretExpiresAt || s.previousSecretExpiresAt <= at) return undefined;
  return { secret: s.previousSecret, expiresAt: s.previousSecretExpiresAt };
}

/** Rows sealed again per transaction. */
const REENCRYPT_BATCH_SIZE = 500;

type Row = {
  id: string;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: Date | string | null;
};

/**
 * Seals again every secret not sealed under `box`'s current key, in batches in
 * id order, each its own transaction with its rows locked (a run that stops
 * part way keeps what it did); answers how many subscriptions changed. One
 * that opens under no listed key stops the run with FAILED_PRECONDITION naming
 * it. A previous secret past its overlap signs no more: it is dropped.
 */
export async function reencryptSecrets(em: EntityManager, box: SecretBox, batchSize = REENCRYPT_BATCH_SIZE) {
  const reseal = (id: string, stored: string) => readingSecret(id, () => box.reseal(stored));
  let after = "0";
  let count = 0;
  for (;;) {
    const done = await em.fork().transactional(async (tx) => {
      const rows = await tx.execute<Row[]>(
        `select "id"::text as "id", "secret", "previous_secret", "previous_secret_expires_at" from ${SCHEMA}."subscription"
          where "id" > ? and (not starts_with("secret", ?) or not starts_with("previous_secret", ?))
          order by "id" limit ? for update`,
        [after, box.currentPrefix, box.currentPrefix, batchSize],
      );
      if (rows.length === 0) return true;
      const now = new Date();
      const sealed = rows.map((r) => {
        const expires = r.previous_secret_expires_at === null ? null : new Date(r.previous_secret_expires_at);
        const signing = r.previous_secret !== null && expires !== null && expires > now;
        return {
          id: r.id,
          secret: reseal(r.id, r.secret),
          previous_secret: signing ? reseal(r.id, r.previous_secret!) : null,
          previous_secret_expires_at: signing ? expires!.toISOString() : null,
        };
      });
      await tx.execute(
        `update ${SCHEMA}."subscription" s
            set "secret" = v."secret", "previous_secret" = v."previous_secret", "previous_secret_expires_at" = v."previous_secret_expires_at"
           from jsonb_to_recordset(?::jsonb) as v("id" bigint, "secret" text, "previous_secret" text, "previous_secret_expires_at" timestamptz)
          where s."id" = v."id"`,
        [JSON.stringify(sealed)],
      );
      count += rows.length;
      after = rows.at(-1)!.id;
      return false;
    });
    if (done) return count;
  }
}
