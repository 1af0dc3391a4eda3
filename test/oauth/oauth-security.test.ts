// A second look at the OAuth server as an attacker or an unlucky client sees
// it: bursts of parallel guesses against the failure limits, RFC 6749
// §4.1.3 for a request that named no redirect_uri, and parallel consent
// posts. Refresh retries, expired interactions and revocations racing the
// issue of tokens: oauth-security-races.test.ts.
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { AuthorizationParametersSchema, ConsentDecision } from "../../gen/bizcard/auth/v1/auth_pb.js";
import { OrganisationService } from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import { rpcError } from "../support/rpc.js";
import {
  app,
  auth,
  consentedCode,
  count,
  LOGIN_LIMIT,
  oauthError,
  organisation,
  orgId,
  PASSWORD,
  pkce,
  post,
  REDIRECT,
  register,
  rpc,
  token,
  useSecuritySuite,
} from "../support/security-suite.js";

useSecuritySuite();

describe("failure limits count atomically: a parallel burst cannot outrun them", () => {
  it("of a burst of 25 parallel wrong client secrets at most 10 are judged (401); the rest, and then the right secret, are 429", async () => {
    const target = await register("Burst target");
    const burst = await Promise.all(
      Array.from({ length: 25 }, () =>
        token({
          grant_type: "authorization_code",
          code: "bcc_x",
          redirect_uri: REDIRECT,
          client_id: target.id,
          client_secret: "bcs_guess",
        }),
      ),
    );
    expect(count(burst, (a) => a.status === 401 && a.body.error === "invalid_client")).toBeLessThanOrEqual(10);
    expect(count(burst, (a) => a.status === 429)).toBeGreaterThanOrEqual(15);
    expect(count(burst, (a) => a.status === 401 || a.status === 429)).toBe(25);
    const right = await token({
      grant_type: "authorization_code",
      code: "bcc_x",
      redirect_uri: REDIRECT,
      ...post(target),
    });
    expect(right.status).toBe(429);
    expect(Number(right.headers.get("retry-after"))).toBeGreaterThan(0);
  });

  it("a right secret counts nothing (the hot path writes no counter): many successes in a row are never limited", async () => {
    const client = await register("Busy");
    const counters = async () =>
      (await auth.app.orm.em.fork().execute(`select count(*)::int as "n" from "auth"."rate_limit"`))[0].n as number;
    const before = await counters();
    for (let i = 0; i < 15; i++) {
      // Invalid grant (400), but only after the client authenticated.
      const a = await token({
        grant_type: "authorization_code",
        code: "bcc_unknown",
        redirect_uri: REDIRECT,
        ...post(client),
      });
      expect(a.status, JSON.stringify(a.body)).toBe(400);
    }
    expect(await counters()).toBe(before);
  });

  it("of a burst of 20 parallel wrong passwords at most LOGIN_LIMIT are judged; the rest, and then the right password, are refused", async () => {
    await organisation
      .client(OrganisationService)
      .createMember({ organisationId: orgId, email: "burst@security.test", password: PASSWORD });
    const { interactionId } = await rpc().startAccountLogin({});
    const { interaction } = await rpc().getInteraction({ interactionId });
    const attempt = (password: string) =>
      rpcError(
        rpc().login({
          interactionId,
          csrfToken: interaction!.csrfToken,
          email: "burst@security.test",
          password,
          remoteAddress: "198.51.100.7",
        }),
      );
    const burst = await Promise.all(Array.from({ length: 20 }, () => attempt("wrong password!")));
    expect(
      count(burst, (e) => oauthError(e)?.error === "invalid_credentials" && e.code === Code.PermissionDenied),
    ).toBeLessThanOrEqual(LOGIN_LIMIT);
    expect(count(burst, (e) => e.code === Code.ResourceExhausted)).toBeGreaterThanOrEqual(20 - LOGIN_LIMIT);
    const right = await attempt(PASSWORD);
    expect(right.code).toBe(Code.ResourceExhausted);
    expect(oauthError(right)?.retryAfterSeconds).toBeGreaterThan(0);
  });

  it("a right password gives its point back: many logins in a row are never limited", async () => {
    const { interactionId } = await rpc().startAccountLogin({});
    const { interaction } = await rpc().getInteraction({ interactionId });
    for (let i = 0; i <= LOGIN_LIMIT; i++) {
      const res = await rpc().login({
        interactionId,
        csrfToken: interaction!.csrfToken,
        email: "ada@security.test",
        password: PASSWORD,
        remoteAddress: "198.51.100.8",
      });
      expect(res.sessionId).toMatch(/^bcsess_/);
    }
  });
});

describe("RFC 6749 §4.1.3: a request that named no redirect_uri", () => {
  it("its code is exchanged with the registered redirect_uri, or none; never with another", async () => {
    const withIt = await consentedCode(app, { redirectUri: "" });
    expect(`${withIt.redirect.origin}${withIt.redirect.pathname}`).toBe(REDIRECT);
    const a = await token({
      grant_type: "authorization_code",
      code: withIt.code,
      redirect_uri: REDIRECT,
      code_verifier: withIt.verifier,
      ...post(app),
    });
    expect(a.status, JSON.stringify(a.body)).toBe(200);

    const without = await consentedCode(app, { redirectUri: "" });
    const b = await token({
      grant_type: "authorization_code",
      code: without.code,
      code_verifier: without.verifier,
      ...post(app),
    });
    expect(b.status, JSON.stringify(b.body)).toBe(200);

    const other = await consentedCode(app, { redirectUri: "" });
    const c = await token({
      grant_type: "authorization_code",
      code: other.code,
      redirect_uri: "https://evil.example.test/callback",
      code_verifier: other.verifier,
      ...post(app),
    });
    expect(c.status).toBe(400);
    expect(c.body.error).toBe("invalid_grant");
  });

  it("a request that named it: the token request must repeat it", async () => {
    const named = await consentedCode(app);
    const a = await token({
      grant_type: "authorization_code",
      code: named.code,
      code_verifier: named.verifier,
      ...post(app),
    });
    expect(a.status).toBe(400);
    expect(a.body.error).toBe("invalid_grant");
  });
});

describe("consent", () => {
  it("two parallel posts of one consent: exactly one code", async () => {
    const { challenge } = pkce();
    const parameters = create(AuthorizationParametersSchema, {
      responseType: "code",
      clientId: app.id,
      redirectUri: REDIRECT,
      state: "st",
      codeChallenge: challenge,
      codeChallengeMethod: "S256",
    });
    const started = await rpc().startAuthorization({ parameters });
    const { interaction } = await rpc().getInteraction({ interactionId: started.interactionId });
    const login = await rpc().login({
      interactionId: started.interactionId,
      csrfToken: interaction!.csrfToken,
      email: "ada@security.test",
      password: PASSWORD,
      remoteAddress: "192.0.2.201",
    });
    const decide = () =>
      rpc()
        .decideConsent({
          interactionId: started.interactionId,
          sessionId: login.sessionId,
          csrfToken: interaction!.csrfToken,
          decision: ConsentDecision.ALLOW,
          parameters: login.interaction!.parameters,
        })
        .then(
          (r) => r.redirectTo,
          (e) => ConnectError.from(e).code,
        );
    const answers = await Promise.all([decide(), decide(), decide()]);
    expect(count(answers, (a) => typeof a === "string" && a.includes("code="))).toBe(1);
    expect(count(answers, (a) => a === Code.NotFound)).toBe(2);
  });
});
