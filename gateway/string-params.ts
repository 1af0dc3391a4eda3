// Every string a client sends (query, path, body, Basic credentials), checked
// before any route reads it: U+0000 and lone surrogates are 400, since no
// service can store them.
import type { FastifyInstance, FastifyRequest } from "fastify";
import { HttpError } from "./errors.js";
import { decodeBasic, isBasic } from "./oauth-params.js";
import { unstorableReason } from "../services/shared/storable-text.js";
import { firstUnstorableString } from "../services/shared/strict-json.js";

/** The refusal of `s`, found under `where` (a parameter, the path...). */
const refusal = (where: string, s: string): HttpError =>
  new HttpError(400, "invalid_request", `${where} must not contain ${unstorableReason(s)}`);

/** The refusal of the first unstorable string in a parsed value, names included, naming its top-level parameter. */
function firstUnstorable(value: unknown, source: string): HttpError | undefined {
  const found = firstUnstorableString(value);
  if (!found) return undefined;
  if (found.member === undefined) return refusal(source, found.text);
  return refusal(found.isMemberName ? `a parameter name in ${source}` : `${source}: ${found.member}`, found.text);
}

/** The query must be percent-encoded UTF-8; the query parser keeps what it cannot decode (%FF, %zz) as written. */
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

/** After the body is parsed; a refusal goes through the route's error handler (OAuth no-store, pages a page). */
export function stringParamGuard(app: FastifyInstance): void {
  app.addHook("preValidation", (request, _reply, done) => {
    done(problem(request));
  });
}
