// The browser flow of AuthService: authorization requests as interactions,
// login into server-side sessions, consent, and the connected applications.
// The gateway holds only the session cookie's value and the CSRF tokens; both
// are checked here. Expired rows are never read; pruning deletes them (prune/).
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import {
  AuthorizationParametersSchema,
  ConsentDecision,
  InteractionKind,
  InteractionSchema,
  SessionSchema,
  type AuthService,
  type AuthorizationParameters,
  type Interaction,
  type Session,
} from "../../../gen/bizcard/auth/v1/auth_pb.js";
import { normaliseEmail } from "../../shared/email.js";
import { notFound } from "../../shared/validation.js";
import { protectedResources, type ProtectedResources } from "../../shared/protected-resources.js";
import { resourcesNamed } from "../resource-indicators.js";
import { AUTH_SCHEMA } from "../auth-schema.js";
import type { AuthServiceDeps } from "../auth-service-deps.js";
import { oauthLoginFailures } from "../../shared/metrics/metrics.js";
import {
  AccessDenied,
  InvalidCredentials,
  InvalidCsrfToken,
  InvalidRequest,
  LoginRequired,
  oauthHandler,
  onPageOnly,
} from "../oauth-errors.js";
import { createClientResolver } from "../clients/client-resolver.js";
import { errorRedirect, responseRedirect, validateAuthorizationRequest } from "./authorization-request.js";
import { createInteractionStore, type InteractionRow } from "./interaction-store.js";
import { tokensEqual } from "./secrets.js";
import { createSessionStore, type SessionRow } from "./session-store.js";

export function createInteractionHandlers(deps: AuthServiceDeps): Partial<ServiceImpl<typeof AuthService>> {
  const { orm, config, issuer } = deps;
  const interactions = createInteractionStore(orm, AUTH_SCHEMA, config.INTERACTION_TTL_SECONDS);
  const sessions = createSessionStore(orm, config.SESSION_TTL_SECONDS);
  const resolveClient = createClientResolver(deps);
  const resources = protectedResources(issuer);

  const requireCsrf = (presented: string, expected: string) => {
    if (!tokensEqual(presented, expected))
      throw new InvalidCsrfToken("the form's CSRF token is not valid; reload the page");
  };
  const requireSession = async (secret: string): Promise<SessionRow> => {
    const session = await sessions.find(secret);
    if (!session) throw new LoginRequired("no valid session; log in");
    return session;
  };

  return {
    startAuthorization: oauthHandler(async (req, context) => {
      const lookup = (clientId: string) =>
        resolveClient(clientId, { remainingMs: context.timeoutMs(), remoteAddress: req.remoteAddress });
      const validation = await validateAuthorizationRequest(
        lookup,
        issuer,
        req.parameters ?? create(AuthorizationParametersSchema),
        req.repeatedParameters,
      );
      if (validation.redirectTo !== undefined) return { redirectTo: validation.redirectTo, interactionId: "" };
      const interactionId = await interactions.create("authorize", validation.request, req.sessionId);
      return { interactionId, redirectTo: "" };
    }),

    startAccountLogin: oauthHandler(async () => ({ interactionId: await interactions.create("account", null, "") })),

    getInteraction: oauthHandler(async (req) => {
      const row = await interactions.find(req.interactionId, req.sessionId);
      // An authorization request whose client has since been deleted is over too.
      if (!row || (row.kind === "authorize" && !row.client)) throw notFound("interaction");
      return { interaction: toInteractionMessage(row, resources) };
    }),

    login: oauthHandler(async (req) => {
      const interaction = await interactions.find(req.interactionId);
      if (!interaction) throw notFound("interaction");
      requireCsrf(req.csrfToken, interaction.csrfToken);
      // The organisation service's form of the email: the limit counts one member under one key however it is typed.
      const email = normaliseEmail(req.email);
      // Counted before the password is checked, given back when it was right: a burst cannot outrun the limit.
      await deps.limits.consume("login", email, req.remoteAddress);
      let member;
      let refused = false;
      try {
        ({ member } = await deps.organisations.verifyMemberCredentials({
          email,
          password: req.password,
          remoteAddress: req.remoteAddress,
        }));
      } catch (err) {
        if (ConnectError.from(err).code !== Code.PermissionDenied) throw err;
        refused = true;
        oauthLoginFailures.inc();
        // Whichever it was: the message never tells whether the email exists.
        throw new InvalidCredentials("email or password is wrong");
      } finally {
        // Only a refused password keeps its point; a right one, or a failure to ask, gives it back.
        if (!refused) await deps.limits.refund("login", email, req.remoteAddress);
      }
      if (!member) throw new Error("VerifyMemberCredentials answered without a member");
      const { secret, session } = await sessions.open({
        memberId: member.id,
        organisationId: member.organisationId,
        memberEmail: member.email,
      });
      const bound = await interactions.find(interaction.id, secret);
      if (!bound) throw notFound("interaction");
      return {
        sessionId: secret,
        expireTime: timestampFromDate(session.expiresAt),
        interaction: toInteractionMessage(bound, resources),
      };
    }),

    decideConsent: oauthHandler(async (req) => {
      const params = req.parameters ?? create(AuthorizationParametersSchema);
      // A consent (a form's or a JSON body's) answers one interaction's page, with its CSRF token: a session alone
      // does not show that its member saw and allowed this request.
      if (!req.interactionId)
        throw onPageOnly(new InvalidRequest("the consent does not name its sign-in request (interaction_id)"));
      const interaction = await interactions.find(req.interactionId);
      if (interaction?.kind !== "authorize" || !interaction.client || !interaction.parameters)
        throw notFound("interaction");
      requireCsrf(req.csrfToken, interaction.csrfToken);
      const session = await requireSession(req.sessionId);
      // Only the member who logged in for this interaction (or whose session viewed it) decides, never another browser.
      if (interaction.memberId !== session.memberId)
        throw new LoginRequired("this consent belongs to another login; log in again");
      checkSameRequest(params, interaction, resources);
      if (req.decision !== ConsentDecision.ALLOW && req.decision !== ConsentDecision.DENY)
        throw onPageOnly(new InvalidRequest("decision must be allow or deny"));
      // Single use: a second post of the same consent finds nothing.
      if (!(await interactions.consume(req.interactionId))) throw notFound("interaction");
      const { parameters } = interaction;
      if (req.decision === ConsentDecision.DENY) {
        // RFC 6749 §4.1.2.1 access_denied: "The resource owner or authorization server denied the request."
        const denied = new AccessDenied("the member denied access");
        return { redirectTo: errorRedirect(parameters.redirectUri, denied, parameters.state, issuer) };
      }
      const code = await deps.grants.issueAuthorizationCode({
        clientId: parameters.clientId,
        organisationId: session.organisationId,
        memberId: session.memberId,
        // RFC 6749 §4.1.3: redirect_uri is REQUIRED "if the "redirect_uri" parameter was included in the
        // authorization request"; when it was not, the token request may name none or the one used.
        redirectUri: parameters.redirectUri,
        redirectUriOmitted: !parameters.redirectUriSent,
        scopes: interaction.scopes,
        resources: parameters.resources ?? [],
        codeChallenge: parameters.codeChallenge,
      });
      return { redirectTo: responseRedirect(parameters.redirectUri, { code }, parameters.state, issuer) };
    }),

    getSession: oauthHandler(async (req) => {
      const session = await sessions.find(req.sessionId);
      if (!session) throw notFound("session");
      return { session: toSessionMessage(session) };
    }),

    logout: oauthHandler(async (req) => {
      const session = await sessions.find(req.sessionId);
      if (!session) return {};
      requireCsrf(req.csrfToken, session.csrfToken);
      await sessions.end(req.sessionId);
      return {};
    }),

    listApplications: oauthHandler(async (req) => {
      const session = await requireSession(req.sessionId);
      const grants = await deps.grants.listGrants(session.organisationId);
      return { session: toSessionMessage(session), grants };
    }),

    revokeApplication: oauthHandler(async (req) => {
      const session = await requireSession(req.sessionId);
      requireCsrf(req.csrfToken, session.csrfToken);
      if (!req.clientId || !(await deps.grants.revokeGrant(session.organisationId, req.clientId, "withdrawn")))
        throw notFound("application");
      return {};
    }),
  };
}

