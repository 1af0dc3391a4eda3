// Client ID Metadata Documents that cannot be used: each one is an error page
// naming what was wrong (invalid_request, never a redirect to a redirect URI
// the document was to vouch for), and leaves no client behind. The private
// address case runs with insecure redirects off and a fake DNS server
// answering 127.0.0.1: refused when the connection is made.
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AuthService } from "../../gen/bizcard/auth/v1/auth_pb.js";
import { TestDnsServer } from "../support/dns-server.js";
import { createAuthApp, startPlatform, type Platform } from "../support/platform.js";
import { pkcePair } from "../support/page-platform.js";
import { rpcError } from "../support/rpc.js";
import { startDocumentServer, type DocumentAnswer, type DocumentServer } from "../support/metadata-documents.js";

const REDIRECT_URI = "http://127.0.0.1:9876/callback";
const TIMEOUT_MS = 1000;

let platform: Platform;
let documents: DocumentServer;
let challenge: string;

const documentFor = (url: string, extra: Record<string, unknown> = {}) => ({
  client_id: url,
  client_name: "Refused Agent",
  redirect_uris: [REDIRECT_URI],
  ...extra,
});

beforeAll(async () => {
  documents = await startDocumentServer();
  ({ challenge } = await pkcePair());
  platform = await startPlatform({
    token: "r".repeat(40),
    config: { OAUTH_ALLOW_INSECURE_REDIRECTS: "true", OAUTH_CLIENT_METADATA_TIMEOUT_MS: String(TIMEOUT_MS) },
    auth: true,
    gateway: { publicUrlPort: true },
  });
}, 60_000);

afterAll(async () => {
  await platform?.stop();
  await documents?.close();
});

const authorizeUrl = (clientId: string, redirectUri = REDIRECT_URI) =>
  `/oauth/authorize?${new URLSearchParams({
    response_type: "code",
    client_id: clientId,
    redirect_uri: redirectUri,
    state: "s",
    code_challenge: challenge,
    code_challenge_method: "S256",
  }).toString()}`;

