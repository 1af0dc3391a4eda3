// An ordered subscription's head, the one delivery of it the claim sends, and
// when a delivery behind it can go at the earliest ("not before" in answers).
import type { MikroORM } from "@mikro-orm/postgresql";

const S = `"delivery"`;

/** A subscription's head: its oldest pending ordered delivery by (stream_sequence, id). */
export interface OrderedHead {
  id: string;
  streamSequence: number | null;
  nextAttemptAt: Date | null;
  claimId: string | null;
}

/**
 * The head's `columns` (alias "head_row"): the oldest pending ordered row by
 * (stream_sequence, id), due or not, claimed or not. `subscriptionId` is an SQL
 * expression (e.g. a lateral join's column); `excluding`: a row left out.
 */
export function orderedHeadSql(subscriptionId: string, columns = `"head_row"."id"`, excluding = "null"): string {
  return `select ${columns} from ${S}."delivery" "head_row"
    where "head_row"."subscription_id" = ${subscriptionId} and "head_row"."status" = 'pending' and "head_row"."ordered"
      and "head_row"."id" is distinct from ${excluding}
    order by "head_row"."stream_sequence", "head_row"."id" limit 1`;
}

/** The head's columns as one JSON value (null when there is none); parse it with parseHead. */
export function orderedHeadJsonSql(subscriptionId: string, excluding = "null"): string {
  const columns = `json_build_object('id', "head_row"."id"::text, 'streamSequence', "head_row"."stream_sequence", 'nextAttemptAt', "head_row"."next_attempt_at", 'claimId', "head_row"."claim_id")`;
  return `(${orderedHeadSql(subscriptionId, columns, excluding)})`;
}

/** A head as orderedHeadJsonSql returned it (its timestamps are strings). */
export function parseHead(v: unknown): OrderedHead | null {
  if (!v) return null;
  const h = (typeof v === "string" ? JSON.parse(v) : v) as Record<keyof OrderedHead, string | null>;
  return {
    id: String(h.id),
    streamSequence: h.streamSequence === null ? null : Number(h.streamSequence),
    nextAttemptAt: h.nextAttemptAt ? new Date(h.nextAttemptAt) : null,
    claimId: h.claimId,
  };
}

/** The subscription's head now (one statement), or null when it has no pending ordered delivery. */
export async function readOrderedHead(orm: MikroORM, subscriptionId: bigint): Promise<OrderedHead | null> {
  const [row] = await orm.em
    .fork()
    .execute<{ head: unknown }[]>(`select ${orderedHeadJsonSql("?")} as "head"`, [subscriptionId.toString()]);
  return parseHead(row?.head);
}

type Row = { id: bigint | string; status: string; ordered: boolean; streamSequence?: number | null };

/**
 * Whether `a` comes before `b` in orderedHeadSql's order:
 * stream_sequence (nulls last, as PostgreSQL sorts them), then id.
 */
function before(a: { id: bigint | string; streamSequence?: number | null }, b: OrderedHead): boolean {
  const seq = a.streamSequence ?? null;
  if (seq !== b.streamSequence) {
    if (seq === null) return false;
    if (b.streamSequence === null) return true;
    return seq < b.streamSequence;
  }
  return BigInt(a.id) < BigInt(b.id);
}

/**
 * The earliest a pending ordered row behind `head` can be sent: the head's
 * next attempt (now while it is held or due). Undefined for the head itself,
 * a row before it, or an unordered row.
 */
export function waitsForHead(row: Row, head: OrderedHead | null, now: Date): Date | undefined {
  if (!head || row.status !== "pending" || !row.ordered) return undefined;
  if (String(row.id) === head.id || before(row, head)) return undefined;
  if (head.claimId || !head.nextAttemptAt || head.nextAttemptAt <= now) return now;
  return head.nextAttemptAt;
}
