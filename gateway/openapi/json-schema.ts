// zod schemas as JSON Schema 2020-12, the dialect of OpenAPI 3.1: for the
// routes' schemas in the document, and self-contained (no `$ref` at all) for
// the event catalog, so that a schema works copied on its own into a field mapper.
import { z } from "zod";

type JsonSchema = Record<string, unknown>;

/** Keywords zod adds next to a `format` that says the same (long regexes a reader need not see). */
const FORMATS_WITH_OWN_PATTERN = new Set(["date-time", "date", "time", "email", "uri", "uuid", "guid"]);
const SAFE_INTEGER = Number.MAX_SAFE_INTEGER;

// The override of zod's conversion, on every node. OpenAPI 3.1 has no "nullable": a nullable
// value is `type: [X, "null"]`, which zod writes as an anyOf with a null branch.
function tidy(ctx: { jsonSchema: JsonSchema }): void {
  const schema = ctx.jsonSchema;
  const anyOf = schema.anyOf as JsonSchema[] | undefined;
  if (anyOf?.length === 2) {
    const nullAt = anyOf.findIndex((s) => s.type === "null" && Object.keys(s).length === 1);
    const other = anyOf[1 - nullAt];
    if (nullAt >= 0 && other && typeof other.type === "string" && !("$ref" in other) && !("anyOf" in other)) {
      delete schema.anyOf;
      Object.assign(schema, { ...other, ...schema, type: [other.type, "null"] });
      if (Array.isArray(other.enum)) schema.enum = [...other.enum, null];
    }
  }
  if (typeof schema.format === "string" && FORMATS_WITH_OWN_PATTERN.has(schema.format)) delete schema.pattern;
  if (schema.type === "integer") {
    if (schema.minimum === -SAFE_INTEGER) delete schema.minimum;
    if (schema.maximum === SAFE_INTEGER) delete schema.maximum;
  }
  // What the type provider's own override does: an empty branch of a union says nothing.
  if (Array.isArray(schema.anyOf)) schema.anyOf = (schema.anyOf as JsonSchema[]).filter((b) => Object.keys(b).length);
}

/** The conversion of the routes' schemas (fastify-type-provider-zod's zodToJsonConfig). */
export const ZOD_TO_JSON = { target: "draft-2020-12" as const, override: tidy };

/** The JSON Schema (2020-12) of what `schema` outputs: every part inline, tidied, with `$schema`. */
export function selfContainedJsonSchema(schema: z.ZodType): JsonSchema {
  const json = z.toJSONSchema(schema, {
    target: "draft-2020-12",
    io: "output",
    reused: "inline",
    cycles: "throw",
    override: tidy,
  }) as JsonSchema;
  const text = JSON.stringify(json);
  if (text.includes('"$ref"') || text.includes('"$defs"')) {
    // A schema with .meta({ id }) would land in $defs; the catalog's schemas must stand alone.
    throw new Error("an event schema refers to another schema; give it no id");
  }
  return json;
}
