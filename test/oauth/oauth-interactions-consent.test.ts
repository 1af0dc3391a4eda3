// Consent (allow, deny, scopes, CSRF) and the connected applications, with
// a GrantStore that records what consent asked of it.
import { create } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import {
  AuthorizationParametersSchema,
  ConsentDecision,
  GrantSchema,
  type AuthorizationParameters,
} from "../../gen/bizcard/auth/v1/auth_pb.js";
import { rpcError } from "../support/rpc.js";
import {
  CHALLENGE,
  clients,
  ISSUER,
  login,
  oauthError,
  orgId,
  otherOrgId,
  type Params,
  params,
  recorded,
  rpc,
  startLoggedIn,
  useInteractionsSuite,
} from "../support/interactions-suite.js";

useInteractionsSuite();

describe("consent", () => {
  const decide = (
    interactionId: string,
    sessionId: string,
    csrfToken: string,
    decision: ConsentDecision,
    p: AuthorizationParameters,
  ) => rpc().decideConsent({ interactionId, sessionId, csrfToken, decision, parameters: p });

  it("allow: a code for the request as validated, and redirect_uri?code&state&iss keeping the registered query", async () => {
    const { interactionId, sessionId, interaction } = await startLoggedIn({
      scope: "organisation:read webhooks:write",
      codeChallenge: CHALLENGE,
      codeChallengeMethod: "S256",
    });
    const res = await decide(
      interactionId,
      sessionId,
      interaction.csrfToken,
      ConsentDecision.ALLOW,
      interaction.parameters!,
    );
    const url = new URL(res.redirectTo);
    expect(`${url.origin}${url.pathname}`).toBe("https://app.example/cb");
    const code = url.searchParams.get("code");
    expect(Object.fromEntries(url.searchParams)).toEqual({ tenant: "1", code, state: "xyz", iss: ISSUER });
    expect(recorded.codes.at(-1)).toEqual({
      clientId: clients.web,
      organisationId: orgId,
      memberId: expect.any(String),
      redirectUri: "https://app.example/cb?tenant=1",
      redirectUriOmitted: false,
      resources: [],
      scopes: ["organisation:read", "webhooks:write"],
      codeChallenge: CHALLENGE,
    });
    // Single use.
    const again = await rpcError(
      decide(interactionId, sessionId, interaction.csrfToken, ConsentDecision.ALLOW, interaction.parameters!),
    );
    expect(again.code).toBe(Code.NotFound);
  });

  it("deny: error=access_denied with state and iss, and no code", async () => {
    const { interactionId, sessionId, interaction } = await startLoggedIn();
    const before = recorded.codes.length;
    const res = await decide(
      interactionId,
      sessionId,
      interaction.csrfToken,
      ConsentDecision.DENY,
      interaction.parameters!,
    );
    const url = new URL(res.redirectTo);
    expect(url.searchParams.get("error")).toBe("access_denied");
    expect(url.searchParams.get("state")).toBe("xyz");
    expect(url.searchParams.get("iss")).toBe(ISSUER);
    expect(url.searchParams.has("code")).toBe(false);
    expect(recorded.codes.length).toBe(before);
  });

  it("fields that differ from the validated request are refused on a page, and the interaction stays usable", async () => {
    const { interactionId, sessionId, interaction } = await startLoggedIn({
      scope: "organisation:read",
      codeChallenge: CHALLENGE,
      codeChallengeMethod: "S256",
    });
    const p = interaction.parameters!;
    for (const [field, change] of [
      ["redirect_uri", { redirectUri: "https://evil.example/cb" }],
      ["scope", { scope: "organisation:read contacts:read" }],
      ["state", { state: "other" }],
      ["client_id", { clientId: clients.two }],
      ["code_challenge", { codeChallenge: "" }],
      ["code_challenge_method", { codeChallengeMethod: "plain" }],
      ["response_type", { responseType: "token" }],
    ] as const) {
      const err = await rpcError(
        decide(
          interactionId,
          sessionId,
          interaction.csrfToken,
          ConsentDecision.ALLOW,
          create(AuthorizationParametersSchema, { ...p, ...change }),
        ),
      );
      expect(err.code).toBe(Code.InvalidArgument);
      expect(oauthError(err)).toMatchObject({ error: "invalid_request", redirectAllowed: false });
      expect(oauthError(err)?.errorDescription).toContain(field);
    }
    const ok = await decide(interactionId, sessionId, interaction.csrfToken, ConsentDecision.ALLOW, p);
    expect(new URL(ok.redirectTo).searchParams.get("code")).toMatch(/^bcc_/);
  });

  it("a wrong CSRF token, no session, or another member's session is refused", async () => {
    const { interactionId, sessionId, interaction } = await startLoggedIn();
    const p = interaction.parameters!;
    expect(oauthError(await rpcError(decide(interactionId, sessionId, "wrong", ConsentDecision.ALLOW, p)))?.error).toBe(
      "invalid_csrf_token",
    );
    expect(
      oauthError(await rpcError(decide(interactionId, "", interaction.csrfToken, ConsentDecision.ALLOW, p)))?.error,
    ).toBe("login_required");
    // Bob logged in elsewhere: his session cannot decide on Ada's interaction.
    const bobs = await rpc().startAuthorization({ parameters: params({}) });
    const bob = await login(bobs.interactionId, "bob@other.test");
    expect(bob.interaction?.organisationId).toBe(otherOrgId);
    expect(
      oauthError(await rpcError(decide(interactionId, bob.sessionId, interaction.csrfToken, ConsentDecision.ALLOW, p)))
        ?.error,
    ).toBe("login_required");
    // A member who never logged in for it cannot either (interaction never bound).
    const unbound = await rpc().startAuthorization({ parameters: params({}) });
    const { interaction: u } = await rpc().getInteraction({ interactionId: unbound.interactionId });
    expect(
      oauthError(
        await rpcError(decide(unbound.interactionId, sessionId, u!.csrfToken, ConsentDecision.ALLOW, u!.parameters!)),
      )?.error,
    ).toBe("login_required");
  });

  it("a consent without an interaction (a session alone) is refused on a page, allow or deny, and issues no code", async () => {
    const { sessionId } = await startLoggedIn();
    const json = (p: Params, sid = sessionId, decision = ConsentDecision.ALLOW) =>
      rpc().decideConsent({ sessionId: sid, decision, parameters: params({ scope: "organisation:read", ...p }) });
    const codes = recorded.codes.length;
    for (const attempt of [
      json({}),
      json({}, sessionId, ConsentDecision.DENY),
      json({ scope: "admin" }),
      json({}, ""),
      json({ redirectUri: "https://evil.example/cb" }),
    ]) {
      expect(oauthError(await rpcError(attempt))).toMatchObject({ error: "invalid_request", redirectAllowed: false });
    }
    expect(recorded.codes.length).toBe(codes);
  });
});

