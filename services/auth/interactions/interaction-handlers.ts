// The browser flow of AuthService: authorization requests as interactions,
// login into server-side sessions, consent, and the connected applications.
// The gateway holds only the session cookie's value and the CSRF tokens; both
// are checked here.
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
import {
  errorRedirect,
  validateAuthorizationRequest,
  withQuery,
  type ValidatedRequest,
} from "./authorization-request.js";
import { createInteractionStore, type InteractionRow } from "./interaction-store.js";
import { tokensEqual } from "./secrets.js";
import { createSessionStore, type SessionRow } from "./session-store.js";

export type InteractionHandlers = Partial<
  Pick<
    ServiceImpl<typeof AuthService>,
    | "startAuthorization"
    | "startAccountLogin"
    | "getInteraction"
    | "login"
    | "decideConsent"
    | "getSession"
    | "logout"
    | "listApplications"
    | "revokeApplication"
  >
>;

const SWEEP_EVERY_MS = 60_000;

export const CONSENT_WITHOUT_INTERACTION = "the consent does not name its sign-in request (interaction_id)";

export function createInteractionHandlers(deps: AuthServiceDeps): InteractionHandlers {
  const { orm, config, issuer } = deps;
  const schema = AUTH_SCHEMA;
  const interactions = createInteractionStore(orm, schema, config.INTERACTION_TTL_SECONDS);
  const sessions = createSessionStore(orm, schema, config.SESSION_TTL_SECONDS);
  const resolveClient = createClientResolver(deps);
  const resources = protectedResources(issuer);

  // Expired interactions and sessions are never read (every read checks the
  // expiry); a writer deletes them at most once a minute per process.
  let lastSweep = 0;
  const sweep = async () => {
    const now = new Date();
    if (now.getTime() - lastSweep < SWEEP_EVERY_MS) return;
    lastSweep = now.getTime();
    // Not the request's business: a failed sweep is retried by the next one.
    await Promise.all([interactions.deleteExpired(now), sessions.deleteExpired(now)]).catch(() => undefined);
  };

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
      await sweep();
      const interactionId = await interactions.create("authorize", validation.request, req.sessionId);
      return { interactionId, redirectTo: "" };
    }),

    startAccountLogin: oauthHandler(async () => {
      await sweep();
      return { interactionId: await interactions.create("account", null, "") };
    }),

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
      // The organisation service's form of a member's email, so that the limit
      // counts one member under one key however the email was typed.
      const email = normaliseEmail(req.email);
      // Counted before the password is looked at, given back when it was
      // right (rate-limit/failure-limits.ts): a burst cannot outrun the limit.
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
        // Only a refused password keeps its point; a right one, or a failure
        // to ask (the organisation service), gives it back.
        if (!refused) await deps.limits.refund("login", email, req.remoteAddress);
      }
      if (!member) throw new Error("VerifyMemberCredentials answered without a member");
      await sweep();
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
      // Every consent, a form's or a JSON body's, is the answer to the consent
      // page of one interaction, carrying that page's CSRF token: a session
      // alone does not show that its member saw and allowed this request.
      if (!req.interactionId) throw onPageOnly(new InvalidRequest(CONSENT_WITHOUT_INTERACTION));
      const interaction = await interactions.find(req.interactionId);
      if (interaction?.kind !== "authorize" || !interaction.client || !interaction.parameters)
        throw notFound("interaction");
      requireCsrf(req.csrfToken, interaction.csrfToken);
      const session = await requireSession(req.sessionId);
      // The consent is the member's who logged in for this interaction (or
      // whose session viewed it), never another browser's.
      if (interaction.memberId !== session.memberId)
        throw new LoginRequired("this consent belongs to another login; log in again");
      checkSameRequest(params, interaction, resources);
      const request: ValidatedRequest = {
        client: interaction.client,
        parameters: interaction.parameters,
        scopes: interaction.scopes,
      };
      if (req.decision !== ConsentDecision.ALLOW && req.decision !== ConsentDecision.DENY) {
        throw onPageOnly(new InvalidRequest("decision must be allow or deny"));
      }
      // Single use: a second post of the same consent finds nothing.
      if (!(await interactions.consume(req.interactionId))) throw notFound("interaction");
      const { parameters } = request;
      if (req.decision === ConsentDecision.DENY) {
        // RFC 6749 §4.1.2.1 access_denied: "The resource owner or authorization server denied the request."
        return {
          redirectTo: errorRedirect(
            parameters.redirectUri,
            new AccessDenied("the member denied access"),
            parameters.state,
            issuer,
          ),
        };
      }
      const code = await deps.grants.issueAuthorizationCode({
        clientId: parameters.clientId,
        organisationId: session.organisationId,
        memberId: session.memberId,
        // RFC 6749 §4.1.3: the token request repeats redirect_uri "if the
        // redirect_uri parameter was included in the authorization request";
        // when it was not, the token request may name none or the one used.
        redirectUri: parameters.redirectUri,
        redirectUriOmitted: !parameters.redirectUriSent,
        scopes: request.scopes,
        resources: parameters.resources ?? [],
        codeChallenge: parameters.codeChallenge,
      });
      // RFC 6749 §4.1.2: code, and state "if the "state" parameter was present
      // in the client authorization request"; RFC 9207 §2: iss.
      return {
        redirectTo: withQuery(parameters.redirectUri, {
          code,
          ...(parameters.state ? { state: parameters.state } : {}),
          iss: issuer,
        }),
      };
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
 * The consent names what it decides on; it must be the request the
 * interaction was validated as (the gateway's form carries the interaction's
 * parameters). Compared as a client would send them: redirect_uri and scope
 * may be left out when the request left them out, scope in any order; the
 * resources (RFC 8707) as the request named them, in any order.
 */
