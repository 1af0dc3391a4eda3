// The glue between the routes' zod schemas and @fastify/swagger: the type
// provider keeps only `schema` of a response's content, so the examples and
// headers the routes declare are copied back; unused components are pruned.
import { createJsonSchemaTransform, createJsonSchemaTransformObject } from "fastify-type-provider-zod";
import { z } from "zod";
import { ZOD_TO_JSON } from "./json-schema.js";

// biome-ignore lint/suspicious/noExplicitAny: schemas of any shape, read and rewritten by key
type Json = Record<string, any>;

const zodTransform = createJsonSchemaTransform({ skipList: [], zodToJsonConfig: ZOD_TO_JSON });
const zodTransformObject = createJsonSchemaTransformObject({ zodToJsonConfig: ZOD_TO_JSON });

const isZod = (v: unknown): boolean => v instanceof z.ZodType;

/** `hidden`: the routes left out of the document (HTML pages and their assets). */
export const transformHiding =
  (hidden: (url: string) => boolean): typeof zodTransform =>
  (input) => {
    if (hidden(input.url)) return { schema: { hide: true }, url: input.url } as ReturnType<typeof zodTransform>;
    const declared = ((input.schema as Json | undefined)?.response ?? {}) as Json;
    const bodiless: Json = {};
    const response: Json = {};
    for (const [status, r] of Object.entries(declared)) {
      if (r && !isZod(r) && typeof r === "object" && !("content" in r)) {
        bodiless[status] = r;
        response[status] = z.null();
      } else response[status] = r;
    }
    const out = zodTransform({ ...input, schema: { ...(input.schema as Json), response } } as typeof input) as {
      schema: Json;
    };
    for (const [status, r] of Object.entries(declared)) {
      if (!r || isZod(r) || typeof r !== "object") continue;
      const target: Json = bodiless[status] ? { type: "null" } : out.schema.response[status];
      target.description = r.description;
      if (r.headers) target.headers = r.headers;
      for (const [type, media] of Object.entries((r.content ?? {}) as Json)) {
        if ((media as Json).example !== undefined) target.content[type].example = (media as Json).example;
      }
      out.schema.response[status] = target;
    }
    return out as ReturnType<typeof zodTransform>;
  };

/** Component schemas nothing references are dropped (the library registers an input and an output copy of each). */
function pruneComponents(doc: Json): Json {
  const schemas: Json = doc.components?.schemas ?? {};
  const used = new Set<string>();
  const visit = (v: unknown): void => {
    if (!v || typeof v !== "object") return;
    for (const [k, x] of Object.entries(v)) {
      if (k === "$ref" && typeof x === "string" && x.startsWith("#/components/schemas/")) {
        const name = x.slice("#/components/schemas/".length);
        if (!used.has(name)) {
          used.add(name);
          visit(schemas[name]);
        }
      } else visit(x);
    }
  };
  visit({ ...doc, components: { ...doc.components, schemas: {} } });
  if (doc.components) doc.components.schemas = Object.fromEntries(Object.entries(schemas).filter(([n]) => used.has(n)));
  return doc;
}

/** Every answer carries the request's id. */
const REQUEST_ID = {
  description:
    "The request's id: the caller's X-Request-Id when it is 1-128 characters of A-Za-z0-9._:-, else a new one. Quote it when reporting a problem.",
  required: true,
  schema: { type: "string", pattern: "^[A-Za-z0-9._:-]{1,128}$" },
};

/** `required` and `example` of a response header are the header object's, not its schema's (common.ts HEADERS). */
function requiredHeadersOut(operation: Json): void {
  for (const response of Object.values((operation.responses ?? {}) as Json[])) {
    response.headers = { "x-request-id": REQUEST_ID, ...(response.headers ?? {}) };
    for (const header of Object.values(response.headers as Json[])) {
      const { required, example, ...schema } = header.schema ?? {};
      if (required === true) header.required = true;
      if (example !== undefined) header.example = example;
      if (required === true || example !== undefined) header.schema = schema;
    }
  }
}

export const transformObject: typeof zodTransformObject = (input) => {
  const doc = zodTransformObject(input) as Json;
  for (const item of Object.values((doc.paths ?? {}) as Json)) {
    for (const operation of Object.values(item as Json) as Json[]) {
      requiredHeadersOut(operation);
      // What the generator cannot know: a PUT without a body re-enables a disabled subscription.
      if (operation.operationId === "updateSubscription" && operation.requestBody) {
        operation.requestBody.required = false;
      }
    }
  }
  return pruneComponents(doc) as ReturnType<typeof zodTransformObject>;
};
