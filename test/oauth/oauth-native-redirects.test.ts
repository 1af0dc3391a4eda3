// Redirect URIs of native apps (RFC 8252) and the authorization response's
// own parameters, as a client sees them: registration (CreateClient and
// `bizcard client create`) and GET /oauth/authorize behind the gateway.
// - §7.3: a public client's loopback IP redirect URI matches at any port;
//   only the port may differ, and never for a confidential client.
// - §7.1: a private-use scheme is a reverse domain name (with a period), for
//   public clients only.
// - A redirect URI whose query carries code, state, iss or error is refused.
import { createHash, randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AuthService } from "../../gen/bizcard/auth/v1/auth_pb.js";
import { startPlatform, type Platform } from "../support/platform.js";
import { spawnProcess } from "../support/processes.js";

const TOKEN = "n".repeat(40);

let platform: Platform;
let url: string;
let orgId: string;

beforeAll(async () => {
  platform = await startPlatform({
    token: TOKEN,
    auth: true,
    gateway: true,
    member: { organisation: "Native Cards", email: "ada@native.test", password: "correct horse battery" },
  });
  url = platform.base;
  orgId = platform.organisationId;
});

afterAll(async () => {
  await platform?.stop();
});

const register = (redirectUris: string[], options: { public?: boolean; owned?: boolean } = {}) =>
  platform.auth.client(AuthService).createClient({
    name: "Native",
    redirectUris,
    public: options.public ?? false,
    ownerOrganisationId: options.owned ? orgId : "",
    scopes: ["organisation:read"],
  });

/** The refusal's message (InvalidArgument), or "" when the registration was accepted. */
async function refusal(redirectUris: string[], options: { public?: boolean; owned?: boolean } = {}): Promise<string> {
  try {
    await register(redirectUris, options);
    return "";
  } catch (err) {
    const e = err as { code?: number; rawMessage?: string };
    expect(e.code, String(err)).toBe(3); // InvalidArgument
    return e.rawMessage ?? "";
  }
}

/** GET /oauth/authorize as a browser sends it (with PKCE), not following the redirect. */
async function authorize(
  clientId: string,
  redirectUri: string,
): Promise<{ status: number; location: string | null; text: string }> {
  const verifier = randomBytes(32).toString("base64url");
  const query = new URLSearchParams({
    response_type: "code",
    client_id: clientId,
    redirect_uri: redirectUri,
    scope: "organisation:read",
    state: "s1",
    code_challenge: createHash("sha256").update(verifier).digest("base64url"),
    code_challenge_method: "S256",
  });
  const res = await fetch(`${url}/oauth/authorize?${query}`, { redirect: "manual" });
  return { status: res.status, location: res.headers.get("location"), text: await res.text() };
}

const accepted = (a: { status: number; location: string | null }) =>
  a.status === 303 && (a.location ?? "").startsWith("/oauth/interaction/");

describe("RFC 8252 §7.3: loopback IP redirect URIs of public clients match at any port", () => {
  it("accepts another port (or none) for 127.0.0.1 and [::1], and nothing else that differs", async () => {
    const app = (await register(["http://127.0.0.1/cb", "http://[::1]:8400/oauth/cb?app=1"], { public: true })).client!;
    for (const sent of [
      "http://127.0.0.1:51004/cb",
      "http://127.0.0.1:1/cb",
      "http://127.0.0.1/cb",
      "http://[::1]:61023/oauth/cb?app=1",
      "http://[::1]/oauth/cb?app=1",
    ]) {
      const a = await authorize(app.clientId, sent);
      expect(accepted(a), `${sent}: ${a.status} ${a.location} ${a.text.slice(0, 200)}`).toBe(true);
    }
    // Only the port: another path, query, host, scheme or an out-of-range port is not the registered URI.
    for (const sent of [
      "http://127.0.0.1:51004/cb2",
      "http://127.0.0.1:51004/cb?x=1",
      "http://127.0.0.2:51004/cb",
      "http://localhost:51004/cb",
      "https://127.0.0.1:51004/cb",
      "http://127.0.0.1:70000/cb",
      "http://[::1]:61023/oauth/cb?app=2",
      "http://[::1]:61023/oauth/cb",
    ]) {
      const a = await authorize(app.clientId, sent);
      expect(a.status, sent).toBe(400);
      expect(a.location, sent).toBeNull();
    }
  });

  it("an error redirect goes to the port the request named", async () => {
    const app = (await register(["http://127.0.0.1/cb"], { public: true })).client!;
    const a = await authorize(app.clientId, "http://127.0.0.1:49152/cb?x");
    // Another query is not the registered URI: refused on the page, never redirected.
    expect(a.status).toBe(400);
    // An error the client must hear of (here an unknown scope) goes to the port it listens on.
    const query = new URLSearchParams({
      response_type: "code",
      client_id: app.clientId,
      redirect_uri: "http://127.0.0.1:49152/cb",
      scope: "nope",
      state: "s2",
    });
    const res = await fetch(`${url}/oauth/authorize?${query}`, { redirect: "manual" });
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toMatch(/^http:\/\/127\.0\.0\.1:49152\/cb\?error=/);
  });

  it("a confidential client's loopback URI still matches exactly", async () => {
    const app = (await register(["http://127.0.0.1:8080/cb"])).client!;
    expect(accepted(await authorize(app.clientId, "http://127.0.0.1:8080/cb"))).toBe(true);
    const other = await authorize(app.clientId, "http://127.0.0.1:9090/cb");
    expect(other.status).toBe(400);
    expect(other.location).toBeNull();
  });
});