function checkSameRequest(
  sent: AuthorizationParameters,
  interaction: InteractionRow,
  resources: ProtectedResources,
): void {
  const stored = interaction.parameters!;
  const sameResources = (() => {
    const named = stored.resources ?? [];
    try {
      const sentNames = resourcesNamed(resources, sent.resource);
      return sentNames.length === named.length && sentNames.every((n) => named.includes(n));
    } catch {
      return false;
    }
  })();
  const sameScope = (() => {
    const names = sent.scope.split(" ").filter(Boolean);
    if (!names.length) return !stored.scope;
    return (
      names.length === new Set(names).size &&
      names.length === interaction.scopes.length &&
      names.every((s) => interaction.scopes.includes(s))
    );
  })();
  const mismatched = [
    sent.clientId !== stored.clientId && "client_id",
    sent.redirectUri !== stored.redirectUri && !(sent.redirectUri === "" && !stored.redirectUriSent) && "redirect_uri",
    !sameScope && "scope",
    sent.state !== stored.state && "state",
    sent.responseType !== "" && sent.responseType !== "code" && "response_type",
    sent.codeChallenge !== stored.codeChallenge && "code_challenge",
    sent.codeChallengeMethod !== stored.codeChallengeMethod && "code_challenge_method",
    !sameResources && "resource",
  ].filter((m): m is string => Boolean(m));
  if (mismatched.length) {
    throw onPageOnly(
      new InvalidRequest(`the consent does not match the authorization request: ${mismatched.join(", ")}`),
    );
  }
}

function toInteractionMessage(row: InteractionRow, resources: ProtectedResources): Interaction {
  const p = row.parameters;
  return create(InteractionSchema, {
    id: row.id,
    kind: row.kind === "authorize" ? InteractionKind.AUTHORIZE : InteractionKind.ACCOUNT,
    csrfToken: row.csrfToken,
    expireTime: timestampFromDate(row.expiresAt),
    client: row.client ?? undefined,
    scopes: row.scopes,
    parameters: p
      ? create(AuthorizationParametersSchema, {
          responseType: p.responseType,
          clientId: p.clientId,
          redirectUri: p.redirectUri,
          scope: row.scopes.join(" "),
          state: p.state,
          codeChallenge: p.codeChallenge,
          codeChallengeMethod: p.codeChallengeMethod,
          resource: (p.resources ?? []).map((n) => resources[n].identifier),
        })
      : undefined,
    loggedIn: row.loggedIn,
    memberEmail: row.loggedIn ? (row.memberEmail ?? "") : "",
    organisationId: row.loggedIn ? (row.organisationId ?? "") : "",
  });
}

function toSessionMessage(s: SessionRow): Session {
  return create(SessionSchema, {
    memberId: s.memberId,
    organisationId: s.organisationId,
    memberEmail: s.memberEmail,
    csrfToken: s.csrfToken,
    expireTime: timestampFromDate(s.expiresAt),
  });
}
