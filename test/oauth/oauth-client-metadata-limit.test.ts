// The limit on Client ID Metadata Document fetches per address
// (OAUTH_CLIENT_METADATA_FETCH_LIMIT a minute): anyone can send authorization
// requests naming new https client_ids, each of which makes the auth service
// fetch a URL. Fetches count, kept copies do not; past the limit the browser
// gets a 429 page with Retry-After saying why (never a redirect), and the
// document is not fetched; another address has its own count.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startPlatform, type Platform } from "../support/platform.js";
import { startDocumentServer, type DocumentServer } from "../support/metadata-documents.js";

const REDIRECT_URI = "http://127.0.0.1:9876/callback";
const LIMIT = 3;

let platform: Platform;
let documents: DocumentServer;

beforeAll(async () => {
  documents = await startDocumentServer();
  platform = await startPlatform({
    config: { OAUTH_ALLOW_INSECURE_REDIRECTS: "true", OAUTH_CLIENT_METADATA_FETCH_LIMIT: String(LIMIT) },
    auth: true,
    webhook: false,
    delivery: false,
    gateway: { publicUrlPort: true },
  });
}, 60_000);

afterAll(async () => {
  await platform?.stop();
  await documents?.close();
});

const documentFor = (url: string) => ({
  client_id: url,
  client_name: "Agent",
  redirect_uris: [REDIRECT_URI],
  grant_types: ["authorization_code"],
  response_types: ["code"],
  token_endpoint_auth_method: "none",
});

/** A document served at /agents/<name>.json, kept for an hour once fetched. */
const serve = (name: string) =>
  documents.serve(`/agents/${name}.json`, (url) => ({
    body: documentFor(url),
    headers: { "cache-control": "max-age=3600" },
  }));

function authorize(base: string, clientId: string, headers: Record<string, string> = {}): Promise<Response> {
  const query = new URLSearchParams({
    response_type: "code",
    client_id: clientId,
    redirect_uri: REDIRECT_URI,
    scope: "organisation:read",
    state: "s",
    code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
    code_challenge_method: "S256",
  });
  return fetch(`${base}/oauth/authorize?${query}`, { redirect: "manual", headers });
}

describe("client metadata document fetches per address", () => {
  it("fetches count up to the limit, kept copies are free, then 429 with Retry-After, no redirect and no fetch", async () => {
    const docs = Array.from({ length: LIMIT }, (_, i) => serve(`agent-${i}`));
    for (const doc of docs) {
      const res = await authorize(platform.base, doc.url);
      expect(res.status, await res.text()).toBe(303);
      expect(doc.fetches()).toBe(1);
    }
    // Kept copies: no fetch, not counted.
    for (const doc of docs) {
      const again = await authorize(platform.base, doc.url);
      expect(again.status).toBe(303);
      await again.arrayBuffer();
      expect(doc.fetches()).toBe(1);
    }

    const one = serve("one-too-many");
    const refused = await authorize(platform.base, one.url);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(Number(refused.headers.get("retry-after"))).toBeLessThanOrEqual(60);
    expect(refused.headers.get("location")).toBeNull();
    expect(refused.headers.get("content-type")).toMatch(/^text\/html/);
    const page = await refused.text();
    expect(page).toContain("Too many requests");
    expect(page).toContain("client metadata document this server had to fetch");
    expect(one.fetches()).toBe(0);

    // A kept copy is still served to that address.
    const kept = await authorize(platform.base, docs[0]!.url);
    expect(kept.status).toBe(303);
    await kept.arrayBuffer();
  });

  it("another address has its own count", async () => {
    // A gateway behind a trusted proxy (loopback), so that X-Forwarded-For names the browser.
    const gateway = await platform.addGateway({ serviceUrls: {}, trustedProxies: ["127.0.0.1"] });
    const elsewhere = serve("from-elsewhere");
    const res = await authorize(gateway.base, elsewhere.url, { "x-forwarded-for": "198.51.100.20" });
    expect(res.status, await res.text()).toBe(303);
    expect(elsewhere.fetches()).toBe(1);
    const same = serve("from-here-again");
    const refused = await authorize(gateway.base, same.url, { "x-forwarded-for": "127.0.0.1" });
    expect(refused.status).toBe(429);
    await refused.arrayBuffer();
    expect(same.fetches()).toBe(0);
  });
});
