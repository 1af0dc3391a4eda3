// Refresh tokens retried and revoked, expired interactions, and revocations
// racing the issue of tokens under the same grant (ordered by a held row
// lock), against the real auth service behind the gateway.
import { create } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { AuthorizationParametersSchema, ConsentDecision } from "../../gen/bizcard/auth/v1/auth_pb.js";
import { tokenHash as tokenHashOf } from "../../services/shared/token-hash.js";
import { rpcError } from "../support/rpc.js";
import {
  type Answer,
  app,
  auth,
  bearer,
  consentedCode,
  holdingRow,
  liveSession,
  orgId,
  PASSWORD,
  post,
  REDIRECT,
  register,
  rpc,
  settle,
  token,
  tokensFor,
  useSecuritySuite,
} from "../support/security-suite.js";

useSecuritySuite();

describe("refresh tokens", () => {
  it("within the window, a retried refresh gets the same pair only while that pair's refresh token is unused; after, it is reuse", async () => {
    const client = await register("Retrier");
    const first = await tokensFor(client);
    const second = await token({ grant_type: "refresh_token", refresh_token: first.refresh_token, ...post(client) });
    expect(second.status).toBe(200);
    // The answer was lost: the same token again gets the same pair.
    const retried = await token({ grant_type: "refresh_token", refresh_token: first.refresh_token, ...post(client) });
    expect(retried.body).toEqual(
      expect.objectContaining({ access_token: second.body.access_token, refresh_token: second.body.refresh_token }),
    );
    const third = await token({
      grant_type: "refresh_token",
      refresh_token: second.body.refresh_token!,
      ...post(client),
    });
    expect(third.status).toBe(200);
    // The first token again, though its successor was used: not a lost answer. Reuse: the grant ends.
    const stale = await token({ grant_type: "refresh_token", refresh_token: first.refresh_token, ...post(client) });
    expect(stale.status).toBe(400);
    expect(stale.body.error).toBe("invalid_grant");
    expect(stale.body).not.toHaveProperty("access_token");
    expect(await bearer(third.body.access_token!)).toBe("invalid_token");
    expect(
      (await token({ grant_type: "refresh_token", refresh_token: third.body.refresh_token!, ...post(client) })).status,
    ).toBe(400);
  });

  it("RFC 7009: revoking an already rotated refresh token ends its whole family", async () => {
    const client = await register("Revoker");
    const first = await tokensFor(client);
    const second = await token({ grant_type: "refresh_token", refresh_token: first.refresh_token, ...post(client) });
    await rpc().revokeToken({
      client: { clientId: client.id, clientSecret: client.secret, method: "client_secret_basic" },
      token: first.refresh_token,
    });
    expect(await bearer(second.body.access_token!)).toBe("invalid_token");
    expect(
      (await token({ grant_type: "refresh_token", refresh_token: second.body.refresh_token!, ...post(client) })).status,
    ).toBe(400);
  });
});

describe("interactions", () => {
  it("an expired interaction can neither be shown, logged into nor consented to", async () => {
    const sessionId = await liveSession();
    const parameters = create(AuthorizationParametersSchema, {
      responseType: "code",
      clientId: app.id,
      redirectUri: REDIRECT,
      state: "st",
    });
    const { interactionId } = await rpc().startAuthorization({ parameters, sessionId });
    const { interaction } = await rpc().getInteraction({ interactionId, sessionId });
    await auth.app.orm.em
      .fork()
      .execute(`update "auth"."interaction" set "expires_at" = now() - interval '1 second' where "id" = ?`, [
        interactionId,
      ]);
    expect((await rpcError(rpc().getInteraction({ interactionId }))).code).toBe(Code.NotFound);
    const csrfToken = interaction!.csrfToken;
    expect(
      (
        await rpcError(
          rpc().login({
            interactionId,
            csrfToken,
            email: "ada@security.test",
            password: PASSWORD,
            remoteAddress: "192.0.2.202",
          }),
        )
      ).code,
    ).toBe(Code.NotFound);
    const consent = rpc().decideConsent({
      interactionId,
      sessionId,
      csrfToken,
      decision: ConsentDecision.ALLOW,
      parameters: interaction!.parameters,
    });
    expect((await rpcError(consent)).code).toBe(Code.NotFound);
  });
});

