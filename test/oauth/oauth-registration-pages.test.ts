// The pages for applications the operator did not register: the consent
// page of a self-registered client (RFC 7591) and of a metadata document
// client says it is not registered here and names the host the answer goes
// to; the connected-applications page marks them "self-registered". An
// operator's client's pages stay as they were.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ClientEntity } from "../../services/auth/clients/client.entity.js";
import { pkce, toConsentPage } from "../support/browser-authorization.js";
import { startPlatform, type Platform } from "../support/platform.js";

const MEMBER = { email: "owner@register-pages.test", password: "correct horse battery" };
const DOCUMENT_CLIENT = "https://agent.example/oauth/client.json";

let platform: Platform;
let base: string;
let dynamicId: string;
let operatorId: string;

/** A consent page for the client, PKCE included, up to the page. */
function consentFor(clientId: string, redirectUri: string) {
  const { challenge } = pkce();
  return toConsentPage(
    base,
    {
      client_id: clientId,
      redirect_uri: redirectUri,
      state: "s",
      code_challenge: challenge,
      code_challenge_method: "S256",
    },
    MEMBER,
  );
}

/** The page's visible text, tags dropped and whitespace folded. */
const textOf = (html: string) =>
  html
    .replace(/<[^>]+>/g, " ")
    .replace(/&#39;/g, "'")
    .replace(/\s+/g, " ");

beforeAll(async () => {
  platform = await startPlatform({
    auth: true,
    config: { OAUTH_DYNAMIC_REGISTRATION: "true" },
    gateway: { publicUrlPort: true },
    member: { organisation: "Pages Register Org", ...MEMBER },
  });
  base = platform.base;
  const res = await fetch(`${base}/oauth/register`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      client_name: "Claimed Agent",
      redirect_uris: ["http://localhost:47011/callback"],
      token_endpoint_auth_method: "none",
    }),
  });
  expect(res.status).toBe(201);
  dynamicId = ((await res.json()) as { client_id: string }).client_id;
  operatorId = (await platform.createClient("Operator App", ["https://operator.example/cb"])).clientId;
  // A metadata document client as the auth service keeps one once fetched (fresh, so not fetched again).
  const em = platform.auth.app.orm.em.fork();
  em.create(ClientEntity, {
    id: DOCUMENT_CLIENT,
    name: "Document Agent",
    redirectUris: ["https://agent.example/cb"],
    scopes: ["organisation:read", "contacts:read"],
    public: true,
    ownerOrganisationId: null,
    secretHash: null,
    grantTypes: ["authorization_code", "refresh_token"],
    createdAt: new Date(),
    registration: "metadata_document",
    clientUri: null,
    applicationType: "web",
    tokenEndpointAuthMethod: "none",
    metadataFetchedAt: new Date(),
    metadataExpiresAt: new Date(Date.now() + 3600_000),
  });
  await em.flush();
}, 60_000);

afterAll(async () => {
  await platform?.stop();
});

describe("the consent page", () => {
  it("of a self-registered client says it registered itself, and names the host the answer goes to", async () => {
    const { consentHtml } = await consentFor(dynamicId, "http://localhost:47011/callback");
    const text = textOf(consentHtml);
    expect(text).toMatch(/Claimed Agent wants to access Pages Register Org\s*, your bizcard organisation/);
    expect(text).toContain(
      "This application registered itself; it is not registered with your organisation: bizcard knows only what it says of itself.",
    );
    expect(text).toContain("If you allow, the code that grants access is sent to localhost:47011");
    expect(consentHtml).toContain('<div class="caution" role="note">');
  });

  it("of a metadata document client names the URL that identifies it", async () => {
    const { consentHtml } = await consentFor(DOCUMENT_CLIENT, "https://agent.example/cb");
    const text = textOf(consentHtml);
    expect(text).toContain(
      `This application is identified by ${DOCUMENT_CLIENT} ; it is not registered with your organisation: bizcard knows only what it says of itself.`,
    );
    expect(text).toContain("If you allow, the code that grants access is sent to agent.example");
  });

  it("of an operator's client has no such caution", async () => {
    const { consentHtml } = await consentFor(operatorId, "https://operator.example/cb");
    expect(consentHtml).toContain("Operator App");
    expect(consentHtml).not.toContain("caution");
    expect(consentHtml).not.toContain("not registered");
  });
});

describe("the connected-applications page", () => {
  it("marks self-registered and metadata document applications, not the operator's", async () => {
    let cookie = "";
    for (const [clientId, redirect] of [
      [dynamicId, "http://localhost:47011/callback"],
      [DOCUMENT_CLIENT, "https://agent.example/cb"],
      [operatorId, "https://operator.example/cb"],
    ] as const) {
      const run = await consentFor(clientId, redirect);
      expect((await run.decide("allow")).status).toBe(303);
      cookie = run.cookie;
    }
    const res = await fetch(`${base}/account/applications`, { headers: { cookie } });
    expect(res.status).toBe(200);
    const html = await res.text();
    const rows = [...html.matchAll(/<th scope="row" class="app-name">(.*?)<\/th>/g)].map((m) => m[1]!);
    expect(rows).toHaveLength(3);
    const row = (name: string) => rows.find((r) => r.startsWith(name))!;
    expect(row("Claimed Agent")).toContain(
      '<span class="badge" title="Not registered with this bizcard service">self-registered</span>',
    );
    expect(row("Document Agent")).toContain(
      `title="Not registered with this bizcard service; identified by ${DOCUMENT_CLIENT}">self-registered</span>`,
    );
    expect(row("Operator App")).toBe("Operator App");
  });
});
