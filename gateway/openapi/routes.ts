// GET /openapi.json and /openapi.yaml: the document, written once on first
// request, whatever the Accept header says: the URL names the format.
import { createHash } from "node:crypto";
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { DEFAULT_ERROR, empty } from "../schemas/common.js";

export function openapiRoutes(app: FastifyInstance): void {
  const route = (format: string, schema: z.ZodType, example: unknown, write: (doc: object) => Promise<string>) => {
    const extension = format.toLowerCase();
    let served: { text: string; etag: string } | undefined;
    const documented = {
      operationId: `getOpenApi${format.charAt(0)}${extension.slice(1)}`,
      summary: `This API's OpenAPI 3.1 document, as ${format}`,
      tags: ["Health"],
      security: [],
      response: {
        200: {
          description: `The document (${format})`,
          content: { [`application/${extension}`]: { schema, example } },
        },
        304: empty("The document has not changed since the ETag given in If-None-Match"),
        400: DEFAULT_ERROR,
        default: DEFAULT_ERROR,
      },
    };
    app.get(`/openapi.${extension}`, { schema: documented }, async (request, reply) => {
      if (!served) {
        const text = await write(app.swagger());
        served = { text, etag: `"${createHash("sha256").update(text).digest("base64url").slice(0, 22)}"` };
      }
      reply.header("cache-control", "public, max-age=60").header("etag", served.etag);
      if (request.headers["if-none-match"] === served.etag) return reply.status(304).send();
      return reply.type(`application/${extension}; charset=utf-8`).send(served.text);
    });
  };
  const JsonDocument = z.record(z.string(), z.unknown()).describe("An OpenAPI 3.1 document");
  route("JSON", JsonDocument, { openapi: "3.1.0", info: { title: "bizcard API", version: "1.0.0" } }, async (doc) =>
    JSON.stringify(doc),
  );
  // YAML's library is loaded on the first request, not at start. Two media types share one object
  // in the document: it is written twice, not as a YAML alias.
  route(
    "YAML",
    z.string().describe("An OpenAPI 3.1 document in YAML"),
    "openapi: 3.1.0\ninfo:\n  title: bizcard API\n",
    async (doc) => (await import("yaml")).stringify(doc, { aliasDuplicateObjects: false }),
  );
}
