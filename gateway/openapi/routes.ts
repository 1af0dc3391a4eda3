// GET /openapi.json and /openapi.yaml: the document, generated once after the
// gateway is ready. JSON whatever the Accept header says (a browser's
// text/html included): the URL names the format.
import { createHash } from "node:crypto";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { z } from "zod";
import { DEFAULT_ERROR, empty } from "../schemas/common.js";

function served(text: string, type: string) {
  const etag = `"${createHash("sha256").update(text).digest("base64url").slice(0, 22)}"`;
  return { text, type, etag };
}

const Document = z.record(z.string(), z.unknown()).describe("An OpenAPI 3.1 document");

export function openapiRoutes(app: FastifyInstance): void {
  let json: ReturnType<typeof served> | undefined;
  let yaml: ReturnType<typeof served> | undefined;
  // Made on the first request for each; YAML's library is loaded only then, not at start.
  const document = () => app.swagger() as object;
  const loadJson = async () => (json ??= served(JSON.stringify(document()), "application/json; charset=utf-8"));
  const loadYaml = async () => {
    const { stringify } = await import("yaml");
    // Two media types share one object in the document: written twice, not as a YAML alias.
    return (yaml ??= served(
      stringify(document(), { aliasDuplicateObjects: false }),
      "application/yaml; charset=utf-8",
    ));
  };
  const send =
    (load: () => Promise<ReturnType<typeof served>>) => async (request: FastifyRequest, reply: FastifyReply) => {
      const doc = await load();
      reply.header("cache-control", "public, max-age=60").header("etag", doc.etag);
      if (request.headers["if-none-match"] === doc.etag) return reply.status(304).send();
      return reply.type(doc.type).send(doc.text);
    };
  const documented = (format: string, media: string, schema: z.ZodType, example: unknown) => ({
    summary: `This API's OpenAPI 3.1 document, as ${format}`,
    tags: ["Health"],
    security: [],
    response: {
      200: {
        description: `The document (${format})`,
        content: { [media]: { schema, example } },
      },
      304: empty("The document has not changed since the ETag given in If-None-Match"),
      400: DEFAULT_ERROR,
      default: DEFAULT_ERROR,
    },
  });
  app.get(
    "/openapi.json",
    {
      schema: {
        operationId: "getOpenApiJson",
        ...documented("JSON", "application/json", Document, {
          openapi: "3.1.0",
          info: { title: "bizcard API", version: "1.0.0" },
        }),
      },
    },
    send(loadJson),
  );
  app.get(
    "/openapi.yaml",
    {
      schema: {
        operationId: "getOpenApiYaml",
        ...documented(
          "YAML",
          "application/yaml",
          z.string().describe("An OpenAPI 3.1 document in YAML"),
          "openapi: 3.1.0\ninfo:\n  title: bizcard API\n",
        ),
      },
    },
    send(loadYaml),
  );
}