describe("revocations racing the issue of tokens under the same grant (ordered by a held row lock)", () => {
  const revokeGrant = () => settle(rpc().revokeGrant({ organisationId: orgId, clientId: app.id }));

  it("RevokeGrant while a refresh is rotating: no deadlock (server error), and what the refresh issued is revoked too", async () => {
    const first = await tokensFor(app);
    let refreshed!: Promise<Answer>;
    let revoked!: ReturnType<typeof revokeGrant>;
    await holdingRow(
      `select 1 from "auth"."refresh_token" where "hash" = $1 for update`,
      [tokenHashOf(first.refresh_token)],
      async (waiting) => {
        refreshed = token({ grant_type: "refresh_token", refresh_token: first.refresh_token, ...post(app) });
        await waiting(1);
        revoked = revokeGrant();
        await waiting(2);
      },
    );
    const [r, g] = await Promise.all([refreshed, revoked]);
    expect(g).toEqual({ value: expect.anything() });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(await bearer(r.body.access_token!)).toBe("invalid_token");
    expect(
      (await token({ grant_type: "refresh_token", refresh_token: r.body.refresh_token!, ...post(app) })).status,
    ).toBe(400);
  });

  it("RevokeGrant while a code is being exchanged: no deadlock (server error), and what the exchange issued is revoked too", async () => {
    const { code, verifier } = await consentedCode(app);
    let exchanged!: Promise<Answer>;
    let revoked!: ReturnType<typeof revokeGrant>;
    await holdingRow(
      `select 1 from "auth"."authorization_code" where "hash" = $1 for update`,
      [tokenHashOf(code)],
      async (waiting) => {
        exchanged = token({
          grant_type: "authorization_code",
          code,
          redirect_uri: REDIRECT,
          code_verifier: verifier,
          ...post(app),
        });
        await waiting(1);
        revoked = revokeGrant();
        await waiting(2);
      },
    );
    const [x, g] = await Promise.all([exchanged, revoked]);
    expect(g).toEqual({ value: expect.anything() });
    expect(x.status, JSON.stringify(x.body)).toBe(200);
    expect(await bearer(x.body.access_token!)).toBe("invalid_token");
    expect(
      (await token({ grant_type: "refresh_token", refresh_token: x.body.refresh_token!, ...post(app) })).status,
    ).toBe(400);
  });

  it("RFC 7009 revocation of a refresh token while it rotates: the family's new tokens are revoked too", async () => {
    const first = await tokensFor(app);
    const creds = { clientId: app.id, clientSecret: app.secret, method: "client_secret_post" };
    let refreshed!: Promise<Answer>;
    let revoked!: ReturnType<typeof settle>;
    await holdingRow(
      `select 1 from "auth"."refresh_token" where "hash" = $1 for update`,
      [tokenHashOf(first.refresh_token)],
      async (waiting) => {
        refreshed = token({ grant_type: "refresh_token", refresh_token: first.refresh_token, ...post(app) });
        await waiting(1);
        revoked = settle(rpc().revokeToken({ client: creds, token: first.refresh_token }));
        await waiting(2);
      },
    );
    const [r, v] = await Promise.all([refreshed, revoked]);
    expect(v).toEqual({ value: expect.anything() });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(await bearer(r.body.access_token!)).toBe("invalid_token");
    expect(
      (await token({ grant_type: "refresh_token", refresh_token: r.body.refresh_token!, ...post(app) })).status,
    ).toBe(400);
    // The grant itself lives on (only the family was revoked): a new code still works.
    expect(await bearer((await tokensFor(app)).access_token)).toBe(orgId);
  });
});
