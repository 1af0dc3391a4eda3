// How every page is answered: HTML with its charset, never cached, never
// framed, under a strict Content-Security-Policy; and how a page route
// answers an error (a page, never JSON).
import { Code, ConnectError } from "@connectrpc/connect";
import type { FastifyReply, FastifyRequest } from "fastify";
import { OAuthErrorSchema, type OAuthError } from "../../gen/bizcard/auth/v1/auth_pb.js";
import { HttpError, toHttpError } from "../errors.js";
import { pages, type MessagePage } from "./pages.js";

// The policy of every page: no script, styles from here, forms post here, never framed (RFC 9700
// §4.16). `formTargets` widen form-action: it also governs the redirect answering a form (Chromium).
function contentSecurityPolicy(formTargets: string[] = []): string {
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

export function sendMessage(reply: FastifyReply, status: number, page: MessagePage, headers = {}): FastifyReply {
  return sendPage(reply.headers(headers), status, pages.message(page));
}

export function oauthDetail(err: unknown): OAuthError | undefined {
  return err instanceof ConnectError ? err.findDetails(OAuthErrorSchema)[0] : undefined;
}

export const EXPIRED_PAGE: MessagePage = {
  title: "This sign-in request has expired",
  text: "Sign-in requests are only valid for a few minutes and only once. Go back to the application and start again.",
};

const CSRF_PAGE: MessagePage = {
  title: "This form has expired",
  text: "The form you sent was not the one this page gave you, or it has expired. Go back, reload the page and try again.",
};

/** The page of a refusal with Retry-After: failed sign-ins, or (`detail`) another limit saying what happened. */
function rateLimitedPage(seconds: number, detail?: string): MessagePage {
  const wait = seconds >= 90 ? `${Math.ceil(seconds / 60)} minutes` : `${seconds} second${seconds === 1 ? "" : "s"}`;
  if (detail) {
    return {
      title: "Too many requests",
      text: `This server refused the request for now. Wait ${wait}, then try again.`,
      detail,
    };
  }
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
  const { status, headers, description } = known ?? new HttpError(500, "server_error", "");
  const page =
    status >= 500
      ? { title: "Something went wrong", text: "The server could not complete the request. Try again in a moment." }
      : {
          title: "This request cannot be completed",
          text: "The request was not valid.",
          detail: detail?.errorDescription || description,
        };
  return sendMessage(reply, status, page, headers);
}
