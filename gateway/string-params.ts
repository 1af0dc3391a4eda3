// Every string a client sends, checked in one place before any route reads
// it: the query, the path's parameters, the form or JSON body (names and
// values, at any depth) and the Basic credentials once decoded. U+0000 and
// unpaired surrogates are refused with 400 invalid_request: no service
// stores them (PostgreSQL's text cannot hold U+0000, and a lone surrogate
// becomes U+FFFD in UTF-8), so they would fail late or change on the way.
import type { FastifyInstance, FastifyRequest } from "fastify";
import { HttpError } from "./errors.js";
import { decodeBasic, isBasic } from "./oauth-params.js";
import { unstorableReason } from "../services/shared/storable-text.js";
import { firstUnstorableString } from "../services/shared/strict-json.js";

/** The refusal of `s`, found under `where` (a parameter, the path...). */
const refusal = (where: string, s: string): HttpError =>
  new HttpError(400, "invalid_request", `${where} must not contain ${unstorableReason(s)}`);

/**
 * The refusal of the first unstorable string in a parsed value, names
 * included (services/shared/strict-json.ts: U+0000, or an unpaired surrogate,
 * RFC 8259 §8.2), naming the top-level parameter it is under.
 */
function firstUnstorable(value: unknown, source: string): HttpError | undefined {
  const found = firstUnstorableString(value);
  if (!found) return undefined;
  if (found.member === undefined) return refusal(source, found.text);
  return refusal(found.isMemberName ? `a parameter name in ${source}` : `${source}: ${found.member}`, found.text);
}

/**
 * The query as it came: percent-encoded UTF-8, like a form body (WHATWG URL,
 * application/x-www-form-urlencoded). The query parser keeps a sequence it
 * cannot decode (%FF, %ED%A0%80, %zz) as it was written, so it is refused here.
 */
function queryProblem(url: string): string | undefined {
  const q = url.indexOf("?");
  if (q < 0 || !url.includes("%", q)) return undefined;
  try {
    decodeURIComponent(url.slice(q + 1).replaceAll("+", " "));
    return undefined;
  } catch {
    return "the query is not validly percent-encoded UTF-8";
  }
}

function problem(request: FastifyRequest): HttpError | undefined {
  const query = queryProblem(request.url);
  if (query) return new HttpError(400, "invalid_request", query);
  const found =
    firstUnstorable(request.query, "the query") ??
    firstUnstorable(request.params, "the path") ??
    firstUnstorable(request.body, "the body");
  if (found) return found;
  const authorization = request.headers.authorization;
  if (isBasic(authorization)) {
    let credentials: { id: string; secret: string } | undefined;
    try {
      credentials = decodeBasic(authorization);
    } catch {
      // Malformed credentials are the route's to answer (invalid_client).
    }
    if (credentials) return firstUnstorable(credentials, "the Basic credentials");
  }
  return undefined;
}

/**
 * The preValidation hook (after the body is parsed, before any handler): a
 * refusal goes through the route's error handler, so the OAuth endpoints stay
 * no-store and the page routes answer a page.
 */
export function stringParamGuard(app: FastifyInstance): void {
  app.addHook("preValidation", (request, _reply, done) => {
    done(problem(request));
  });
}
