// Request validation from the routes' zod schemas: 400 invalid_request with
// the first problem (in the client's order, a missing field last), in the
// schema's words. The OAuth endpoints' schemas only document (documentOnly).
import type { FastifySchemaCompiler } from "fastify";
import type { z } from "zod";
import { HttpError } from "./errors.js";

const DOCUMENT_ONLY = new WeakSet<object>();

/** A request schema for the document only: the route checks this part itself. */
export function documentOnly<T extends z.ZodType>(schema: T): T {
  DOCUMENT_ONLY.add(schema);
  return schema;
}

function describe(issue: z.core.$ZodIssue, part: string): string {
  const field = issue.path.length ? issue.path.map(String).join(".") : part;
  // A message the schema gave (error: …) is the answer as it is.
  if (!/^(Invalid|Too|Unrecognized|Expected)/.test(issue.message)) return issue.message;
  return `${field}: ${issue.message.charAt(0).toLowerCase()}${issue.message.slice(1)}`;
}

/** The issue to answer with: the first in the input's own key order, a missing field last. */
function first(issues: z.core.$ZodIssue[], data: unknown): z.core.$ZodIssue {
  const keys = data && typeof data === "object" && !Array.isArray(data) ? Object.keys(data) : [];
  const rank = (issue: z.core.$ZodIssue) => {
    const key = issue.code === "unrecognized_keys" ? issue.keys[0] : issue.path[0];
    const at = typeof key === "string" ? keys.indexOf(key) : -1;
    return at < 0 ? keys.length + 1 : at;
  };
  return [...issues].sort((a, b) => rank(a) - rank(b))[0]!;
}

/** A compiler answering another error code (RFC 7591: invalid_client_metadata), typed for the route's schema. */
export function validatorAnswering<S = z.ZodType>(error: string): FastifySchemaCompiler<S> {
  return ({ schema, httpPart }) => {
    const zod = schema as unknown as z.ZodType;
    // Nothing returned as `value`: the request keeps its part exactly as it came (no body stays undefined).
    if (DOCUMENT_ONLY.has(zod)) return () => ({});
    return (data) => {
      const result = zod.safeParse(data);
      if (result.success) return { value: result.data };
      return { error: new HttpError(400, error, describe(first(result.error.issues, data), httpPart ?? "request")) };
    };
  };
}

export const validatorCompiler = validatorAnswering<z.ZodType>("invalid_request");
