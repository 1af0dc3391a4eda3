// The two body types the API reads, application/json and
// application/x-www-form-urlencoded, parsed strictly: UTF-8 only, and no
// parameter twice. Anything else is 415 (fastify's own answer, in our shape).
import { parse as parseJsonTree } from "@humanwhocodes/momoa";
import type { FastifyInstance } from "fastify";
import { HttpError } from "./errors.js";

const FORM = "application/x-www-form-urlencoded";
const JSON_TYPE = "application/json";

const invalid = (description: string) => new HttpError(400, "invalid_request", description);
const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/**
 * RFC 8259 §8.1: "JSON text exchanged between systems that are not part of a
 * closed ecosystem MUST be encoded using UTF-8". The WHATWG form encoding is
 * UTF-8 as well. A body that is not is refused, never silently repaired.
 */
function decodeUtf8(body: Buffer): string {
  try {
    return utf8.decode(body);
  } catch {
    throw invalid("the request body is not valid UTF-8");
  }
}

/**
 * RFC 8259 §4: "The names within an object SHOULD be unique"; RFC 6749 §3.1:
 * "Request and response parameters MUST NOT be included more than once." A
 * repeated name is refused at any depth (JSON.parse would keep the last one).
 */
function firstRepeatedName(text: string): string | undefined {
  const pending = [parseJsonTree(text, { mode: "json", ranges: false, tokens: false }).body];
  for (let node = pending.pop(); node; node = pending.pop()) {
    if (node.type === "Object") {
      const names = new Set<string>();
      for (const member of node.members) {
        // In JSON mode every name is a String node (identifiers are JSON5's).
        const name = member.name.type === "String" ? member.name.value : member.name.name;
        if (names.has(name)) return name;
        names.add(name);
        pending.push(member.value);
      }
    } else if (node.type === "Array") {
      for (const element of node.elements) pending.push(element.value);
    }
  }
  return undefined;
}

/**
 * The form encoding (WHATWG URL, application/x-www-form-urlencoded): "+" is a
 * space, %XX a byte; the decoded bytes must be UTF-8. A repeated name is kept
 * as an array so that the route can refuse it by name.
 */
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
      text = decodeUtf8(body as Buffer);
    } catch (err) {
      return done(err as Error, undefined);
    }
    fastifyJson(request, text, (err, value) => {
      if (err) return done(err, undefined);
      const repeated = firstRepeatedName(text);
      if (repeated !== undefined) return done(invalid(`parameter ${repeated} is included more than once`), undefined);
      done(null, value);
    });
  });

  app.addContentTypeParser(FORM, { parseAs: "buffer", bodyLimit }, (_request, body, done) => {
    try {
      done(null, parseForm(decodeUtf8(body as Buffer)));
    } catch (err) {
      done(err as Error, undefined);
    }
  });
}
