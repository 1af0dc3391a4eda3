// The internal credential as a caller sees it: every RPC port refuses an
// anonymous or wrongly credentialed call with UNAUTHENTICATED, loopback
// included (a DNS-rebinding page posts plain JSON to 127.0.0.1); a list of
// credentials rotates without downtime (servers accept each, clients send the
// first); and through the gateway, only a refused internal credential is a
// 500, while the client's own failures stay 4xx.
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OAuthErrorSchema } from "../../gen/bizcard/auth/v1/auth_pb.js";
import { OrganisationService } from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import { fromConnectError } from "../../gateway/errors.js";
import { oauthErrorFrom } from "../../gateway/oauth-errors.js";
import { createLogger } from "../../services/shared/logger.js";
import { createRpcClient } from "../../services/shared/rpc/client.js";
import { startRpcServer, type RunningServer } from "../../services/shared/rpc/server.js";
import type { ServiceApp } from "../../services/shared/service-app.js";
import { testConfig } from "../support/backends.js";
import { createOrganisationApp, startPlatform, type Platform, type StartedService } from "../support/platform.js";
import { rpcError } from "../support/rpc.js";

const NEW = "n".repeat(40);
const OLD = "o".repeat(40);
const OTHER = "x".repeat(40);

/** Every config of this file shares one stream and subject prefix. */
const base = testConfig();
const configWith = (overrides: Record<string, string>) =>
  testConfig({ NATS_STREAM: base.NATS_STREAM, NATS_SUBJECT_PREFIX: base.NATS_SUBJECT_PREFIX, ...overrides });
/** Mid-rotation: the new credential is sent, the old one still accepted. */
const rotating = configWith({ INTERNAL_RPC_TOKEN: `${NEW},${OLD}` });

let platform: Platform;
/** Started with testConfig() as it is, on loopback: a random credential, nothing said about it. */
let plain: StartedService<ServiceApp>;
let organisation: StartedService<ServiceApp>;
const extraServers: RunningServer[] = [];
const logger = createLogger("test", base.LOG_LEVEL);

beforeAll(async () => {
  platform = await startPlatform({
    token: `${NEW},${OLD}`,
    config: { NATS_STREAM: base.NATS_STREAM, NATS_SUBJECT_PREFIX: base.NATS_SUBJECT_PREFIX },
    auth: true,
  });
  organisation = platform.organisation;
  plain = await platform.startService(createOrganisationApp, base);
});

afterAll(async () => {
  for (const s of extraServers) await s.close();
  await platform?.stop();
});

/** The same organisation routes on another port, accepting only these credentials. */
async function serveAccepting(tokens: string[]): Promise<string> {
  const server = await startRpcServer({
    name: "organisation",
    host: "127.0.0.1",
    port: 0,
    routes: organisation.app.routes,
    logger,
    internalTokens: tokens,
  });
  extraServers.push(server);
  return server.url;
}

describe("an RPC port on loopback", () => {
  /** What a DNS-rebinding page can send: a plain JSON POST (Connect's JSON unary), any headers it likes. */
  const post = (authorization?: string) =>
    fetch(`${plain.server.url}/bizcard.organisation.v1.OrganisationService/CreateOrganisation`, {
      method: "POST",
      headers: { "content-type": "application/json", ...(authorization ? { authorization } : {}) },
      body: JSON.stringify({ name: "Rebound", ownerEmail: "rebound@attacker.test", ownerPassword: "password-r" }),
    });

  it("refuses a plain JSON POST without the credential or with a wrong one, and creates nothing", async () => {
    for (const authorization of [undefined, `Bearer ${OTHER}`, "Bearer ", `Bearer ${plain.app.name}`]) {
      const res = await post(authorization);
      expect(res.status, String(authorization)).toBe(401);
      expect(await res.json()).toEqual({ code: "unauthenticated", message: "internal credential missing or wrong" });
    }
    // The very same request with the credential creates the organisation: it was
    // well formed, and none of the refused ones created it (that would be 409).
    const accepted = await post(`Bearer ${base.internalToken}`);
    expect(accepted.status, await accepted.clone().text()).toBe(200);
    expect(((await accepted.json()) as { owner: { email: string } }).owner.email).toBe("rebound@attacker.test");
  });

  it("refuses Connect clients without the credential or with a wrong one: UNAUTHENTICATED", async () => {
    for (const token of ["", OTHER]) {
      const err = await rpcError(
        plain.client(OrganisationService, token).getOrganisation({ id: "00000000-0000-4000-8000-000000000000" }),
      );
      expect(Code[err.code], token).toBe(Code[Code.Unauthenticated]);
    }
  });

  it("cannot be started without a credential: there is no anonymous mode", async () => {
    await expect(
      startRpcServer({
        name: "organisation",
        host: "127.0.0.1",
        port: 0,
        routes: plain.app.routes,
        logger,
        internalTokens: [],
      }),
    ).rejects.toThrow(/internal credential/);
  });
});

