// What every route's documentation shares: the one error body, response
// helpers keeping a description, headers and an example together, the
// headers the gateway sets, and the bearer routes' security and errors.
import { z } from "zod";

/** Every error a client sees: {"error": "<code>", "error_description": "<human text>"}. */
export const ErrorBody = z
  .object({
    error: z
      .string()
      .describe("A short code: invalid_request, invalid_token, insufficient_scope, not_found, rate_limited, …"),
    error_description: z.string().describe("What went wrong, in words for a developer"),
  })
  .meta({ id: "Error", description: "The one error shape of every answer that is not a success" });

/** A response header, as @fastify/swagger takes it (transform.ts moves `required` out of the schema). */
export type HeaderSpec = Record<string, unknown> & { description: string; required?: boolean };

export const HEADERS = {
  noStore: {
    type: "string",
    const: "no-store",
    description: "Answers carrying credentials or account data are never cached",
    required: true,
  },
  link: {
    type: "string",
    description: 'RFC 8288: the next page, `<…?limit=…&cursor=…>; rel="next"`; absent on the last page',
    example: '<https://bizcard.example/oauth/webhooks/subscriptions?limit=50&cursor=MTA>; rel="next"',
  },
  location: { type: "string", format: "uri", description: "The created resource's URL", required: true },
  retryAfter: {
    type: "string",
    pattern: "^[0-9]+$",
    description: "Seconds to wait before trying again",
    required: true,
  },
  wwwAuthenticate: {
    type: "string",
    description: "RFC 6750 §3: the challenge, naming the error (and the scope needed, for insufficient_scope)",
    required: true,
  },
} satisfies Record<string, HeaderSpec>;

export interface Response {
  description: string;
  headers?: Record<string, HeaderSpec>;
  content?: Record<string, { schema: z.ZodType; example: unknown }>;
}

export function json(
  description: string,
  schema: z.ZodType,
  example: unknown,
  headers?: Record<string, HeaderSpec>,
): Response {
  return { description, ...(headers ? { headers } : {}), content: { "application/json": { schema, example } } };
}

/** An answer without a body (204, 302). */
export function empty(description: string, headers?: Record<string, HeaderSpec>): Response {
  return { description, ...(headers ? { headers } : {}) };
}

export function error(description: string, code: string, text: string, headers?: Record<string, HeaderSpec>): Response {
  return json(description, ErrorBody, { error: code, error_description: text }, headers);
}

/** What any route may answer on a request the framework refuses (413, 415, 417, 505, …) and on a server failure. */
export const DEFAULT_ERROR = error(
  "A request the server cannot take at all (too large, another media type, an unmet Expect, …) or a failure of the server",
  "server_error",
  "the server could not complete the request; try again later",
);

/** Errors of every route that needs an access token, and the default. */
export function bearerErrors(scope: string): Record<number | "default", Response> {
  return {
    401: error(
      "No access token, or one that is expired, revoked or unknown",
      "invalid_token",
      "the access token is not active",
      { "www-authenticate": HEADERS.wwwAuthenticate },
    ),
    403: error(`The token lacks the scope ${scope}`, "insufficient_scope", `this request needs the scope ${scope}`, {
      "www-authenticate": HEADERS.wwwAuthenticate,
    }),
    429: error("Too many requests", "rate_limited", "too many requests; try again later", {
      "retry-after": HEADERS.retryAfter,
    }),
    503: error(
      "A service this route needs is not answering",
      "temporarily_unavailable",
      "the server could not complete the request; try again later",
      { "retry-after": HEADERS.retryAfter },
    ),
    default: DEFAULT_ERROR,
  };
}

/** The security requirement of a route needing these scopes: an OAuth 2.0 access token, sent as a bearer token. */
export function needs(...scopes: string[]): Record<string, string[]>[] {
  return [{ oauth2: scopes }, { bearer: scopes }];
}

/** A query parameter given at most once: a repeated one arrives as an array and is refused by name. */
const once = (name: string) =>
  z.string({
    error: (iss) => (Array.isArray(iss.input) ? `${name} is included more than once` : `${name}: expected a string`),
  });

/** `?limit=&cursor=` of a list (list-paging.ts reads them once checked). */
export function ListQuery(fallback: number, max: number) {
  const badLimit = `limit: expected a whole number from 1 to ${max}`;
  return z.object({
    limit: once("limit")
      .regex(/^[0-9]{1,4}$/, { error: badLimit })
      .refine((v) => Number(v) >= 1 && Number(v) <= max, { error: badLimit })
      .optional()
      .describe(`How many items, 1 to ${max} (default ${fallback})`),
    cursor: once("cursor")
      .optional()
      .describe('Where the page starts: the cursor in the previous page\'s Link rel="next"'),
  });
}

const INT64_MAX = 2n ** 63n - 1n;

/** A path parameter that is a positive integer (an int64 identity), else 400 naming it (as readIntParam). */
export function IdParam(name: string, description: string) {
  const bad = (iss: { input?: unknown }) =>
    `${name}: expected a positive integer, not ${JSON.stringify(String(iss.input ?? "").slice(0, 40))}`;
  return z
    .string()
    .regex(/^[1-9][0-9]{0,18}$/, { error: bad })
    .refine((v) => !/^[0-9]{1,19}$/.test(v) || BigInt(v) <= INT64_MAX, { error: bad })
    .describe(description);
}
