// GET /assets/pages.css and /assets/icon.svg: the pages' stylesheet and
// icon, cached by browsers and revalidated by their ETags.
import { createHash } from "node:crypto";
import type { FastifyInstance } from "fastify";
import { pagesCss } from "./pages-css.js";

const ICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="7" fill="#2f5bea"/><text x="16" y="23" font-family="system-ui, sans-serif" font-size="20" font-weight="700" fill="#fff" text-anchor="middle">b</text></svg>`;

/** A fixed file at `path`, with an ETag of its bytes; `headers` are added to every answer. */
export function asset(
  app: FastifyInstance,
  path: string,
  type: string,
  body: string | Buffer,
  headers: Record<string, string> = {},
): void {
  const etag = `"${createHash("sha256").update(body).digest("base64url").slice(0, 22)}"`;
  app.get(path, async (request, reply) => {
    reply.headers(headers).header("cache-control", "public, max-age=3600").header("etag", etag);
    // RFC 9110 §13.1.2: "the origin server MUST NOT perform the requested
    // method if [...] the condition evaluates to false" — a GET answers 304.
    const match = request.headers["if-none-match"];
    if (match?.split(",").some((tag) => tag.trim().replace(/^W\//, "") === etag || tag.trim() === "*")) {
      return reply.status(304).send();
    }
    return reply.type(type).send(body);
  });
}

export function pageAssetRoutes(app: FastifyInstance): void {
  asset(app, "/assets/pages.css", "text/css; charset=utf-8", pagesCss);
  asset(app, "/assets/icon.svg", "image/svg+xml", ICON);
}
