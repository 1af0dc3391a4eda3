// Introspection (RFC 7662) and revocation (RFC 7009) over RPC, the bearer
// check and the expired-token sweep, and an organisation's grants: listed,
// and revoked with the webhook subscriptions they held.
import { Code } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { OAuthErrorSchema } from "../../gen/bizcard/auth/v1/auth_pb.js";
import { EventType } from "../../gen/bizcard/events/v1/events_pb.js";
import { WebhookService } from "../../gen/bizcard/webhook/v1/webhook_pb.js";
import { deleteExpired } from "../../services/auth/tokens/expired-sweep.js";
import { tokenHash } from "../../services/shared/token-hash.js";
import { waitFor } from "../support/processes.js";
import { rpcError } from "../support/rpc.js";
import {
  auth,
  bearer,
  codeFor,
  confidential,
  exchangeCode,
  expectOAuthError,
  expectTokens,
  grantEvents,
  grantOf,
  memberB,
  orgA,
  orgB,
  other,
  owned,
  pkce,
  post,
  PUBLIC_REDIRECT,
  publicClient,
  REDIRECT,
  type Registered,
  rpc,
  token,
  tokenEvents,
  useOAuthTokenSuite,
  webhook,
} from "../support/oauth-token-suite.js";

useOAuthTokenSuite();

describe("introspection (RFC 7662) and revocation (RFC 7009) over RPC", () => {
  const creds = (client: Registered) => ({
    clientId: client.id,
    clientSecret: client.secret,
    method: "client_secret_basic",
  });

  it("introspection: a confidential client sees its own live tokens; anything else is inactive", async () => {
    const tokens = await exchangeCode(confidential, { scopes: ["organisation:read"] });
    const mine = await rpc().introspectToken({ client: creds(confidential), token: tokens.access_token });
    expect(mine).toMatchObject({
      active: true,
      scope: "organisation:read",
      clientId: confidential.id,
      tokenType: "Bearer",
      sub: orgA,
    });
    expect(Number(mine.exp) - Number(mine.iat)).toBe(3600);
    expect(mine.iss).toMatch(/^http/);
    const refresh = await rpc().introspectToken({
      client: creds(confidential),
      token: tokens.refresh_token,
      tokenTypeHint: "refresh_token",
    });
    expect(refresh).toMatchObject({ active: true, clientId: confidential.id, sub: orgA });
    expect((await rpc().introspectToken({ client: creds(other), token: tokens.access_token })).active).toBe(false);
    expect((await rpc().introspectToken({ client: creds(confidential), token: "bca_unknown" })).active).toBe(false);
    const pub = await rpcError(
      rpc().introspectToken({ client: { clientId: publicClient.id, method: "none" }, token: tokens.access_token }),
    );
    expect(pub.code).toBe(Code.PermissionDenied);
    expect(pub.findDetails(OAuthErrorSchema)[0]?.error).toBe("invalid_client");
    const wrong = await rpcError(
      rpc().introspectToken({ client: { ...creds(confidential), clientSecret: "x" }, token: tokens.access_token }),
    );
    expect(wrong.findDetails(OAuthErrorSchema)[0]?.error).toBe("invalid_client");
  });

  it("revoking an access token ends it and publishes token.revoked; another client's or an unknown token is a no-op", async () => {
    const tokens = await exchangeCode(confidential);
    await rpc().revokeToken({ client: creds(other), token: tokens.access_token });
    expect(await bearer(tokens.access_token)).toBe(orgA);
    await rpc().revokeToken({ client: creds(confidential), token: "bca_nothing" });
    await rpc().revokeToken({ client: creds(confidential), token: tokens.access_token, tokenTypeHint: "access_token" });
    expect(await bearer(tokens.access_token)).toBe("invalid_token");
    const event = await waitFor(
      () => tokenEvents.find((e) => e.accessTokenHashes.includes(tokenHash(tokens.access_token))),
      10_000,
      "token.revoked",
    );
    expect(event).toMatchObject({ organisationId: orgA, clientId: confidential.id });
    // The refresh token lives on.
    expectTokens(
      await token({ grant_type: "refresh_token", refresh_token: tokens.refresh_token, ...post(confidential) }),
      { refresh: true },
    );
  });

  it("revoking a refresh token ends its family and the family's access tokens, not the grant's other families", async () => {
    const one = await exchangeCode(confidential);
    const two = await exchangeCode(confidential);
    const rotated = await token({
      grant_type: "refresh_token",
      refresh_token: one.refresh_token,
      ...post(confidential),
    });
    await rpc().revokeToken({
      client: { clientId: confidential.id, clientSecret: confidential.secret, method: "client_secret_post" },
      token: rotated.body.refresh_token as string,
    });
    expect(await bearer(one.access_token)).toBe("invalid_token");
    expect(await bearer(rotated.body.access_token as string)).toBe("invalid_token");
    expectOAuthError(
      await token({
        grant_type: "refresh_token",
        refresh_token: rotated.body.refresh_token as string,
        ...post(confidential),
      }),
      400,
      "invalid_grant",
    );
    expect(await bearer(two.access_token)).toBe(orgA);
    const event = await waitFor(
      () => tokenEvents.find((e) => e.accessTokenHashes.includes(tokenHash(one.access_token))),
      10_000,
      "token.revoked",
    );
    expect(event.accessTokenHashes).toContain(tokenHash(rotated.body.access_token as string));
  });

  it("a public client may revoke its own tokens with its client_id", async () => {
    const { verifier, challenge } = pkce();
    const code = await codeFor(publicClient, { challenge, redirectUri: PUBLIC_REDIRECT });
    const a = await token({
      grant_type: "authorization_code",
      code,
      redirect_uri: PUBLIC_REDIRECT,
      code_verifier: verifier,
      client_id: publicClient.id,
    });
    await rpc().revokeToken({
      client: { clientId: publicClient.id, method: "none" },
      token: a.body.access_token as string,
    });
    expect(await bearer(a.body.access_token as string)).toBe("invalid_token");
  });

  it("the bearer check refuses unknown and expired tokens; the sweep deletes expired ones only", async () => {
    expect(await bearer("bca_unknown")).toBe("invalid_token");
    expect(await bearer("")).toBe("invalid_token");
    const a = await token({ grant_type: "client_credentials", ...post(owned) });
    const live = await token({ grant_type: "client_credentials", ...post(owned) });
    const em = auth.app.orm.em.fork();
    await em.execute(`update "auth"."access_token" set "expires_at" = now() - interval '1 second' where "hash" = ?`, [
      tokenHash(a.body.access_token as string),
    ]);
    expect(await bearer(a.body.access_token as string)).toBe("invalid_token");
    expect(await deleteExpired(auth.app.orm, "auth")).toBeGreaterThanOrEqual(1);
    const rows: { hash: string }[] = await em.execute(
      `select "hash" from "auth"."access_token" where "hash" in (?, ?)`,
      [tokenHash(a.body.access_token as string), tokenHash(live.body.access_token as string)],
    );
    expect(rows.map((r) => r.hash)).toEqual([tokenHash(live.body.access_token as string)]);
    expect(await bearer(live.body.access_token as string)).toBe(orgA);
  });
});

