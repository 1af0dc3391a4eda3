// The README's loopback catcher (examples/catch-code.ts) run as a person runs
// it in the authorization-code walk: it prints the authorization URL, the
// person signs in and allows, the browser follows the redirect to the catcher,
// which answers the tab and prints the code; a strict client (oauth4webapi)
// exchanges that code with the PKCE verifier. A wrong state prints no code.
import path from "node:path";
import * as oauth from "oauth4webapi";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MEMBER, walkConsent } from "../support/mcp-agent.js";
import { startPlatform, type Platform } from "../support/platform.js";
import { freePort, ROOT, spawnTs, waitFor, type Spawned } from "../support/processes.js";

const insecure = { [oauth.allowInsecureRequests]: true } as const;
let platform: Platform;
let client: { clientId: string; clientSecret: string };
let redirectUri: string;
let script: Spawned | undefined;

beforeAll(async () => {
  platform = await startPlatform({ auth: true, gateway: { publicUrlPort: true }, member: MEMBER });
  redirectUri = `http://127.0.0.1:${await freePort()}/callback`;
  client = await platform.createClient("Walk", [redirectUri]);
}, 60_000);

afterAll(async () => {
  await script?.kill();
  await platform?.stop();
});

function authorizationUrl(challenge: string, state: string): URL {
  const url = new URL(`${platform.base}/oauth/authorize`);
  url.search = new URLSearchParams({
    response_type: "code",
    client_id: client.clientId,
    redirect_uri: redirectUri,
    scope: "organisation:read contacts:read",
    state,
    code_challenge: challenge,
    code_challenge_method: "S256",
  }).toString();
  return url;
}

/** Runs the catcher on `url` and returns the URL it asked the person to open. */
async function catcher(url: URL): Promise<URL> {
  script = spawnTs(path.join(ROOT, "examples/catch-code.ts"), {}, [url.href]);
  const printed = await waitFor(
    () => {
      if (script!.child.exitCode !== null) throw new Error(`the catcher exited:\n${script!.output()}`);
      return /Open this URL in a browser, sign in and allow:\n(\S+)/.exec(script!.output())?.[1];
    },
    30_000,
    "the authorization URL",
  );
  return new URL(printed);
}

describe("examples/catch-code.ts", () => {
  it("prints the code the browser brings back, which the client exchanges for tokens", async () => {
    const verifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const asked = await catcher(authorizationUrl(await oauth.calculatePKCECodeChallenge(verifier), state));
    expect(asked.searchParams.get("client_id")).toBe(client.clientId);

    const callback = await walkConsent(asked, MEMBER);
    const landed = await fetch(callback);
    expect(landed.status).toBe(200);
    expect(await landed.text()).toContain("Authorized");
    expect(await script!.exited).toBe(0);
    const code = script!.output().trim().split("\n").at(-1)!;
    expect(code).toBe(callback.searchParams.get("code"));

    const as = await oauth.processDiscoveryResponse(
      new URL(platform.base),
      await oauth.discoveryRequest(new URL(platform.base), { algorithm: "oauth2", ...insecure }),
    );
    const c: oauth.Client = { client_id: client.clientId };
    const params = oauth.validateAuthResponse(as, c, callback, state);
    const tokens = await oauth.processAuthorizationCodeResponse(
      as,
      c,
      await oauth.authorizationCodeGrantRequest(
        as,
        c,
        oauth.ClientSecretBasic(client.clientSecret),
        params,
        redirectUri,
        verifier,
        insecure,
      ),
    );
    expect(tokens.token_type).toBe("bearer");
    expect(tokens.scope).toBe("organisation:read contacts:read");
    const me = await fetch(`${platform.base}/oauth/me`, {
      headers: { authorization: `Bearer ${tokens.access_token}` },
    });
    expect(await me.json()).toEqual({ id: platform.organisationId, name: MEMBER.organisation });
  }, 60_000);

  it("prints no code when the state that comes back is not the one sent", async () => {
    const asked = await catcher(authorizationUrl(await oauth.calculatePKCECodeChallenge("v".repeat(43)), "sent"));
    const callback = await walkConsent(asked, MEMBER);
    callback.searchParams.set("state", "forged");
    const landed = await fetch(callback);
    expect(landed.status).toBe(400);
    expect(await landed.text()).toContain("the state does not match");
    expect(await script!.exited).toBe(1);
    expect(script!.output()).not.toContain(callback.searchParams.get("code")!);
  }, 60_000);
});
