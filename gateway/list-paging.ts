// Paging of the gateway's lists (subscriptions, contacts): `?limit=` and an
// opaque `?cursor=`, with the next page's URL in a Link header (RFC 8288):
//
//   Link: <https://api.example/oauth/webhooks/subscriptions?limit=50&cursor=…>; rel="next"
//
// The cursor is the service's page token, passed through unchanged.
import type { FastifyReply, FastifyRequest } from "fastify";
import { HttpError } from "./errors.js";

export interface ListQuery {
  limit: number;
  cursor: string;
}

/** One query parameter: absent, or exactly one value (a repeated one is refused). */
function single(query: Record<string, unknown>, name: string): string | undefined {
  const value = query[name];
  if (value === undefined) return undefined;
  if (typeof value !== "string") throw new HttpError(400, "invalid_request", `${name} is included more than once`);
  return value;
}

/** `limit` (1 to max, `fallback` when absent) and `cursor` of a list request; 400 naming the parameter otherwise. */
export function readListQuery(request: FastifyRequest, fallback: number, max: number): ListQuery {
  const query = (request.query ?? {}) as Record<string, unknown>;
  const limitText = single(query, "limit");
  let limit = fallback;
  if (limitText !== undefined) {
    limit = /^[0-9]{1,4}$/.test(limitText) ? Number(limitText) : 0;
    if (limit < 1 || limit > max)
      throw new HttpError(400, "invalid_request", `limit: expected a whole number from 1 to ${max}`);
  }
  return { limit, cursor: single(query, "cursor") ?? "" };
}

/** The service's word for a token it did not issue, in the client's terms. */
export function badCursor(): HttpError {
  return new HttpError(400, "invalid_request", "cursor: not a cursor this server issued; start again without one");
}

/** Sets `Link: <base+path?limit&cursor>; rel="next"` when there is a next page. */
export function linkNext(reply: FastifyReply, base: string, path: string, limit: number, nextPageToken: string): void {
  if (!nextPageToken) return;
  const query = new URLSearchParams({ limit: String(limit), cursor: nextPageToken });
  reply.header("link", `<${base}${path}?${query.toString()}>; rel="next"`);
}
