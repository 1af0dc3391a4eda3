// An AI agent as the MCP SDK's users write one, for the end-to-end suites: the
// SDK's Client and StreamableHTTPClientTransport, unmodified, with the
// OAuthClientProvider every agent brings (here kept in memory), a fetch that
// records what the agent asked, a person who walks the login and consent pages
// without JavaScript, and a loopback https host for a Client ID Metadata
// Document (a self-signed certificate the auth service is told to trust).
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import https from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { OAuthClientProvider } from "@modelcontextprotocol/sdk/client/auth.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from "@modelcontextprotocol/sdk/shared/auth.js";
import { expect } from "vitest";
import { OrganisationService } from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import { startPlatform, type Platform } from "./platform.js";
import { browser, formAction, hiddenFields } from "./html-forms.js";

/** The person who consents: the owner of the organisation whose contacts the agent reads. */
export const MEMBER = { organisation: "Agent Cards", email: "owner@agent.test", password: "correct horse battery" };

/**
 * The platform an agent connects to, its gateway where PUBLIC_URL says (the
 * issuer and the resource identifiers are the address used), with `config`:
 * contacts in MEMBER's organisation (Ada Lovelace, Grace Hopper) and in
 * another one (Mallory Outsider) that the agent must never see.
 */
export async function startAgentPlatform(config: Record<string, string>): Promise<Platform> {
  const platform = await startPlatform({
    auth: true,
    webhook: true,
    delivery: true,
    gateway: { publicUrlPort: true, bus: true },
    config,
    member: MEMBER,
  });
  // Contacts of the member's organisation, and of another one the agent must never see.
  const organisations = platform.organisation.client(OrganisationService);
  for (const [firstName, lastName] of [
    ["Ada", "Lovelace"],
    ["Grace", "Hopper"],
  ]) {
    await organisations.createContact({ organisationId: platform.organisationId, fields: { firstName, lastName } });
  }
  const other = await organisations.createOrganisation({
    name: "Other Cards",
    ownerEmail: "owner@other.test",
    ownerPassword: "another horse battery",
  });
  await organisations.createContact({
    organisationId: other.organisation!.id,
    fields: { firstName: "Mallory", lastName: "Outsider" },
  });
  return platform;
}

/** The agent's side of OAuth, in memory: what it registered, its tokens, the URL it was sent to. */
export class MemoryAuthProvider implements OAuthClientProvider {
  client?: OAuthClientInformationMixed;
  current?: OAuthTokens;
  /** Every token set the SDK saved, oldest first. */
  readonly saved: OAuthTokens[] = [];
  /** Every authorization URL the SDK asked the person to open. */
  readonly authorizationUrls: URL[] = [];
  private verifier = "";
  private readonly expectedState = randomBytes(16).toString("base64url");

  constructor(
    readonly redirectUrl: string,
    readonly clientMetadataUrl?: string,
  ) {}

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: "Test Agent",
      redirect_uris: [this.redirectUrl],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  }

  state(): string {
    return this.expectedState;
  }
  clientInformation() {
    return this.client;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.client = info;
  }
  tokens() {
    return this.current;
  }
  saveTokens(tokens: OAuthTokens) {
    this.current = tokens;
    this.saved.push(tokens);
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrls.push(url);
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }

  /** The code of the callback the person's browser reached, its state checked as an agent must. */
  codeFrom(callback: URL): string {
    expect(`${callback.origin}${callback.pathname}`).toBe(this.redirectUrl);
    expect(callback.searchParams.get("state")).toBe(this.expectedState);
    const code = callback.searchParams.get("code");
    if (!code) throw new Error(`no code in the callback ${callback.href}`);
    return code;
  }
}

export interface Observed {
  method: string;
  /** The path and query on the server asked. */
  path: string;
  status: number;
  /** The request's form or JSON body, for the token and registration requests. */
  body: string;
  /** The answer's WWW-Authenticate, if any. */
  challenge: string | null;
}

/** A fetch that records each request the agent made and its answer's status. */
export function recordingFetch(): { fetch: typeof fetch; requests: Observed[] } {
  const requests: Observed[] = [];
  const recording: typeof fetch = async (input, init) => {
    const request = new Request(input, init);
    const body = request.body ? await request.clone().text() : "";
    const res = await fetch(request);
    const url = new URL(request.url);
    requests.push({
      method: request.method,
      path: `${url.pathname}${url.search}`,
      status: res.status,
      body,
      challenge: res.headers.get("www-authenticate"),
    });
    return res;
  };
  return { fetch: recording, requests };
}

