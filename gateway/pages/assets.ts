// GET /assets/pages.css: the pages' stylesheet, cached by browsers and
// revalidated by its ETag.
import { createHash } from "node:crypto";
import type { FastifyInstance } from "fastify";
import { pagesCss } from "./pages-css.js";

const ETAG = `"${createHash("sha256").update(pagesCss).digest("base64url").slice(0, 22)}"`;

export function pageAssetRoutes(app: FastifyInstance): void {
  app.get("/assets/pages.css", async (request, reply) => {
    reply.header("cache-control", "public, max-age=3600").header("etag", ETAG);
    // RFC 9110 §13.1.2: If-None-Match with a matching entity tag answers 304.
    const match = request.headers["if-none-match"];
    if (match && match.split(",").some((tag) => tag.trim().replace(/^W\//, "") === ETAG || tag.trim() === "*")) {
      return reply.status(304).send();
    }
    return reply.type("text/css; charset=utf-8").send(pagesCss);
  });
}
