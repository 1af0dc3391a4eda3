// The two body types the API reads, JSON and the form encoding, parsed
// strictly: UTF-8 only, no parameter twice (services/shared/strict-json.ts).
// Anything else is 415.
import type { FastifyInstance, FastifyRequest } from "fastify";
import { decodeUtf8, firstRepeatedName } from "../services/shared/strict-json.js";
import { HttpError } from "./errors.js";

const FORM = "application/x-www-form-urlencoded";
const JSON_TYPE = "application/json";

const invalid = (description: string) => new HttpError(400, "invalid_request", description);

/** RFC 8259 §8.1 and the WHATWG form encoding: UTF-8, refused when not, never repaired. */
function decodeBody(body: Buffer): string {
  const text = decodeUtf8(body);
  if (text === undefined) throw invalid("the request body is not valid UTF-8");
  return text;
}

/** The form encoding ("+" a space, %XX a byte); a repeated name is kept as an array, for the route to refuse. */
function parseForm(text: string): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = Object.create(null);
  for (const pair of text.split("&")) {
    if (pair === "") continue;
    const eq = pair.indexOf("=");
    const name = decodeFormComponent(eq < 0 ? pair : pair.slice(0, eq));
    const value = eq < 0 ? "" : decodeFormComponent(pair.slice(eq + 1));
    const seen = out[name];
    out[name] = seen === undefined ? value : Array.isArray(seen) ? [...seen, value] : [seen, value];
  }
  return out;
}

function decodeFormComponent(s: string): string {
  if (!s.includes("%")) return s.includes("+") ? s.replaceAll("+", " ") : s;
  if (/%(?![0-9A-Fa-f]{2})/.test(s)) throw invalid("the form body has a malformed percent-encoding");
  try {
    return decodeURIComponent(s.replaceAll("+", " "));
  } catch {
    throw invalid("the form body is not valid UTF-8 once percent-decoded");
  }
}

export function registerBodyParsers(app: FastifyInstance, bodyLimit: number): void {
  // Fastify's JSON parser keeps its protection against prototype poisoning.
  const fastifyJson = app.getDefaultJsonParser("error", "error");
  app.removeAllContentTypeParsers();

  app.addContentTypeParser(JSON_TYPE, { parseAs: "buffer", bodyLimit }, (request, body, done) => {
    let text: string;
    try {
      text = decodeBody(body as Buffer);
    } catch (err) {
      return done(err as Error, undefined);
    }
    fastifyJson(request, text, (err, value) => {
      if (err) return done(err, undefined);
      // RFC 8259 §4, RFC 6749 §3.1: a name twice, at any depth, is refused (JSON.parse would keep the last one).
      const repeated = firstRepeatedName(text);
      if (repeated !== undefined) return done(invalid(`parameter ${repeated} is included more than once`), undefined);
      done(null, value);
    });
  });

  app.addContentTypeParser(FORM, { parseAs: "buffer", bodyLimit }, (_request, body, done) => {
    try {
      done(null, parseForm(decodeBody(body as Buffer)));
    } catch (err) {
      done(err as Error, undefined);
    }
  });
}

/** 415 unless the body is application/json; `what` names it in the refusal. */
export function requireJson(request: FastifyRequest, what: string): void {
  const type = (request.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase();
  if (type !== "application/json") {
    throw new HttpError(415, "unsupported_media_type", `send ${what} as application/json`);
  }
}
