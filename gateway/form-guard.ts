// The browser forms that change state are taken only from the browser that
// was shown them, on this site: a cross-site request is refused on its Fetch
// Metadata (else its Origin; this site's pages may send "null", being
// no-referrer), and a form body's form_token must equal the browser's form
// cookie (a double submit), which another site can neither read nor set:
// login CSRF included. A JSON body cannot come cross-site without a preflight.
import { randomBytes, timingSafeEqual } from "node:crypto";
import type { FastifyReply, FastifyRequest } from "fastify";
import { HttpError } from "./errors.js";
import { siteCookie } from "./session-cookie.js";

const TOKEN = /^[A-Za-z0-9_-]{43}$/;

export interface FormGuard {
  /** The browser's form token: its cookie's, or a new one set on `reply`. */
  token(request: FastifyRequest, reply: FastifyReply): string;
  /** Throws a 403 HttpError unless the request is a form post from this site's page in this browser. */
  check(request: FastifyRequest): void;
}

export function createFormGuard(publicUrl: string): FormGuard {
  const publicOrigin = new URL(publicUrl).origin;
  // Lax: sent when a link from another site opens a page, which then reuses the browser's token.
  const cookie = siteCookie(publicUrl, "bizcard_form");
  const read = (request: FastifyRequest) => cookie.read(request, TOKEN);
  const refuse = (description: string) => new HttpError(403, "invalid_csrf_token", description);
  return {
    token(request, reply) {
      const existing = read(request);
      if (existing) return existing;
      const fresh = randomBytes(32).toString("base64url");
      cookie.set(reply, fresh);
      return fresh;
    },
    check(request) {
      // Fetch Metadata §2.1: same-site is another origin of this site (another subdomain).
      const site = request.headers["sec-fetch-site"];
      const origin = request.headers.origin;
      const ownOrigins = [undefined, "null", publicOrigin, `${request.protocol}://${request.host}`];
      if (site === undefined ? !ownOrigins.includes(origin) : site !== "same-origin" && site !== "none") {
        throw refuse("this form was sent from another site; open the page here and send it from there");
      }
      if (!/^application\/x-www-form-urlencoded\s*(;|$)/i.test(request.headers["content-type"] ?? "")) return;
      const sent = (request.body as Record<string, unknown> | undefined)?.form_token;
      const expected = read(request);
      if (
        typeof sent !== "string" ||
        !expected ||
        sent.length !== expected.length ||
        !timingSafeEqual(Buffer.from(sent), Buffer.from(expected))
      ) {
        throw refuse("the form was not the one this browser was shown; reload the page and try again");
      }
    },
  };
}
