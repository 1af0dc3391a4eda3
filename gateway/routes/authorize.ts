// The browser side of the authorization endpoint (RFC 6749 §4.1): GET
// /oauth/authorize starts an interaction at the auth service, whose page is
// the login or the consent form; the consent POST (the form, or JSON with the
// session) ends in a 303 to the client's redirect URI. Every rule is the auth
// service's: the gateway reads parameters, keeps the cookie, renders pages.
import { Code, ConnectError, type Client } from "@connectrpc/connect";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import {
  ConsentDecision,
  InteractionKind,
  type AuthService,
  type AuthorizationParameters,
  type Interaction,
} from "../../gen/bizcard/auth/v1/auth_pb.js";
import type { OrganisationService } from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import { SCOPES, isScope } from "../../services/auth/scopes.js";
import { rpcOptions } from "../clients.js";
import { HttpError, sendError } from "../errors.js";
import { NO_STORE, OAuthError, oauthErrorHandler } from "../oauth-errors.js";
import { readParams, readRepeated } from "../oauth-params.js";
import { EXPIRED_PAGE, oauthDetail, pageErrorHandler, seeOther, sendMessage, sendPage } from "../pages/page-reply.js";
import { pages, selfRegistered, type ScopeText } from "../pages/pages.js";
import type { FormGuard } from "../form-guard.js";
import type { SessionCookie } from "../session-cookie.js";
import { AUTHORIZE_ROUTE, CONSENT_ROUTE } from "../schemas/oauth-routes.js";

export interface PageDeps {
  auth: Client<typeof AuthService>;
  organisations: Client<typeof OrganisationService>;
  cookie: SessionCookie;
  forms: FormGuard;
}

/** The authorization request's parameters, by their names on the wire. */
const PARAMETERS = {
  response_type: "responseType",
  client_id: "clientId",
  redirect_uri: "redirectUri",
  scope: "scope",
  state: "state",
  code_challenge: "codeChallenge",
  code_challenge_method: "codeChallengeMethod",
  response_mode: "responseMode",
} as const satisfies Record<string, keyof AuthorizationParameters>;

type Wire = keyof typeof PARAMETERS;
type Fields = { [K in (typeof PARAMETERS)[Wire]]: string };
const WIRE_FIELDS = Object.entries(PARAMETERS) as [Wire, keyof Fields][];

/** RFC 8707 §2: resource may be repeated in the authorization request (and so in the consent). */
const RESOURCE = "resource";

function parametersFrom(read: (name: Wire) => string | undefined, resource: string[]) {
  const out = {} as Fields;
  for (const [wire, field] of WIRE_FIELDS) out[field] = read(wire) ?? "";
  return { ...out, resource };
}

export const interactionPath = (id: string) => `/oauth/interaction/${encodeURIComponent(id)}`;

export function scopeTexts(scopes: readonly string[]): ScopeText[] {
  return scopes.map((name) => ({ name, description: isScope(name) ? SCOPES[name] : name }));
}

/** The CSP source the consent form may redirect to: the origin, or a private-use scheme (RFC 8252 §7.1). */
function redirectTarget(url: URL | undefined): string[] {
  if (!url) return [];
  if (url.protocol === "http:" || url.protocol === "https:") return [url.origin];
  return /^[a-z][a-z0-9+.-]*:$/i.test(url.protocol) ? [url.protocol] : [];
}

function loginPage(interaction: Interaction, formToken: string, extra: { email?: string; message?: string } = {}) {
  return pages.login({
    action: `${interactionPath(interaction.id)}/login`,
    csrfToken: interaction.csrfToken,
    formToken,
    clientName: interaction.kind === InteractionKind.AUTHORIZE ? interaction.client?.name : undefined,
    ...extra,
  });
}

