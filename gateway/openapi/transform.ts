// The glue between the routes' zod schemas and @fastify/swagger: the type
// provider's transform, plus what it leaves out. It keeps only `schema` of a
// response's content, so the media examples and response headers the routes
// declare are copied back here; a response without a body (204, 302) is
// declared as { description, headers } and becomes exactly that. The whole
// document is then pruned of component schemas nothing references (the
// library registers an input and an output copy of each).
import { createJsonSchemaTransform, createJsonSchemaTransformObject } from "fastify-type-provider-zod";
import { z } from "zod";
import { ZOD_TO_JSON } from "./zod-json.js";

// biome-ignore lint/suspicious/noExplicitAny: schemas of any shape, read and rewritten by key
type Json = Record<string, any>;

const zodTransform = createJsonSchemaTransform({ skipList: [], zodToJsonConfig: ZOD_TO_JSON });
const zodTransformObject = createJsonSchemaTransformObject({ zodToJsonConfig: ZOD_TO_JSON });

const isZod = (v: unknown): boolean => v instanceof z.ZodType;

/** The routes left out of the document (HTML pages and their assets). */
export type Hidden = (url: string) => boolean;

export const transformHiding =
  (hidden: Hidden): typeof zodTransform =>
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

/** Component schemas nothing references are dropped (a linter rightly calls them noise). */
export function pruneComponents(doc: Json): Json {
  const schemas: Json = doc.components?.schemas ?? {};
  const used = new Set<string>();
  const visit = (v: unknown): void => {
    if (Array.isArray(v)) {
      v.forEach(visit);
      return;
    }
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

/** Every answer carries the request's id (app.ts): the caller's when it is sane, else a new one. */
const REQUEST_ID = {
  description:
    "The request's id: the caller's X-Request-Id when it is 1-128 characters of A-Za-z0-9._:-, else a new one. Quote it when reporting a problem.",
  required: true,
  schema: { type: "string", pattern: "^[A-Za-z0-9._:-]{1,128}$" },
};

/** `required` of a response header is the header object's, not its schema's (common.ts HEADERS). */
function requiredHeadersOut(operation: Json): void {
  for (const response of Object.values((operation.responses ?? {}) as Json)) {
    (response as Json).headers = { "x-request-id": REQUEST_ID, ...((response as Json).headers ?? {}) };
    for (const header of Object.values(((response as Json).headers ?? {}) as Json)) {
      if ((header as Json).schema?.required === true) {
        delete (header as Json).schema.required;
        (header as Json).required = true;
      }
      if ((header as Json).schema?.example !== undefined) {
        (header as Json).example = (header as Json).schema.example;
        delete (header as Json).schema.example;
      }
    }
  }
}

/** Per-operation corrections the generator cannot know, keyed by operationId. */
export type OperationFixes = Record<string, (operation: Json) => void>;

export function transformObjectWith(fixes: OperationFixes): typeof zodTransformObject {
  return (input) => {
    const doc = zodTransformObject(input) as Json;
    for (const item of Object.values((doc.paths ?? {}) as Json)) {
      for (const operation of Object.values(item as Json)) {
        requiredHeadersOut(operation as Json);
        const fix = fixes[(operation as Json).operationId];
        if (fix) fix(operation as Json);
      }
    }
    return pruneComponents(doc) as ReturnType<typeof zodTransformObject>;
  };
}