describe("connected applications", () => {
  it("lists the session's organisation's grants; revoking needs the CSRF token and names a granted application", async () => {
    const { sessionId } = await startLoggedIn();
    const { session } = await rpc().getSession({ sessionId });
    recorded.grants.set(orgId, [
      create(GrantSchema, {
        organisationId: orgId,
        clientId: clients.web,
        clientName: "Web app",
        scopes: ["organisation:read"],
      }),
    ]);
    const listed = await rpc().listApplications({ sessionId });
    expect(listed.session?.organisationId).toBe(orgId);
    expect(listed.grants.map((g) => g.clientId)).toEqual([clients.web]);
    const badCsrf = await rpcError(rpc().revokeApplication({ sessionId, csrfToken: "nope", clientId: clients.web }));
    expect(oauthError(badCsrf)?.error).toBe("invalid_csrf_token");
    expect(
      (await rpcError(rpc().revokeApplication({ sessionId, csrfToken: session!.csrfToken, clientId: clients.two })))
        .code,
    ).toBe(Code.NotFound);
    await rpc().revokeApplication({ sessionId, csrfToken: session!.csrfToken, clientId: clients.web });
    expect(recorded.revoked.at(-1)).toEqual({ organisationId: orgId, clientId: clients.web, reason: "withdrawn" });
    expect((await rpc().listApplications({ sessionId })).grants).toEqual([]);
    expect(oauthError(await rpcError(rpc().listApplications({ sessionId: "" })))?.error).toBe("login_required");
  });
});
