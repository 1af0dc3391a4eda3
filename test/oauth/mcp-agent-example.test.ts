// The README's example agent (examples/mcp-agent.ts) run as a person runs it,
// against a platform with dynamic registration on: it prints the
// authorization URL; the person opens it, signs in and allows (over HTTP,
// without JavaScript), and the browser follows the 303 to the script's
// loopback callback; the script then prints the tools and the organisation's
// contacts.
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { MEMBER, startAgentPlatform, walkConsent } from "../support/mcp-agent.js";
import type { Platform } from "../support/platform.js";
import { ROOT, spawnTs, waitFor, type Spawned } from "../support/processes.js";

let platform: Platform;
let script: Spawned | undefined;

beforeAll(async () => {
  platform = await startAgentPlatform({ OAUTH_DYNAMIC_REGISTRATION: "true" });
}, 60_000);

afterAll(async () => {
  await script?.kill();
  await platform?.stop();
});

it("examples/mcp-agent.ts registers, has the person consent, and prints the tools and the organisation's contacts", async () => {
  script = spawnTs(path.join(ROOT, "examples/mcp-agent.ts"), {}, [`${platform.base}/mcp`]);
  const printed = await waitFor(
    () => {
      if (script!.child.exitCode !== null) throw new Error(`the script exited:\n${script!.output()}`);
      return /Open this URL to authorize the agent:\n(\S+)/.exec(script!.output())?.[1];
    },
    30_000,
    "the authorization URL",
  );
  const authorizationUrl = new URL(printed);
  expect(`${authorizationUrl.origin}${authorizationUrl.pathname}`).toBe(`${platform.base}/oauth/authorize`);
  expect(authorizationUrl.searchParams.get("resource")).toBe(`${platform.base}/mcp`);

  // The person: consent, then the browser follows the redirect to the script's callback.
  const callback = await walkConsent(authorizationUrl, MEMBER);
  expect(callback.href).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/callback\?/);
  const landed = await fetch(callback);
  expect(landed.status).toBe(200);
  expect(await landed.text()).toContain("Authorized");

  const code = await script.exited;
  const output = script.output();
  expect(code, output).toBe(0);
  expect(output).toMatch(/Tools: .*list_contacts/);
  expect(output).toContain("Lovelace");
  expect(output).toContain("Hopper");
  expect(output).not.toContain("Outsider");
}, 90_000);
