// A self-registered client's token_endpoint_auth_method (RFC 7591 §2) is the
// one way it authenticates: at the token endpoint, at revocation and at
// introspection, a client registered with client_secret_basic that sends its
// secret in the body (or the reverse) is 401 invalid_client, the description
// naming the registered method; the registered way works. An operator's
// client (no registered method) keeps accepting both, with every grant.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AuthService } from "../../gen/bizcard/auth/v1/auth_pb.js";
import { expectError } from "../support/api-client.js";
import { startPlatform, type Platform } from "../support/platform.js";

const REDIRECT = "http://127.0.0.1:41234/callback";

let platform: Platform;
let base: string;
type Registered = { id: string; secret: string };
let basicClient: Registered;
let postClient: Registered;
let operatorClient: Registered;

async function registerWith(method: string): Promise<Registered> {
  const res = await fetch(`${base}/oauth/register`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      client_name: `Agent ${method}`,
      redirect_uris: [REDIRECT],
      token_endpoint_auth_method: method,
    }),
  });
  const body = (await res.json()) as { client_id: string; client_secret: string; token_endpoint_auth_method: string };
  expect(res.status, JSON.stringify(body)).toBe(201);
  expect(body.token_endpoint_auth_method).toBe(method);
  return { id: body.client_id, secret: body.client_secret };
}

beforeAll(async () => {
  platform = await startPlatform({
    auth: true,
    webhook: false,
    delivery: false,
    config: { OAUTH_DYNAMIC_REGISTRATION: "true" },
    gateway: { publicUrlPort: true },
    member: { organisation: "Method Cards", email: "owner@method.test", password: "correct horse battery" },
  });
  base = platform.base;
  basicClient = await registerWith("client_secret_basic");
  postClient = await registerWith("client_secret_post");
  const res = await platform.auth
    .client(AuthService)
    .createClient({ name: "Operator's", ownerOrganisationId: platform.organisationId, scopes: [] });
  operatorClient = { id: res.client!.clientId, secret: res.clientSecret };
}, 60_000);

afterAll(async () => {
  await platform?.stop();
});

const basic = (c: Registered) =>
  `Basic ${Buffer.from(`${encodeURIComponent(c.id)}:${encodeURIComponent(c.secret)}`).toString("base64")}`;

/** A form POST to `path`, the client's secret sent "basic" (Authorization) or "post" (in the body). */
function send(
  path: string,
  client: Registered,
  how: "basic" | "post",
  fields: Record<string, string>,
): Promise<Response> {
  const form = new URLSearchParams(fields);
  const headers: Record<string, string> = { "content-type": "application/x-www-form-urlencoded" };
  if (how === "basic") headers.authorization = basic(client);
  else {
    form.set("client_id", client.id);
    form.set("client_secret", client.secret);
  }
  return fetch(`${base}${path}`, { method: "POST", headers, body: form });
}

const CODE = {
  grant_type: "authorization_code",
  code: "not-a-code",
  redirect_uri: REDIRECT,
  code_verifier: "v".repeat(43),
};

const ENDPOINTS: [string, Record<string, string>][] = [
  ["/oauth/token", CODE],
  ["/oauth/revoke", { token: "not-a-token" }],
  ["/oauth/introspect", { token: "not-a-token" }],
];

describe("a registered method is the only one", () => {
  it("client_secret_basic: the secret in the body is invalid_client naming the method, at every endpoint", async () => {
    for (const [path, fields] of ENDPOINTS) {
      const res = await send(path, basicClient, "post", fields);
      await expectError(
        res,
        401,
        "invalid_client",
        "client authentication failed: this client is registered with token_endpoint_auth_method client_secret_basic; send the secret with HTTP Basic (the Authorization header), not in the body",
      );
    }
  });

  it("client_secret_post: the secret with HTTP Basic is invalid_client naming the method, at every endpoint", async () => {
    for (const [path, fields] of ENDPOINTS) {
      const res = await send(path, postClient, "basic", fields);
      expect(res.headers.get("www-authenticate"), path).toMatch(/^Basic /);
      await expectError(
        res,
        401,
        "invalid_client",
        "client authentication failed: this client is registered with token_endpoint_auth_method client_secret_post; send the secret in the body (client_secret), not with HTTP Basic",
      );
    }
  });

  it("the registered way authenticates: the token endpoint goes on to the grant, revocation and introspection answer", async () => {
    for (const [client, how] of [
      [basicClient, "basic"],
      [postClient, "post"],
    ] as const) {
      await expectError(await send("/oauth/token", client, how, CODE), 400, "invalid_grant");
      const revoked = await send("/oauth/revoke", client, how, { token: "not-a-token" });
      expect(revoked.status).toBe(200);
      await revoked.arrayBuffer();
      const introspected = await send("/oauth/introspect", client, how, { token: "not-a-token" });
      expect(introspected.status).toBe(200);
      expect(await introspected.json()).toEqual({ active: false });
    }
  });

  it("the wrong way is refused with client_credentials too", async () => {
    const res = await send("/oauth/token", basicClient, "post", { grant_type: "client_credentials" });
    await expectError(res, 401, "invalid_client", /registered with token_endpoint_auth_method client_secret_basic/);
  });
});

describe("an operator's client (no registered method)", () => {
  it("authenticates either way, at the token endpoint, revocation and introspection", async () => {
    for (const how of ["basic", "post"] as const) {
      const res = await send("/oauth/token", operatorClient, how, { grant_type: "client_credentials" });
      const body = (await res.json()) as { access_token: string };
      expect(res.status, JSON.stringify(body)).toBe(200);
      const introspected = await send("/oauth/introspect", operatorClient, how, { token: body.access_token });
      expect(((await introspected.json()) as { active: boolean }).active).toBe(true);
      const revoked = await send("/oauth/revoke", operatorClient, how, { token: body.access_token });
      expect(revoked.status).toBe(200);
      await revoked.arrayBuffer();
    }
  });
});
