// How every page is answered: HTML with its charset, never cached, never
// framed, under a strict Content-Security-Policy; and how a page route
// answers an error (a page, never JSON).
import { Code, ConnectError } from "@connectrpc/connect";
import type { FastifyReply, FastifyRequest } from "fastify";
import { OAuthErrorSchema, type OAuthError } from "../../gen/bizcard/auth/v1/auth_pb.js";
import { HttpError, toHttpError } from "../errors.js";
import { pages, type MessagePage } from "./pages.js";

/**
 * The policy of every page. No script runs at all; styles only from this
 * origin; forms only post here. frame-ancestors 'none' (CSP Level 3 §6.4.2)
 * and X-Frame-Options forbid framing (clickjacking of the consent page, RFC
 * 9700 §4.16). `formTargets` widens form-action for the consent page: CSP
 * Level 3 §6.4.1 form-action also governs the redirect that answers the form
 * (Chromium enforces it), and the consent answer redirects to the client.
 */
export function contentSecurityPolicy(formTargets: string[] = []): string {
  return [
    "default-src 'none'",
    "style-src 'self'",
    "img-src 'self'",
    `form-action ${["'self'", ...formTargets].join(" ")}`,
    "frame-ancestors 'none'",
    "base-uri 'none'",
  ].join("; ");
}

export const PAGE_HEADERS = {
  "x-frame-options": "DENY",
  "cache-control": "no-store",
  pragma: "no-cache",
  "referrer-policy": "no-referrer",
} as const;

export function sendPage(reply: FastifyReply, status: number, html: string, formTargets: string[] = []): FastifyReply {
  return reply
    .status(status)
    .headers(PAGE_HEADERS)
    .header("content-security-policy", contentSecurityPolicy(formTargets))
    .type("text/html; charset=utf-8")
    .send(html);
}

/** A 303 from a page route: the same headers, no body worth showing. */
export function seeOther(reply: FastifyReply, location: string): FastifyReply {
  return reply.status(303).headers(PAGE_HEADERS).header("location", location).send();
}

export function sendMessage(
  reply: FastifyReply,
  status: number,
  page: MessagePage,
  headers: Record<string, string> = {},
): FastifyReply {
  return sendPage(reply.headers(headers), status, pages.message(page));
}

/** The OAuthError detail of an auth service failure, if it has one. */
export function oauthDetail(err: unknown): OAuthError | undefined {
  return err instanceof ConnectError ? err.findDetails(OAuthErrorSchema)[0] : undefined;
}

export const EXPIRED_PAGE: MessagePage = {
  title: "This sign-in request has expired",
  text: "Sign-in requests are only valid for a few minutes and only once. Go back to the application and start again.",
};

export const CSRF_PAGE: MessagePage = {
  title: "This form has expired",
  text: "The form you sent was not the one this page gave you, or it has expired. Go back, reload the page and try again.",
};

/** The page of a refusal with Retry-After: failed sign-ins, or (`detail`) another limit saying what happened. */
export function rateLimitedPage(seconds: number, detail?: string): MessagePage {
  const wait = seconds >= 90 ? `${Math.ceil(seconds / 60)} minutes` : `${seconds} second${seconds === 1 ? "" : "s"}`;
  if (detail)
    return {
      title: "Too many requests",
      text: `This server refused the request for now. Wait ${wait}, then try again.`,
      detail,
    };
  return { title: "Too many attempts", text: `Too many sign-in attempts failed. Wait ${wait}, then try again.` };
}

/** An error of a page route as a page: the status of the one mapping, friendly words. */
export function pageErrorHandler(err: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const detail = oauthDetail(err);
  if (detail?.retryAfterSeconds) {
    const what = detail.error === "rate_limited" ? detail.errorDescription : undefined;
    return sendMessage(reply, 429, rateLimitedPage(detail.retryAfterSeconds, what), {
      "retry-after": String(detail.retryAfterSeconds),
    });
  }
  if (detail?.error === "invalid_csrf_token") return sendMessage(reply, 403, CSRF_PAGE);
  // The gateway's own refusal of a form (form-guard.ts), with what to do.
  if (err instanceof HttpError && err.error === "invalid_csrf_token")
    return sendMessage(reply, 403, { ...CSRF_PAGE, detail: err.description });
  if (err instanceof ConnectError && err.code === Code.NotFound) return sendMessage(reply, 404, EXPIRED_PAGE);
  const known = toHttpError(err);
  if (!known || known.status >= 500) request.log.error({ err }, "request failed");
  const shown = known ?? new HttpError(500, "server_error", "");
  if (shown.status >= 500) {
    return sendMessage(
      reply,
      shown.status,
      { title: "Something went wrong", text: "The server could not complete the request. Try again in a moment." },
      shown.headers,
    );
  }
  return sendMessage(
    reply,
    shown.status,
    {
      title: "This request cannot be completed",
      text: "The request was not valid.",
      detail: detail?.errorDescription || shown.description,
    },
    shown.headers,
  );
}
