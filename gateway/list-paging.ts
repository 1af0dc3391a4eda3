// Paging of the gateway's lists: `?limit=` and an opaque `?cursor=` (the
// service's page token, unchanged), the next page's URL in a Link header (RFC 8288).
import type { FastifyReply, FastifyRequest } from "fastify";

/** `limit` (`fallback` when absent) and `cursor` of a list request, as the route's ListQuery schema checked them. */
export function readListQuery(request: FastifyRequest, fallback: number) {
  const { limit, cursor } = request.query as { limit?: string; cursor?: string };
  return { limit: limit === undefined ? fallback : Number(limit), cursor: cursor ?? "" };
}

/** Sets `Link: <base+path?limit&cursor>; rel="next"` when there is a next page. */
export function linkNext(reply: FastifyReply, base: string, path: string, limit: number, nextPageToken: string): void {
  if (!nextPageToken) return;
  const query = new URLSearchParams({ limit: String(limit), cursor: nextPageToken });
  reply.header("link", `<${base}${path}?${query.toString()}>; rel="next"`);
}
