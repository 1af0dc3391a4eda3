// The member's session cookie: an opaque secret the auth service issued
// (only its hash is stored there). `__Host-bizcard_session` with Secure when
// the gateway is served over https, `bizcard_session` otherwise; always
// HttpOnly, SameSite=Lax, Path=/, and it lives as long as the session.
import { parseCookie, stringifySetCookie } from "cookie";
import type { FastifyReply, FastifyRequest } from "fastify";

export interface SessionCookie {
  readonly name: string;
  readonly secure: boolean;
  /** The session id the request presents, if any. */
  read(request: FastifyRequest): string | undefined;
  /** Sets the cookie until the session expires. */
  set(reply: FastifyReply, sessionId: string, expires: Date): void;
  /** Removes the cookie. */
  clear(reply: FastifyReply): void;
}

/** Adds a Set-Cookie line to those the reply already has. */
export function appendSetCookie(reply: FastifyReply, value: string): void {
  const previous = reply.getHeader("set-cookie");
  const list = previous === undefined ? [] : Array.isArray(previous) ? previous : [String(previous)];
  reply.header("set-cookie", [...list, value]);
}

/** The value of the request's cookie `name` when it has the shape `valid`: anything else is not one of ours. */
export function readCookie(request: FastifyRequest, name: string, valid: RegExp): string | undefined {
  const header = request.headers.cookie;
  const value = header ? parseCookie(header)[name] : undefined;
  return value && valid.test(value) ? value : undefined;
}

/** A session secret is URL-safe text: anything else is not one of ours. */
const SESSION_VALUE = /^[A-Za-z0-9._~-]{1,200}$/;

export function createSessionCookie(publicUrl: string): SessionCookie {
  // RFC 6265bis §4.1.3.2: a cookie whose name starts with "__Host-" is only
  // accepted when it is "Secure", from a secure origin, has no Domain and
  // Path=/ — so no other host or path can plant or shadow it.
  const secure = new URL(publicUrl).protocol === "https:";
  const name = secure ? "__Host-bizcard_session" : "bizcard_session";
  const attributes = { httpOnly: true, secure, sameSite: "lax", path: "/" } as const;
  return {
    name,
    secure,
    read: (request) => readCookie(request, name, SESSION_VALUE),
    set(reply, sessionId, expires) {
      const maxAge = Math.max(0, Math.floor((expires.getTime() - Date.now()) / 1000));
      appendSetCookie(reply, stringifySetCookie(name, sessionId, { ...attributes, maxAge }));
    },
    clear(reply) {
      appendSetCookie(reply, stringifySetCookie(name, "", { ...attributes, maxAge: 0, expires: new Date(0) }));
    },
  };
}
