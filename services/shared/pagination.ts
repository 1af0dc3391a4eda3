// Keyset pagination, defined once. A list is read newest first in the order
// of a unique key; a page is the first page_size rows after the page token,
// and its next_page_token names the key of its last row when more follow.
// Tokens are opaque (base64url of a JSON array); one not issued here is INVALID_ARGUMENT.
import type { ObjectQuery, QueryOrderMap } from "@mikro-orm/core";
import { invalid, isUuid } from "./validation.js";

export const PAGE_SIZE_DEFAULT = 50;
export const PAGE_SIZE_MAX = 100;

/** page_size: 0 means the default; otherwise 1..max. */
export function pageSize(value: number, fallback = PAGE_SIZE_DEFAULT, max = PAGE_SIZE_MAX): number {
  if (value === 0) return fallback;
  if (!Number.isInteger(value) || value < 1 || value > max) throw invalid("page_size", `expected 1 to ${max}`);
  return value;
}

const notIssued = () => invalid("page_token", "not a token this service issued");

function encodeToken(parts: string[]): string {
  return Buffer.from(JSON.stringify(parts)).toString("base64url");
}

/** The parts of a token, or undefined for the first page (an empty token). */
function decodeToken(token: string, arity: number): unknown[] | undefined {
  if (!token) return undefined;
  let parts: unknown;
  try {
    parts = JSON.parse(Buffer.from(token, "base64url").toString("utf8"));
  } catch {
    throw notIssued();
  }
  if (!Array.isArray(parts) || parts.length !== arity) throw notIssued();
  return parts;
}

/** How one list is ordered and resumed after a token. */
export interface Keyset<Row extends object> {
  readonly orderBy: QueryOrderMap<Row>;
  /** The filter for the rows after the token ({} for the first page); throws on a token not issued here. */
  after(pageToken: string): ObjectQuery<Row>;
  /** The token of the page that starts after this row. */
  tokenAfter(row: Row): string;
}

type DateKeys<Row> = { [K in keyof Row]: Row[K] extends Date ? K : never }[keyof Row] & string;

/** Newest first by a time property, ties broken by the row's uuid `id`: (time desc, id desc). */
export function timeIdKeyset<Row extends { id: string }>(time: DateKeys<Row>): Keyset<Row> {
  return {
    orderBy: { [time]: "desc", id: "desc" } as QueryOrderMap<Row>,
    after(pageToken) {
      const parts = decodeToken(pageToken, 2);
      if (!parts) return {};
      const [at, id] = parts;
      const date = typeof at === "string" ? new Date(at) : new Date(NaN);
      if (Number.isNaN(date.getTime()) || typeof id !== "string" || !isUuid(id)) throw notIssued();
      // (time, id) < (date, id) in the order above.
      return { $or: [{ [time]: { $lt: date } }, { [time]: date, id: { $lt: id.toLowerCase() } }] } as ObjectQuery<Row>;
    },
    tokenAfter: (row) => encodeToken([(row[time] as Date).toISOString(), row.id]),
  };
}

const INT64_MAX = 2n ** 63n - 1n;
const POSITIVE_INT64 = /^[1-9][0-9]{0,18}$/;

/** Newest first by a positive int64 `id` (an identity column): (id desc). */
export function int64IdKeyset<Row extends { id: bigint }>(): Keyset<Row> {
  return {
    orderBy: { id: "desc" } as QueryOrderMap<Row>,
    after(pageToken) {
      const parts = decodeToken(pageToken, 1);
      if (!parts) return {};
      const [last] = parts;
      const id = typeof last === "string" && POSITIVE_INT64.test(last) ? BigInt(last) : 0n;
      if (id <= 0n || id > INT64_MAX) throw notIssued();
      return { id: { $lt: id } } as unknown as ObjectQuery<Row>;
    },
    tokenAfter: (row) => encodeToken([row.id.toString()]),
  };
}

export interface Page<Row> {
  rows: Row[];
  nextPageToken: string;
}

/** One page of a list: `find` gets the keyset's filter (to spread next to its own), order and limit. */
export async function readPage<Row extends object>(
  keyset: Keyset<Row>,
  request: { pageSize: number; pageToken: string },
  find: (after: ObjectQuery<Row>, options: { orderBy: QueryOrderMap<Row>; limit: number }) => Promise<Row[]>,
): Promise<Page<Row>> {
  const limit = pageSize(request.pageSize);
  const rows = await find(keyset.after(request.pageToken), { orderBy: keyset.orderBy, limit: limit + 1 });
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return { rows: page, nextPageToken: rows.length > limit && last ? keyset.tokenAfter(last) : "" };
}
