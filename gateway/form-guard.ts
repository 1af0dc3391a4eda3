// The browser forms that change state (sign-in, consent, revoke, sign-out)
// are taken only from the browser that was shown them, on this site:
//
// - A cross-site request is refused on its Fetch Metadata, or, from a browser
//   that sends none, on its Origin. A form of this site's pages sends
//   Sec-Fetch-Site: same-origin; its Origin may be "null", since the pages'
//   Referrer-Policy is no-referrer (Fetch §3.1, "append a request Origin
//   header": no-referrer serializes the origin as null).
// - A form body carries form_token, which must equal the browser's form
//   cookie (a double submit, OWASP's CSRF cheat sheet): each page that shows
//   a form sets the cookie if the browser has none and writes its value into
//   the form. A page of another site can neither read the value nor set the
//   cookie (__Host- over https), so it cannot post another browser's form, an
//   interaction it started itself included (login CSRF).
//
// A JSON body (the consent API of a client with a session) needs no form
// token: a page of another site cannot send one without a CORS preflight,
// which this gateway does not grant it.
import { randomBytes, timingSafeEqual } from "node:crypto";
import { stringifySetCookie } from "cookie";
import type { FastifyReply, FastifyRequest } from "fastify";
import { HttpError } from "./errors.js";
import { appendSetCookie, readCookie } from "./session-cookie.js";

export const FORM_TOKEN_FIELD = "form_token";

/** The error every refusal here answers (403), a page's or JSON. */
export const INVALID_CSRF_TOKEN = "invalid_csrf_token";

const TOKEN = /^[A-Za-z0-9_-]{43}$/;

export interface FormGuard {
  /** The browser's form token: its cookie's, or a new one set on `reply`. */
  token(request: FastifyRequest, reply: FastifyReply): string;
  /** Throws a 403 HttpError unless the request is a form post from this site's page in this browser. */
  check(request: FastifyRequest): void;
}

export function createFormGuard(publicUrl: string): FormGuard {
  const secure = new URL(publicUrl).protocol === "https:";
  const publicOrigin = new URL(publicUrl).origin;
  // RFC 6265bis §4.1.3.2: a "__Host-" cookie is only accepted when Secure, without Domain, Path=/.
  const name = secure ? "__Host-bizcard_form" : "bizcard_form";
  // Lax: sent when a link from another site opens a page, so that it reuses the token of the
  // browser's other open forms instead of replacing it.
  const attributes = { httpOnly: true, secure, sameSite: "lax", path: "/" } as const;
  const read = (request: FastifyRequest) => readCookie(request, name, TOKEN);
  const refuse = (description: string) => new HttpError(403, INVALID_CSRF_TOKEN, description);
  return {
    token(request, reply) {
      const existing = read(request);
      if (existing) return existing;
      const fresh = randomBytes(32).toString("base64url");
      appendSetCookie(reply, stringifySetCookie(name, fresh, attributes));
      return fresh;
    },
    check(request) {
      // Fetch Metadata §2.1: same-site is another origin of this site (another subdomain).
      const site = request.headers["sec-fetch-site"];
      if (site !== undefined && site !== "same-origin" && site !== "none") {
        throw refuse("this form was sent from another site; open the page here and send it from there");
      }
      const origin = request.headers.origin;
      if (
        site === undefined &&
        origin !== undefined &&
        origin !== "null" &&
        origin !== publicOrigin &&
        origin !== `${request.protocol}://${request.host}`
      ) {
        throw refuse("this form was sent from another site; open the page here and send it from there");
      }
      if (!/^application\/x-www-form-urlencoded\s*(;|$)/i.test(request.headers["content-type"] ?? "")) return;
      const sent = (request.body as Record<string, unknown> | undefined)?.[FORM_TOKEN_FIELD];
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