function sendConsentPage(
  reply: FastifyReply,
  interaction: Interaction,
  organisationName: string,
  formToken: string,
): FastifyReply {
  const p = interaction.parameters;
  const fields = WIRE_FIELDS.map(([wire, field]): [string, string] => [wire, p?.[field] ?? ""])
    .concat((p?.resource ?? []).map((value): [string, string] => [RESOURCE, value]))
    .filter(([, value]) => value !== "");
  const redirectUri = p?.redirectUri ?? "";
  const url = URL.canParse(redirectUri) ? new URL(redirectUri) : undefined;
  const html = pages.consent({
    interactionId: interaction.id,
    csrfToken: interaction.csrfToken,
    formToken,
    clientName: interaction.client?.name ?? interaction.parameters?.clientId ?? "",
    memberEmail: interaction.memberEmail,
    organisationName,
    scopes: scopeTexts(interaction.scopes),
    redirectHost: url ? url.host || url.protocol.replace(/:$/, "") : redirectUri,
    selfRegistered: interaction.client
      ? selfRegistered(interaction.client.registration, interaction.client.clientId)
      : undefined,
    fields,
  });
  return sendPage(reply, 200, html, redirectTarget(url));
}

const isJson = (request: FastifyRequest) => /^application\/json\s*(;|$)/i.test(request.headers["content-type"] ?? "");

/** No session, or not the interaction member's: from the auth service, or no cookie at all. */
const loginRequired = (err: unknown) =>
  oauthDetail(err)?.error === "login_required" || (err instanceof HttpError && err.error === "login_required");

/** The consent POST answers JSON errors to a JSON body and pages to the form, with the same statuses. */
function consentErrorHandler(err: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  if (!isJson(request)) return pageErrorHandler(err, request, reply);
  const detail = oauthDetail(err);
  if (detail?.error === "invalid_csrf_token" && !detail.retryAfterSeconds) {
    return sendError(reply.headers(NO_STORE), new HttpError(403, detail.error, detail.errorDescription));
  }
  if (loginRequired(err)) {
    const description = detail?.errorDescription || "sign in first: a valid session cookie is required";
    return reply
      .status(401)
      .headers(NO_STORE)
      .type("application/json; charset=utf-8")
      .send({ error: "login_required", error_description: description });
  }
  return oauthErrorHandler(err, request, reply);
}

