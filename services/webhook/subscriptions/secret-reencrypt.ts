// ReencryptSecrets (`bizcard secrets reencrypt`): the stored signing secrets
// sealed again under the current key (the secrets themselves do not change).
// In batches in id order, each its own transaction with its rows locked, so a
// run that stops part way keeps what it did.
import type { EntityManager } from "@mikro-orm/postgresql";
import type { SecretBox } from "./secret-box.js";
import { readingSecret } from "./subscriber-row.js";

const SCHEMA = `"webhook"`;

/** Rows sealed again per transaction. */
const REENCRYPT_BATCH_SIZE = 500;

type Row = {
  id: string;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: Date | string | null;
};

/**
 * Seals again every secret not sealed under `box`'s current key; answers how
 * many subscriptions changed. One that opens under no listed key stops the
 * run with FAILED_PRECONDITION naming it (the batches before it stay done).
 * A previous secret past its overlap signs no more: it is dropped rather than sealed.
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
        const signing =
          r.previous_secret !== null &&
          r.previous_secret_expires_at !== null &&
          new Date(r.previous_secret_expires_at) > now;
        return {
          id: r.id,
          secret: reseal(r.id, r.secret),
          previous_secret: signing ? reseal(r.id, r.previous_secret!) : null,
          previous_secret_expires_at: signing ? new Date(r.previous_secret_expires_at!).toISOString() : null,
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
