// The member's session cookie: an opaque secret the auth service issued (only
// its hash is stored there), HttpOnly, SameSite=Lax, Path=/, as long as the
// session lives; and the cookie helpers the form guard shares.
import { parseCookie, stringifySetCookie } from "cookie";
import type { FastifyReply, FastifyRequest } from "fastify";

export interface SessionCookie {
  read(request: FastifyRequest): string | undefined;
  /** Sets the cookie until the session expires. */
  set(reply: FastifyReply, sessionId: string, expires: Date): void;
  clear(reply: FastifyReply): void;
}

/**
 * One of the site's cookies: `__Host-<base>`, Secure, over https (RFC 6265bis
 * §4.1.3.2: no other host or path can plant or shadow it), else `<base>`.
 */
export function siteCookie(publicUrl: string, base: string) {
  const secure = new URL(publicUrl).protocol === "https:";
  const name = secure ? `__Host-${base}` : base;
  const attributes = { httpOnly: true, secure, sameSite: "lax", path: "/" } as const;
  return {
    /** The request's value when it has the shape `valid`: anything else is not one of ours. */
    read(request: FastifyRequest, valid: RegExp): string | undefined {
      const header = request.headers.cookie;
      const value = header ? parseCookie(header)[name] : undefined;
      return value && valid.test(value) ? value : undefined;
    },
    set(reply: FastifyReply, value: string, options: { maxAge?: number; expires?: Date } = {}): void {
      const previous = reply.getHeader("set-cookie");
      const list = previous === undefined ? [] : Array.isArray(previous) ? previous : [String(previous)];
      reply.header("set-cookie", [...list, stringifySetCookie(name, value, { ...attributes, ...options })]);
    },
  };
}

const SESSION_VALUE = /^[A-Za-z0-9._~-]{1,200}$/;

export function createSessionCookie(publicUrl: string): SessionCookie {
  const cookie = siteCookie(publicUrl, "bizcard_session");
  return {
    read: (request) => cookie.read(request, SESSION_VALUE),
    set(reply, sessionId, expires) {
      cookie.set(reply, sessionId, { maxAge: Math.max(0, Math.floor((expires.getTime() - Date.now()) / 1000)) });
    },
    clear: (reply) => cookie.set(reply, "", { maxAge: 0, expires: new Date(0) }),
  };
}
