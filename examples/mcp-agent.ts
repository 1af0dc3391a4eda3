// An AI agent on the MCP SDK's client, as short as it gets: it connects to the MCP endpoint,
// registers itself (dynamic registration: start the platform with
// OAUTH_DYNAMIC_REGISTRATION=true), asks you to open the authorization URL,
// takes the code at its loopback callback, then lists the tools and the contacts.
//   npx tsx examples/mcp-agent.ts [http://localhost:8080/mcp]
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { UnauthorizedError, type OAuthClientProvider } from "@modelcontextprotocol/sdk/client/auth.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { OAuthClientInformationMixed, OAuthTokens } from "@modelcontextprotocol/sdk/shared/auth.js";

const url = new URL(process.argv[2] ?? "http://localhost:8080/mcp");
const callback = createServer();
await new Promise<void>((resolve) => callback.listen(0, "127.0.0.1", resolve));
const redirectUrl = `http://127.0.0.1:${(callback.address() as AddressInfo).port}/callback`;
const code = new Promise<string>((resolve, reject) =>
  callback.on("request", (req, res) => {
    const answer = new URL(req.url ?? "/", redirectUrl).searchParams;
    res
      .writeHead(200, { connection: "close" })
      .end(answer.has("code") ? "Authorized: you can close this tab." : "Not authorized.");
    if (answer.has("code")) resolve(answer.get("code")!);
    else
      reject(new Error(`not authorized: ${answer.get("error") ?? "no code"} ${answer.get("error_description") ?? ""}`));
  }),
);

// What an agent would keep on disk: its registration, its tokens, the PKCE verifier.
const saved: { client?: OAuthClientInformationMixed; tokens?: OAuthTokens; verifier?: string } = {};
const provider: OAuthClientProvider = {
  redirectUrl,
  clientMetadata: { client_name: "Example agent", redirect_uris: [redirectUrl], token_endpoint_auth_method: "none" },
  clientInformation: () => saved.client,
  saveClientInformation: (client) => void (saved.client = client),
  tokens: () => saved.tokens,
  saveTokens: (tokens) => void (saved.tokens = tokens),
  redirectToAuthorization: (authorizationUrl) =>
    console.log(`Open this URL to authorize the agent:\n${authorizationUrl}`),
  saveCodeVerifier: (verifier) => void (saved.verifier = verifier),
  codeVerifier: () => saved.verifier!,
};

let transport = new StreamableHTTPClientTransport(url, { authProvider: provider });
let client = new Client({ name: "example-agent", version: "1.0.0" });
try {
  await client.connect(transport);
} catch (err) {
  if (!(err instanceof UnauthorizedError)) throw err;
  await transport.finishAuth(await code);
  transport = new StreamableHTTPClientTransport(url, { authProvider: provider });
  client = new Client({ name: "example-agent", version: "1.0.0" });
  await client.connect(transport);
}
callback.close();
console.log("Tools:", (await client.listTools()).tools.map((t) => t.name).join(", "));
const contacts = await client.callTool({ name: "list_contacts", arguments: {} });
for (const c of contacts.content as { type: string; text?: string }[]) if (c.type === "text") console.log(c.text);
await client.close();
