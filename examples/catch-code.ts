// The redirect URI's side of the authorization-code flow, for a walk in the
// shell: given the authorization URL, it asks you to open it, listens on the
// URL's loopback redirect_uri, checks the state it comes back with, answers
// the browser and prints the code on stdout, so that a shell captures it:
//   CODE=$(npx tsx examples/catch-code.ts "$AUTHORIZE_URL")
import { createServer } from "node:http";

const authorize = new URL(process.argv[2] ?? "");
const redirect = new URL(authorize.searchParams.get("redirect_uri") ?? "");
if (!["127.0.0.1", "[::1]", "localhost"].includes(redirect.hostname) || redirect.protocol !== "http:") {
  throw new Error(`the redirect_uri must be an http loopback address, got ${redirect.href}`);
}

const server = createServer((req, res) => {
  const url = new URL(req.url ?? "/", redirect);
  if (url.pathname !== redirect.pathname) return res.writeHead(404).end();
  const answer = url.searchParams;
  // RFC 6749 §10.12: the client checks that the state it sent comes back, against CSRF.
  const stateMatches = answer.get("state") === authorize.searchParams.get("state");
  const code = stateMatches ? answer.get("code") : null;
  const outcome = code
    ? "Authorized: the code is in your terminal; you can close this tab."
    : `Not authorized: ${stateMatches ? (answer.get("error") ?? "no code") : "the state does not match"} ${answer.get("error_description") ?? ""}`;
  res.writeHead(code ? 200 : 400, { "content-type": "text/plain; charset=utf-8", connection: "close" }).end(outcome);
  server.close();
  if (code) process.stdout.write(`${code}\n`);
  else process.stderr.write(`${outcome}\n`);
  process.exitCode = code ? 0 : 1;
});

server.listen(Number(redirect.port || 80), redirect.hostname.replace(/^\[|\]$/g, ""), () =>
  process.stderr.write(`Open this URL in a browser, sign in and allow:\n${authorize.href}\n`),
);