/**
 * The consent names what it decides on: it must be the request the interaction
 * was validated as. redirect_uri and scope may be left out when the request
 * left them out; scopes and resources may come in any order.
 */
function checkSameRequest(
  sent: AuthorizationParameters,
  interaction: InteractionRow,
  resources: ProtectedResources,
): void {
  const stored = interaction.parameters!;
  const sentScopes = sent.scope.split(" ").filter(Boolean);
  let sentResources: string[] | undefined;
  try {
    sentResources = resourcesNamed(resources, sent.resource);
  } catch {
    sentResources = undefined;
  }
  const mismatched = [
    sent.clientId !== stored.clientId && "client_id",
    sent.redirectUri !== stored.redirectUri && !(sent.redirectUri === "" && !stored.redirectUriSent) && "redirect_uri",
    !(sentScopes.length ? sameMembers(sentScopes, interaction.scopes) : !stored.scope) && "scope",
    sent.state !== stored.state && "state",
    sent.responseType !== "" && sent.responseType !== "code" && "response_type",
    sent.codeChallenge !== stored.codeChallenge && "code_challenge",
    sent.codeChallengeMethod !== stored.codeChallengeMethod && "code_challenge_method",
    !(sentResources && sameMembers(sentResources, stored.resources ?? [])) && "resource",
  ].filter((m): m is string => Boolean(m));
  if (mismatched.length) {
    throw onPageOnly(
      new InvalidRequest(`the consent does not match the authorization request: ${mismatched.join(", ")}`),
    );
  }
}

/** The same values, each once, in any order. */
const sameMembers = (a: readonly string[], b: readonly string[]) =>
  a.length === new Set(a).size && a.length === b.length && a.every((x) => b.includes(x));

function toInteractionMessage(row: InteractionRow, resources: ProtectedResources): Interaction {
  const p = row.parameters;
  return create(InteractionSchema, {
    id: row.id,
    kind: row.kind === "authorize" ? InteractionKind.AUTHORIZE : InteractionKind.ACCOUNT,
    csrfToken: row.csrfToken,
    expireTime: timestampFromDate(row.expiresAt),
    client: row.client ?? undefined,
    scopes: row.scopes,
    // The request as validated: the scopes in the server's order, the resources by their identifiers.
    parameters: p
      ? create(AuthorizationParametersSchema, {
          ...p,
          scope: row.scopes.join(" "),
          resource: (p.resources ?? []).map((n) => resources[n].identifier),
        })
      : undefined,
    loggedIn: row.loggedIn,
    memberEmail: row.loggedIn ? (row.memberEmail ?? "") : "",
    organisationId: row.loggedIn ? (row.organisationId ?? "") : "",
  });
}

function toSessionMessage(s: SessionRow): Session {
  return create(SessionSchema, { ...s, expireTime: timestampFromDate(s.expiresAt) });
}
