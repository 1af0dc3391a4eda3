// Deleting many old rows without long locks: each batch is one statement (its
// own short transaction) locking at most `batchSize` rows, skipping rows
// another transaction holds; those go in a later batch or run.
import type { MikroORM } from "@mikro-orm/postgresql";

export interface PruneTarget {
  /** What the rows are, for the log: "access tokens". */
  name: string;
  /** The quoted, schema-qualified table: "auth"."access_token". */
  table: string;
  /** The condition a row must meet to go, on the table aliased as "t"; `?` placeholders take `params`. */
  where: string;
  params?: unknown[];
}

/**
 * Deletes `target`'s rows in batches of at most `batchSize` until a batch comes back short; answers each batch's count.
 */
export async function deleteInBatches(
  orm: MikroORM,
  target: PruneTarget,
  batchSize: number,
  maxBatches = Number.POSITIVE_INFINITY,
): Promise<number[]> {
  const counts: number[] = [];
  // ctid = any(array(...)): a TID scan of just the locked rows, never a join over the table.
  const sql = `delete from ${target.table} where ctid = any(array(
    select t.ctid from ${target.table} t where ${target.where} limit ${Math.floor(batchSize)} for update skip locked))`;
  while (counts.length < maxBatches) {
    const res = await orm.em
      .fork()
      .getConnection()
      .execute(sql, target.params ?? [], "run");
    const deleted = Number((res as { affectedRows?: number }).affectedRows ?? 0);
    counts.push(deleted);
    if (deleted < batchSize) break;
  }
  return counts;
}
