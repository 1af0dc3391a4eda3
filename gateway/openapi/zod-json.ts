// zod -> JSON Schema 2020-12 as OpenAPI 3.1 uses it: a nullable field is
// `type: [X, "null"]` (never OpenAPI 3.0's `nullable`), and what zod adds for
// its own checking (a regex beside `format: date-time`, the ±2^53 bounds of
// .int()) is left out of the document, where it only confuses a reader.
type Json = Record<string, unknown>;

export function tidy(ctx: { jsonSchema: Json }): void {
  const s = ctx.jsonSchema;
  const anyOf = s.anyOf as Json[] | undefined;
  if (Array.isArray(anyOf) && anyOf.length === 2) {
    const nul = anyOf.findIndex((b) => b.type === "null" && Object.keys(b).length === 1);
    const other = anyOf[1 - nul];
    if (nul >= 0 && other && typeof other.type === "string" && !other.$ref) {
      delete s.anyOf;
      Object.assign(s, other, { type: [other.type, "null"] });
    }
  }
  if (s.format && s.pattern && ["date-time", "email", "uri", "uuid"].includes(s.format as string)) delete s.pattern;
  if (s.type === "integer" && s.maximum === Number.MAX_SAFE_INTEGER) delete s.maximum;
  if (s.type === "integer" && s.minimum === Number.MIN_SAFE_INTEGER) delete s.minimum;
  // What the library's own override does: an empty branch of a union says nothing.
  if (Array.isArray(s.anyOf)) s.anyOf = (s.anyOf as Json[]).filter((b) => Object.keys(b).length > 0);
}

export const ZOD_TO_JSON = { target: "draft-2020-12" as const, override: tidy };