describe("registration", () => {
  it("refuses a redirect URI whose query carries code, state, iss or error", async () => {
    for (const name of ["code", "state", "iss", "error"]) {
      const message = await refusal([`https://app.native.test/cb?a=1&${name}=x`]);
      expect(message).toMatch(new RegExp(`^redirect_uri: .*${name}`));
      expect(await refusal([`http://127.0.0.1/cb?${name}=`], { public: true })).toMatch(/^redirect_uri: /);
    }
    // Other parameters are the client's own business.
    expect(await refusal(["https://app.native.test/cb?app=1&codes=2&error_page=3"])).toBe("");
  });

  it("RFC 8252 §7.1: a reverse-domain private-use scheme, for public clients only", async () => {
    expect(await refusal(["com.example.app:/oauth2redirect"], { public: true })).toBe("");
    expect(await refusal(["com.example.app:/cb"])).toMatch(/^redirect_uri: .*public clients only/);
    expect(await refusal(["com.example.app:/cb"], { owned: true })).toMatch(/^redirect_uri: .*public clients only/);
    for (const uri of ["myapp:/cb", "javascript:alert(1)", "data:text/html,x", "file:///etc/passwd"]) {
      expect(await refusal([uri], { public: true }), uri).toMatch(
        /^redirect_uri: must be an https URL, or a native app's reverse-domain scheme/,
      );
    }
    expect(await refusal(["com.example.app:/cb?state=1"], { public: true })).toMatch(/^redirect_uri: .*state/);
  });

  it("a public client with a private-use scheme gets to its interaction", async () => {
    const app = (await register(["com.example.app:/oauth2redirect"], { public: true })).client!;
    expect(accepted(await authorize(app.clientId, "com.example.app:/oauth2redirect"))).toBe(true);
  });

  it("bizcard client create refuses them too", { timeout: 60_000 }, async () => {
    const run = async (args: string[]) => {
      const p = spawnProcess(process.execPath, ["bin/bizcard.js", "client", "create", "--name", "CLI", ...args], {
        AUTH_RPC_URL: platform.auth.server.url,
        ORGANISATION_RPC_URL: platform.organisation.server.url,
        AUTH_RPC_PORT: undefined,
        ORGANISATION_RPC_PORT: undefined,
        DATA_DIR: undefined,
        INTERNAL_RPC_TOKEN: TOKEN,
      });
      let stderr = "";
      p.child.stderr!.on("data", (d) => (stderr += d));
      return { code: await p.exited, stderr };
    };
    const withState = await run(["--redirect-uri", "https://app.native.test/cb?state=1"]);
    expect(withState.code).not.toBe(0);
    expect(withState.stderr).toMatch(/redirect_uri: .*state/);
    const confidentialScheme = await run(["--redirect-uri", "com.example.app:/cb"]);
    expect(confidentialScheme.code).not.toBe(0);
    expect(confidentialScheme.stderr).toMatch(/redirect_uri: .*public clients only/);
    expect((await run(["--redirect-uri", "com.example.app:/cb", "--public"])).code).toBe(0);
  });
});