describe("rotating the internal credential", () => {
  it('a server configured with "new,old" accepts clients sending either, and no other', async () => {
    for (const token of [NEW, OLD]) {
      const res = await organisation.client(OrganisationService, token).createOrganisation({
        name: "Rotation",
        ownerEmail: `${token[0]}@rotation.test`,
        ownerPassword: "password-rot",
      });
      expect(res.organisation?.name).toBe("Rotation");
    }
    const err = await rpcError(organisation.client(OrganisationService, OTHER).getOrganisation({ id: "x" }));
    expect(Code[err.code]).toBe(Code[Code.Unauthenticated]);
  });

  it('a client configured with "new,old" sends new', async () => {
    const client = (url: string) =>
      createRpcClient(OrganisationService, { baseUrl: url, timeoutMs: 10_000, internalToken: rotating.internalToken });
    const missing = "00000000-0000-4000-8000-000000000000";
    // Past the credential check, a missing organisation is NOT_FOUND.
    expect(Code[(await rpcError(client(await serveAccepting([NEW])).getOrganisation({ id: missing }))).code]).toBe(
      Code[Code.NotFound],
    );
    expect(Code[(await rpcError(client(await serveAccepting([OLD])).getOrganisation({ id: missing }))).code]).toBe(
      Code[Code.Unauthenticated],
    );
  });
});

describe("through the gateway", () => {
  async function gatewayWith(tokens: string): Promise<string> {
    return (await platform.addGateway({ config: { INTERNAL_RPC_TOKEN: tokens } })).base;
  }
  const clientCredentials = (at: string) =>
    fetch(`${at}/oauth/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "grant_type=client_credentials&client_id=c&client_secret=s",
    });

  it("a credential the auth service accepts reaches it (its own invalid_client for an unknown client), mid-rotation too", async () => {
    for (const tokens of [`${NEW},${OLD}`, OLD, `${OLD},${OTHER}`]) {
      const res = await clientCredentials(await gatewayWith(tokens));
      expect(res.status, tokens).toBe(401);
      expect(await res.json()).toEqual({ error: "invalid_client", error_description: "client authentication failed" });
    }
  });

  it("a credential the auth service refuses is 500 server_error: the server's fault, shown without internals", async () => {
    const res = await clientCredentials(await gatewayWith(`${OTHER},${NEW}`));
    expect(res.status).toBe(500);
    expect(res.headers.get("www-authenticate")).toBeNull();
    const text = await res.text();
    expect(JSON.parse(text)).toEqual({ error: "server_error", error_description: expect.any(String) });
    expect(text).not.toMatch(/credential|unauthenticated/i);
  });
});

describe("the gateway's answer to each failure", () => {
  const oauthDetail = (error: string, code: Code) =>
    new ConnectError("refused", code, undefined, [
      { desc: OAuthErrorSchema, value: { error, errorDescription: `${error} here` } },
    ]);

  it("invalid_client and invalid_token details are 401 with WWW-Authenticate", () => {
    const client = oauthErrorFrom(oauthDetail("invalid_client", Code.PermissionDenied))!;
    expect([client.status, client.error]).toEqual([401, "invalid_client"]);
    expect(client.headers["www-authenticate"]).toMatch(/^Basic /);
    const token = oauthErrorFrom(oauthDetail("invalid_token", Code.PermissionDenied))!;
    expect([token.status, token.error, token.description]).toEqual([401, "invalid_token", "invalid_token here"]);
    expect(token.headers["www-authenticate"]).toMatch(/^Bearer .*error="invalid_token"/);
    const grant = oauthErrorFrom(oauthDetail("invalid_grant", Code.InvalidArgument))!;
    expect([grant.status, grant.error]).toEqual([400, "invalid_grant"]);
  });

  it("PERMISSION_DENIED is 403, UNAUTHENTICATED alone is 500 without its message", () => {
    const denied = fromConnectError(new ConnectError("email or password is wrong", Code.PermissionDenied));
    expect([denied.status, denied.error, denied.description]).toEqual([403, "forbidden", "email or password is wrong"]);
    const refused = oauthErrorFrom(new ConnectError("internal credential missing or wrong", Code.Unauthenticated))!;
    expect([refused.status, refused.error]).toEqual([500, "server_error"]);
    expect(refused.description).not.toMatch(/credential/);
  });
});
