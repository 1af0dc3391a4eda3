// Expired codes and tokens are deleted now and then (they are refused by
// their expiry anyway; this only keeps the tables small). A used or expired
// code is kept for a day, so that a late replay is still recognised; a rotated
// refresh token lives until its own expiry, so that reuse is detected.
import type { MikroORM } from "@mikro-orm/postgresql";
import type { Logger } from "../../shared/logger.js";

export async function deleteExpired(orm: MikroORM, schema: string): Promise<number> {
  const em = orm.em.fork();
  let deleted = 0;
  for (const sql of [
    `delete from "${schema}"."authorization_code" where "expires_at" < now() - interval '1 day'`,
    `delete from "${schema}"."access_token" where "expires_at" < now()`,
    `delete from "${schema}"."refresh_token" where "expires_at" < now()`,
  ]) {
    const res = await em.getConnection().execute(sql, [], "run");
    deleted += Number((res as { affectedRows?: number }).affectedRows ?? 0);
  }
  return deleted;
}

/** Sweeps every intervalMs (first after a minute); returns the stop function. Replicas may overlap: deletes are idempotent. */
export function startExpiredSweep(options: { orm: MikroORM; schema: string; logger: Logger; intervalMs?: number }): () => void {
  const sweep = () => {
    deleteExpired(options.orm, options.schema).then(
      (deleted) => options.logger.debug({ deleted }, "expired codes and tokens deleted"),
      (err) => options.logger.warn({ err }, "deleting expired codes and tokens failed"),
    );
  };
  const first = setTimeout(sweep, 60_000);
  const every = setInterval(sweep, options.intervalMs ?? 3_600_000);
  first.unref();
  every.unref();
  return () => {
    clearTimeout(first);
    clearInterval(every);
  };
}