/** The authorization request for `clientId` at `base`: a 400 page, no redirect; its text (HTML escapes undone). */
async function refusedPage(clientId: string, base = platform.base, redirectUri = REDIRECT_URI): Promise<string> {
  const res = await fetch(`${base}${authorizeUrl(clientId, redirectUri)}`, { redirect: "manual" });
  expect(res.status).toBe(400);
  expect(res.headers.get("location")).toBeNull();
  expect(res.headers.get("content-type")).toMatch(/^text\/html/);
  return (await res.text())
    .replace(/&#39;|&#x27;/g, "'")
    .replace(/&quot;/g, '"')
    .replace(/&amp;/g, "&");
}

/** The document at `path` answers `answer`; the request is refused with `expected`, and no client is left. */
async function expectRefused(path: string, answer: (url: string) => DocumentAnswer, expected: RegExp): Promise<void> {
  const doc = documents.serve(path, answer);
  const page = await refusedPage(doc.url);
  expect(page).toContain(`the client's metadata document at ${doc.url}`);
  expect(page).toMatch(expected);
  expect(doc.fetches()).toBe(1);
  const err = await rpcError(platform.auth.client(AuthService).getClient({ clientId: doc.url }));
  expect(err.code).toBe(Code.NotFound);
}

describe("refused documents: an error page saying what was wrong, never a redirect", () => {
  it("a document whose client_id differs from its URL", async () => {
    await expectRefused(
      "/differs.json",
      (url) => ({ body: documentFor(`${url}/other`) }),
      /its client_id differs from its URL/,
    );
  });

  it("an authorization request whose redirect_uri the document does not list", async () => {
    const doc = documents.serve("/listed.json", (url) => ({ body: documentFor(url) }));
    const page = await refusedPage(doc.url, platform.base, "http://127.0.0.1:9876/elsewhere");
    expect(page).toContain(
      `the client's metadata document at ${doc.url} does not list this redirect_uri among its redirect_uris`,
    );
  });

  it("a redirect (3xx) is not followed", async () => {
    const target = documents.serve("/target.json", (url) => ({ body: documentFor(url) }));
    await expectRefused(
      "/moved.json",
      () => ({ status: 302, headers: { location: target.url } }),
      /was redirected \(HTTP 302\): the metadata document must be served without redirects/,
    );
    expect(target.fetches()).toBe(0);
  });

  it("an oversized document, with Content-Length or streamed without one", async () => {
    const big = (url: string) => documentFor(url, { client_name: "x".repeat(6000) });
    await expectRefused("/big.json", (url) => ({ body: big(url) }), /is larger than 5 KiB/);
    await expectRefused("/big-chunked.json", (url) => ({ body: big(url), chunked: 1024 }), /is larger than 5 KiB/);
  });

  it("a slow document: the fetch ends at the timeout", async () => {
    const started = Date.now();
    await expectRefused(
      "/slow.json",
      (url) => ({ body: documentFor(url), delayMs: TIMEOUT_MS + 1500 }),
      /did not answer within 1 s/,
    );
    expect(Date.now() - started).toBeLessThan(TIMEOUT_MS + 1400);
  });

  it("a slow document within a shorter call deadline: the fetch ends before the gateway's RPC timeout, and the page says so", async () => {
    const doc = documents.serve("/slow-deadline.json", (url) => ({ body: documentFor(url), delayMs: 4000 }));
    const auth = await platform.startService(
      createAuthApp,
      platform.gatewayConfig({ OAUTH_CLIENT_METADATA_TIMEOUT_MS: "5000" }),
    );
    const gateway = await platform.addGateway({ config: { AUTH_RPC_URL: auth.server.url, RPC_TIMEOUT_MS: "2000" } });
    try {
      const started = Date.now();
      const page = await refusedPage(doc.url, gateway.base);
      expect(page).toMatch(/the client's metadata document at \S+ did not answer within 1\.\d s/);
      expect(Date.now() - started).toBeLessThan(2000);
    } finally {
      await gateway.close();
      await auth.stop();
    }
  });

  it("invalid JSON, JSON that is not an object, and a type that is not JSON", async () => {
    await expectRefused("/invalid.json", () => ({ body: '{"client_id": ' }), /is not valid JSON/);
    await expectRefused("/array.json", (url) => ({ body: [url] }), /is not a JSON object/);
    await expectRefused(
      "/html.json",
      (url) => ({ body: documentFor(url), headers: { "content-type": "text/html" } }),
      /is not served as JSON \(Content-Type "text\/html"\)/,
    );
  });

  it("JSON a request body to the gateway could not carry either: a member twice, an unpaired surrogate or U+0000, bytes that are not UTF-8", async () => {
    // The document as text, `members` written in by hand (JSON.stringify cannot write them).
    const text = (url: string, members: string) =>
      `{"client_id":${JSON.stringify(url)},"redirect_uris":${JSON.stringify([REDIRECT_URI])},${members}}`;
    await expectRefused(
      "/twice.json",
      (url) => ({ body: text(url, '"client_name":"a","client_name":"b"') }),
      /cannot be used: it has the member "client_name" more than once/,
    );
    await expectRefused(
      "/surrogate.json",
      (url) => ({ body: text(url, '"client_name":"\\ud800"') }),
      /cannot be used: its member "client_name" must not contain an unpaired surrogate, which is not Unicode text/,
    );
    // Members this server does not read are held to the same rule.
    await expectRefused(
      "/low-surrogate.json",
      (url) => ({ body: text(url, '"logo_uri":"x\\udc00"') }),
      /its member "logo_uri" must not contain an unpaired surrogate/,
    );
    await expectRefused(
      "/nul.json",
      (url) => ({ body: text(url, '"contacts":["a\\u0000b"]') }),
      /its member "contacts" must not contain control characters \(U\+0000\)/,
    );
    // Bytes: Latin-1 "é", and a surrogate's own three bytes (not UTF-8), never read as U+FFFD.
    await expectRefused(
      "/latin1.json",
      (url) => ({ body: Buffer.from(text(url, '"client_name":"Caf\u00e9"'), "latin1") }),
      /is not valid UTF-8/,
    );
    await expectRefused(
      "/surrogate-bytes.json",
      (url) => ({ body: Buffer.from(text(url, '"client_name":"X"').replace("X", "\u00ed\u00a0\u0080"), "latin1") }),
      /is not valid UTF-8/,
    );
  });

  it("an answer other than 200", async () => {
    await expectRefused("/gone.json", () => ({ status: 404, body: {} }), /could not be fetched: it answered HTTP 404/);
  });

  it("a shared-secret authentication method, a client_secret, or client_credentials", async () => {
    await expectRefused(
      "/basic.json",
      (url) => ({ body: documentFor(url, { token_endpoint_auth_method: "client_secret_basic" }) }),
      /its token_endpoint_auth_method is "client_secret_basic"; only none is accepted/,
    );
    await expectRefused(
      "/secret.json",
      (url) => ({ body: documentFor(url, { client_secret: "s3cret" }) }),
      /must not carry a client_secret/,
    );
    await expectRefused(
      "/cc.json",
      (url) => ({ body: documentFor(url, { grant_types: ["client_credentials"] }) }),
      /its grant_types are not acceptable: client_credentials is only for confidential clients/,
    );
  });

  it("redirect_uris missing, or one a registration would refuse", async () => {
    await expectRefused(
      "/no-uris.json",
      (url) => ({ body: { client_id: url } }),
      /its redirect_uris must be a non-empty list of strings/,
    );
    await expectRefused(
      "/fragment.json",
      (url) => ({ body: documentFor(url, { redirect_uris: ["https://agent.example/cb#frag"] }) }),
      /its redirect_uri "https:\/\/agent.example\/cb#frag" is not acceptable: must not contain a fragment/,
    );
  });

  it("client_id URLs the draft forbids: a query, a fragment, dot segments, credentials, no path", async () => {
    const base = documents.base;
    for (const [clientId, why] of [
      [`${base}/client.json?v=1`, /must not contain a query/],
      [`${base}/client.json#x`, /must not contain a fragment/],
      [`${base}/a/../client.json`, /must not contain \. or \.\. path segments/],
      [`${base.replace("://", "://user:pw@")}/client.json`, /must not contain a user name or password/],
      [`${base}/`, /must have a path/],
      ["http://agent.example/client.json", /a client_id URL must use https/],
    ] as const) {
      expect(await refusedPage(clientId)).toMatch(why);
    }
  });
});

describe("a private address: refused when the connection is made (insecure redirects off)", () => {
  let dns: TestDnsServer;

  beforeAll(async () => {
    dns = await TestDnsServer.start({ "agent.cimd.test": { A: ["127.0.0.1"] } });
  });
  afterAll(async () => {
    await dns?.close();
  });

  it("an https URL whose name resolves to 127.0.0.1", async () => {
    const auth = await platform.startService(
      createAuthApp,
      platform.gatewayConfig({ OAUTH_ALLOW_INSECURE_REDIRECTS: "false", WEBHOOK_DNS_SERVERS: dns.address }),
    );
    const gateway = await platform.addGateway({ config: { AUTH_RPC_URL: auth.server.url } });
    try {
      const page = await refusedPage("https://agent.cimd.test/client.json", gateway.base);
      expect(page).toContain(
        "the client's metadata document at https://agent.cimd.test/client.json resolves to a private address",
      );
      expect(page).toMatch(/127\.0\.0\.1 is a loopback address/);
      expect(dns.asked).toContain("agent.cimd.test/A");
      // And a literal address, which no lookup sees.
      expect(await refusedPage("https://127.0.0.1/client.json", gateway.base)).toMatch(
        /resolves to a private address.*127\.0\.0\.1 is a loopback address/s,
      );
      // http is refused outright.
      expect(await refusedPage("http://127.0.0.1/client.json", gateway.base)).toMatch(/a client_id URL must use https/);
    } finally {
      await gateway.close();
      await auth.stop();
    }
  });

  it("a localhost name, refused without a DNS query (RFC 6761 §6.3)", async () => {
    const auth = await platform.startService(
      createAuthApp,
      platform.gatewayConfig({ OAUTH_ALLOW_INSECURE_REDIRECTS: "false", WEBHOOK_DNS_SERVERS: dns.address }),
    );
    const gateway = await platform.addGateway({ config: { AUTH_RPC_URL: auth.server.url } });
    try {
      const asked = dns.asked.length;
      for (const [clientId, host] of [
        ["https://localhost/client.json", "localhost"],
        ["https://foo.localhost/client.json", "foo.localhost"],
        ["https://localhost./client.json", "localhost."],
        ["https://a.b.localhost./client.json", "a.b.localhost."],
      ] as const) {
        const page = await refusedPage(clientId, gateway.base);
        expect(page).toContain(
          `the client's metadata document at ${clientId} resolves to a private address, which is refused (${host} is a loopback name)`,
        );
      }
      // Upper case is not the normal form: refused before any fetch.
      expect(await refusedPage("https://LOCALHOST./client.json", gateway.base)).toMatch(
        /not in its normal form \(https:\/\/localhost\.\/client\.json\)/,
      );
      expect(dns.asked.slice(asked)).toEqual([]);
      // The same service asks this DNS server about other names.
      await refusedPage("https://agent.cimd.test/other.json", gateway.base);
      expect(dns.asked.slice(asked)).toContain("agent.cimd.test/A");
      const err = await rpcError(auth.client(AuthService).getClient({ clientId: "https://localhost/client.json" }));
      expect(err.code).toBe(Code.NotFound);
    } finally {
      await gateway.close();
      await auth.stop();
    }
  });
});