export function authorizeRoutes(app: FastifyInstance, { auth, organisations, cookie, forms }: PageDeps): void {
  const formPost = { preHandler: async (request: FastifyRequest) => forms.check(request) };
  // RFC 6749 §4.1.1: the authorization request, in the query.
  app.get("/oauth/authorize", { schema: AUTHORIZE_ROUTE, errorHandler: pageErrorHandler }, async (request, reply) => {
    const query = (request.query ?? {}) as Record<string, string | string[] | undefined>;
    // RFC 6749 §3.1: "Request and response parameters MUST NOT be included
    // more than once": the auth service decides what that answers.
    const repeatedParameters = Object.keys(query).filter((name) => name !== RESOURCE && Array.isArray(query[name]));
    const first = (name: string) => {
      const value = query[name];
      return Array.isArray(value) ? value[0] : value;
    };
    try {
      const res = await auth.startAuthorization(
        {
          parameters: parametersFrom(first, readRepeated(query, RESOURCE)),
          repeatedParameters,
          sessionId: cookie.read(request) ?? "",
          remoteAddress: request.ip,
        },
        rpcOptions(request),
      );
      return seeOther(reply, res.redirectTo || interactionPath(res.interactionId));
    } catch (err) {
      const detail = oauthDetail(err);
      // RFC 6749 §4.1.2.1: a missing or invalid redirection URI or client identifier:
      // "SHOULD inform the resource owner of the error and MUST NOT automatically redirect".
      if (detail && !detail.redirectAllowed && err instanceof ConnectError && err.code !== Code.ResourceExhausted) {
        return sendMessage(reply, 400, {
          title: "This sign-in link is not valid",
          text: "The application that sent you here made a request this server cannot accept, so you were not sent back to it. Tell the application's makers.",
          detail: detail.errorDescription || undefined,
        });
      }
      throw err;
    }
  });

  app.get<{ Params: { id: string } }>(
    "/oauth/interaction/:id",
    { errorHandler: pageErrorHandler },
    async (request, reply) => {
      const { interaction } = await auth.getInteraction(
        { interactionId: request.params.id, sessionId: cookie.read(request) ?? "" },
        rpcOptions(request),
      );
      if (!interaction) return sendMessage(reply, 404, EXPIRED_PAGE);
      if (!interaction.loggedIn) return sendPage(reply, 200, loginPage(interaction, forms.token(request, reply)));
      if (interaction.kind === InteractionKind.ACCOUNT) return seeOther(reply, "/account/applications");
      const { organisation } = await organisations.getOrganisation(
        { id: interaction.organisationId },
        rpcOptions(request),
      );
      return sendConsentPage(reply, interaction, organisation?.name ?? "", forms.token(request, reply));
    },
  );

  app.post<{ Params: { id: string } }>(
    "/oauth/interaction/:id/login",
    { errorHandler: pageErrorHandler, ...formPost },
    async (request, reply) => {
      const params = readParams(request.body);
      const interactionId = request.params.id;
      try {
        const res = await auth.login(
          {
            interactionId,
            csrfToken: params.csrf_token ?? "",
            email: params.email ?? "",
            password: params.password ?? "",
            remoteAddress: request.ip,
          },
          rpcOptions(request),
        );
        const expires = res.expireTime ? timestampDate(res.expireTime) : new Date(Date.now() + 3600_000);
        cookie.set(reply, res.sessionId, expires);
        const account = res.interaction?.kind === InteractionKind.ACCOUNT;
        return seeOther(reply, account ? "/account/applications" : interactionPath(interactionId));
      } catch (err) {
        const detail = oauthDetail(err);
        if (detail?.error !== "invalid_credentials" || detail.retryAfterSeconds > 0) throw err;
        // The form again, one message for a wrong email or password. 200: a 401 would need a
        // WWW-Authenticate scheme (RFC 9110 §15.5.2) that form login has not.
        const { interaction } = await auth.getInteraction({ interactionId, sessionId: "" }, rpcOptions(request));
        if (!interaction) return sendMessage(reply, 404, EXPIRED_PAGE);
        const page = loginPage(interaction, forms.token(request, reply), {
          email: params.email,
          message: "The email or password is not right.",
        });
        return sendPage(reply, 200, page);
      }
    },
  );

  app.post(
    "/oauth/authorize/consent",
    { schema: CONSENT_ROUTE, errorHandler: consentErrorHandler, ...formPost },
    async (request, reply) => {
      const json = isJson(request);
      const params = readParams(request.body, [RESOURCE]);
      const decisions: Record<string, ConsentDecision> = { allow: ConsentDecision.ALLOW, deny: ConsentDecision.DENY };
      const decision = Object.hasOwn(decisions, params.decision ?? "") ? decisions[params.decision!] : undefined;
      if (decision === undefined) throw new OAuthError("invalid_request", "decision must be allow or deny");
      const interactionId = params.interaction_id ?? "";
      // The consent answers one interaction's page, with its CSRF token (the auth service checks it):
      // a session cookie alone does not show that the member saw this request.
      if (!interactionId) {
        throw new HttpError(400, "invalid_request", "the consent does not name its sign-in request (interaction_id)");
      }
      const sessionId = cookie.read(request);
      try {
        if (!sessionId) throw new OAuthError("login_required", "sign in first: the session cookie is missing");
        const res = await auth.decideConsent(
          {
            interactionId,
            sessionId,
            csrfToken: params.csrf_token ?? "",
            decision,
            parameters: parametersFrom((name) => params[name], readRepeated(request.body, RESOURCE)),
          },
          rpcOptions(request),
        );
        if (json) return reply.status(303).headers(NO_STORE).header("location", res.redirectTo).send();
        return seeOther(reply, res.redirectTo);
      } catch (err) {
        // The form's member is no longer logged in: the interaction shows the login again.
        if (!json && loginRequired(err)) return seeOther(reply, interactionPath(interactionId));
        throw err;
      }
    },
  );
}