const formOf = (html: string) => ({ action: formAction(html), fields: hiddenFields(html) });

/**
 * The person: opens the authorization URL in a browser without JavaScript,
 * signs in, allows, and returns where the last 303 sends the browser (the
 * agent's callback). `seen` gets the consent page's HTML.
 */
export async function walkConsent(
  authorizationUrl: URL | string,
  member: { email: string; password: string },
  seen: (consentHtml: string) => void = () => {},
): Promise<URL> {
  const { go, submit } = browser(authorizationUrl);
  const expectStatus = async (res: Response, status: number) => {
    if (res.status !== status) throw new Error(`expected ${status}, got ${res.status}: ${await res.text()}`);
    return res;
  };

  const start = await expectStatus(await go(authorizationUrl), 303);
  const loginPage = await expectStatus(await go(start.headers.get("location")!), 200);
  const login = formOf(await loginPage.text());
  const loggedIn = await expectStatus(await submit(login.action, { ...login.fields, ...member }), 303);
  const consentPage = await expectStatus(await go(loggedIn.headers.get("location")!), 200);
  const html = await consentPage.text();
  seen(html);
  const consent = formOf(html);
  const decided = await expectStatus(await submit(consent.action, { ...consent.fields, decision: "allow" }), 303);
  return new URL(decided.headers.get("location")!, authorizationUrl);
}

/**
 * The agent connecting from nothing: the first connect ends in the SDK's
 * UnauthorizedError once it sent the person to the authorization URL; the
 * person consents; the agent finishes with the code and connects again.
 */
export async function connectAgent(
  mcpUrl: string,
  provider: MemoryAuthProvider,
  fetchFn: typeof fetch,
  member: { email: string; password: string },
  seen?: (consentHtml: string) => void,
): Promise<Client> {
  const first = new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider, fetch: fetchFn });
  await expect(new Client({ name: "test-agent", version: "1.0.0" }).connect(first)).rejects.toBeInstanceOf(
    UnauthorizedError,
  );
  expect(provider.authorizationUrls).toHaveLength(1);
  const callback = await walkConsent(provider.authorizationUrls[0]!, member, seen);
  await first.finishAuth(provider.codeFrom(callback));
  await first.close();
  const client = new Client({ name: "test-agent", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider, fetch: fetchFn }));
  return client;
}

/** A tool's answer as the agent reads it: the text of its content. */
export function toolText(result: Awaited<ReturnType<Client["callTool"]>>): string {
  const content = (result.content ?? []) as { type: string; text?: string }[];
  return content
    .filter((c) => c.type === "text")
    .map((c) => c.text)
    .join("\n");
}

export interface MetadataHost {
  /** https://127.0.0.1:<port> */
  base: string;
  /** The PEM of its self-signed certificate (OAUTH_CLIENT_METADATA_CA_FILE). */
  caFile: string;
  /** The paths asked, in order. */
  requests: string[];
  /** Serves `document` as JSON at `path`. */
  serve(path: string, document: unknown): void;
  close(): Promise<void>;
}

/** A loopback https server with a self-signed certificate (localhost and 127.0.0.1) made by openssl. */
export async function startMetadataHost(): Promise<MetadataHost> {
  const dir = mkdtempSync(path.join(tmpdir(), "mcp-agent-tls-"));
  const key = path.join(dir, "key.pem");
  const caFile = path.join(dir, "cert.pem");
  execFileSync(
    "openssl",
    [
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:prime256v1",
      "-nodes",
      "-keyout",
      key,
      "-out",
      caFile,
      "-days",
      "1",
    ].concat(["-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"]),
    { stdio: "ignore" },
  );
  const documents = new Map<string, string>();
  const requests: string[] = [];
  const server = https.createServer({ key: readFileSync(key), cert: readFileSync(caFile) }, (req, res) => {
    requests.push(req.url ?? "");
    const body = documents.get(req.url ?? "");
    if (body === undefined) return void res.writeHead(404).end();
    res.writeHead(200, { "content-type": "application/json", "cache-control": "max-age=60" }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const base = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    base,
    caFile,
    requests,
    serve(p, document) {
      documents.set(p, JSON.stringify(document));
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
