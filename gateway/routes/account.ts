// The member's account pages: login (an interaction of kind ACCOUNT), the
// organisation's connected applications with a Revoke button each, and
// logout. The session behind the cookie and its CSRF token are the auth service's.
import type { Client } from "@connectrpc/connect";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { AuthService } from "../../gen/bizcard/auth/v1/auth_pb.js";
import { rpcOptions } from "../clients.js";
import { readParams } from "../oauth-params.js";
import { oauthDetail, pageErrorHandler, seeOther, sendPage } from "../pages/page-reply.js";
import { pages, selfRegistered } from "../pages/pages.js";
import { interactionPath, scopeTexts, type PageDeps } from "./authorize.js";

const NOTICES: Record<string, (name: string) => string> = {
  revoked: (name) => `Access withdrawn from ${name}. It can no longer use its tokens.`,
  gone: (name) => `${name} had no access any more.`,
};

/** The notice a redirect after a revoke asks for, naming the application by its registered name. */
async function noticeOf(auth: Client<typeof AuthService>, request: FastifyRequest): Promise<string | undefined> {
  const query = (request.query ?? {}) as Record<string, unknown>;
  const { notice, client_id: clientId } = query;
  if (typeof notice !== "string" || !Object.hasOwn(NOTICES, notice)) return undefined;
  const name =
    typeof clientId === "string" && clientId !== ""
      ? await auth.getClient({ clientId }, rpcOptions(request)).then(
          ({ client }) => client?.name || clientId,
          () => undefined,
        )
      : undefined;
  return NOTICES[notice]!(name ?? "The application");
}

const DATE = new Intl.DateTimeFormat("en-GB", { dateStyle: "medium", timeStyle: "short", timeZone: "UTC" });

/** No session, or one that ended: the member must sign in again. */
const sessionEnded = (err: unknown) =>
  oauthDetail(err)?.error === "login_required" || (err instanceof ConnectError && err.code === Code.NotFound);

export function accountRoutes(app: FastifyInstance, { auth, cookie, forms }: PageDeps): void {
  const toLogin = (reply: FastifyReply) => seeOther(reply, "/account/login");
  const formPost = {
    errorHandler: pageErrorHandler,
    preHandler: async (request: FastifyRequest) => forms.check(request),
  };

  app.get("/account/login", { errorHandler: pageErrorHandler }, async (request, reply) => {
    const sessionId = cookie.read(request);
    if (sessionId) {
      const live = await auth.getSession({ sessionId }, rpcOptions(request)).then(
        () => true,
        (err) => {
          if (sessionEnded(err)) return false;
          throw err;
        },
      );
      if (live) return seeOther(reply, "/account/applications");
    }
    const { interactionId } = await auth.startAccountLogin({}, rpcOptions(request));
    return seeOther(reply, interactionPath(interactionId));
  });

  app.get("/account/applications", { errorHandler: pageErrorHandler }, async (request, reply) => {
    const sessionId = cookie.read(request);
    if (!sessionId) return toLogin(reply);
    let res;
    try {
      res = await auth.listApplications({ sessionId }, rpcOptions(request));
    } catch (err) {
      if (!sessionEnded(err)) throw err;
      cookie.clear(reply);
      return toLogin(reply);
    }
    const notice = await noticeOf(auth, request);
    const html = pages.applications({
      csrfToken: res.session?.csrfToken ?? "",
      formToken: forms.token(request, reply),
      memberEmail: res.session?.memberEmail ?? "",
      notice,
      applications: res.grants.map((grant) => {
        const granted = grant.createTime ? timestampDate(grant.createTime) : undefined;
        return {
          clientId: grant.clientId,
          name: grant.clientName || grant.clientId,
          selfRegistered: selfRegistered(grant.clientRegistration, grant.clientId),
          scopes: scopeTexts(grant.scopes),
          granted: granted ? `${DATE.format(granted)} UTC` : "",
          grantedIso: granted ? granted.toISOString() : "",
        };
      }),
    });
    return sendPage(reply, 200, html);
  });

  app.post("/account/applications/revoke", formPost, async (request, reply) => {
    const params = readParams(request.body);
    const sessionId = cookie.read(request);
    if (!sessionId) return toLogin(reply);
    const named = `client_id=${encodeURIComponent(params.client_id ?? "")}`;
    try {
      await auth.revokeApplication(
        { sessionId, csrfToken: params.csrf_token ?? "", clientId: params.client_id ?? "" },
        rpcOptions(request),
      );
    } catch (err) {
      if (oauthDetail(err)?.error === "login_required") return toLogin(reply);
      // Already withdrawn (a second click, another tab): say so on the list.
      if (err instanceof ConnectError && err.code === Code.NotFound)
        return seeOther(reply, `/account/applications?notice=gone&${named}`);
      throw err;
    }
    return seeOther(reply, `/account/applications?notice=revoked&${named}`);
  });

  app.post("/account/logout", formPost, async (request, reply) => {
    const params = readParams(request.body);
    const sessionId = cookie.read(request);
    // The session ends at the auth service (CSRF-checked there), then here.
    if (sessionId) await auth.logout({ sessionId, csrfToken: params.csrf_token ?? "" }, rpcOptions(request));
    cookie.clear(reply);
    return toLogin(reply);
  });
}