describe("grants", () => {
  it("lists an organisation's grants with client names, newest first", async () => {
    const c = await rpc().createClient({ name: "Newest <b>app</b>", redirectUris: [REDIRECT] });
    await codeFor(
      { id: c.client!.clientId, secret: c.clientSecret },
      { organisationId: orgB, memberId: memberB, scopes: ["organisation:read"] },
    );
    await codeFor(confidential, { organisationId: orgB, memberId: memberB, scopes: ["webhooks:read"] });
    const { grants: list } = await rpc().listGrants({ organisationId: orgB });
    expect(list.map((g) => g.clientName)).toEqual(["Zapier", "Newest <b>app</b>"]);
    expect(list[0]).toMatchObject({ organisationId: orgB, clientId: confidential.id, scopes: ["webhooks:read"] });
    // A second consent widens the grant's scopes and moves its update time.
    await codeFor(confidential, { organisationId: orgB, memberId: memberB, scopes: ["organisation:read"] });
    const widened = await grantOf(orgB, confidential.id);
    expect(widened?.scopes).toEqual(["organisation:read", "webhooks:read"]);
    const invalid = await rpcError(rpc().listGrants({ organisationId: "nope" }));
    expect(invalid.code).toBe(Code.InvalidArgument);
  });

  it("RevokeGrant withdraws access, publishes grant.revoked, and the webhook service deletes the pair's subscriptions", async () => {
    const hooks = webhook.client(WebhookService);
    const tokens = await exchangeCode(confidential);
    const cc = await token({ grant_type: "client_credentials", ...post(owned) });
    const pair = { organisationId: orgA, clientId: confidential.id };
    const keep = { organisationId: orgA, clientId: owned.id };
    await hooks.createSubscription({
      owner: pair,
      targetUrl: "https://hooks.example.test/a",
      eventType: EventType.CONTACT_CREATED,
    });
    await hooks.createSubscription({
      owner: pair,
      targetUrl: "https://hooks.example.test/b",
      eventType: EventType.CONTACT_UPDATED,
    });
    await hooks.createSubscription({
      owner: keep,
      targetUrl: "https://hooks.example.test/c",
      eventType: EventType.CONTACT_CREATED,
    });

    await rpc().revokeGrant(pair);
    expect(await bearer(tokens.access_token)).toBe("invalid_token");
    expectOAuthError(
      await token({ grant_type: "refresh_token", refresh_token: tokens.refresh_token, ...post(confidential) }),
      400,
      "invalid_grant",
    );
    expect(await bearer(cc.body.access_token as string)).toBe(orgA);
    await waitFor(
      () =>
        grantEvents.find(
          (e) => e.clientId === confidential.id && e.organisationId === orgA && e.reason === "withdrawn",
        ),
      10_000,
      "grant.revoked",
    );
    await waitFor(
      async () => (await hooks.listSubscriptions({ owner: pair })).subscriptions.length === 0,
      10_000,
      "subscriptions deleted",
    );
    expect((await hooks.listSubscriptions({ owner: keep })).subscriptions).toHaveLength(1);

    const again = await rpcError(rpc().revokeGrant(pair));
    expect(again.code).toBe(Code.NotFound);
    // Withdrawing the owned client's access ends its client_credentials tokens too.
    await rpc().revokeGrant(keep);
    expect(await bearer(cc.body.access_token as string)).toBe("invalid_token");
    await waitFor(
      async () => (await hooks.listSubscriptions({ owner: keep })).subscriptions.length === 0,
      10_000,
      "subscriptions deleted",
    );
  });
});
