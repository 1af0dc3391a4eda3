// GET /docs: the API reference, Swagger UI (swagger-ui-dist from
// node_modules: no CDN) rendering GET /openapi.json, started by docs-init.js:
// no inline script, so the page's policy needs no 'unsafe-inline'.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import type { FastifyInstance } from "fastify";
import { asset } from "../pages/assets.js";
import { PAGE_HEADERS } from "../pages/page-reply.js";

export const DOCS_PATH = "/docs";

/** The pages' policy, plus scripts, data: images (the icons) and fetch from this origin only. */
export const DOCS_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join("; ");

const INIT = `// Starts Swagger UI on the platform's OpenAPI document (served by ${DOCS_PATH}).
window.ui = SwaggerUIBundle({
  url: "/openapi.json",
  dom_id: "#swagger-ui",
  // The default sends the document to validator.swagger.io for a badge: nothing leaves this host.
  validatorUrl: null,
  deepLinking: true,
  // Settings from the page's query string (?url=…) would let a link show another document here.
  queryConfigEnabled: false,
  docExpansion: "list",
  defaultModelsExpandDepth: 0,
  tryItOutEnabled: false,
  persistAuthorization: false,
  // The Authorize dialog's authorization code flow: this server requires PKCE (S256), and the
  // code comes back to the package's own redirect page (a client must list it as a redirect URI).
  usePkceWithAuthorizationCodeGrant: true,
  oauth2RedirectUrl: window.location.origin + "${DOCS_PATH}/oauth2-redirect.html",
});
`;

const CSS = `.docs-bar { display: flex; align-items: center; justify-content: space-between; gap: 1rem; flex-wrap: wrap; max-width: 1460px; margin: 0 auto; padding: .75rem 20px; font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; border-bottom: 1px solid #dfe3ea; }
.docs-brand { display: flex; align-items: center; gap: .5rem; font-weight: 700; color: #1d2433; text-decoration: none; }
.docs-mark { display: inline-grid; place-items: center; width: 1.75rem; height: 1.75rem; border-radius: 6px; background: #2f5bea; color: #fff; }
.docs-links { display: flex; gap: 1rem; flex-wrap: wrap; font-size: .95rem; }
.docs-links a { color: #2146c4; }
`;

const HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>API reference · bizcard</title>
<link rel="icon" href="/assets/icon.svg" type="image/svg+xml">
<link rel="stylesheet" href="${DOCS_PATH}/swagger-ui.css">
<link rel="stylesheet" href="${DOCS_PATH}/docs.css">
</head>
<body>
<header class="docs-bar">
<a class="docs-brand" href="/"><span class="docs-mark" aria-hidden="true">b</span> bizcard API reference</a>
<nav class="docs-links" aria-label="Machine-readable">
<a href="/openapi.json">OpenAPI (JSON)</a>
<a href="/openapi.yaml">OpenAPI (YAML)</a>
<a href="/oauth/webhooks/event-types">Event types</a>
</nav>
</header>
<main id="swagger-ui"></main>
<script src="${DOCS_PATH}/swagger-ui-bundle.js"></script>
<script src="${DOCS_PATH}/docs-init.js"></script>
</body>
</html>
`;

function distFile(name: string): Buffer {
  const dir = path.dirname(createRequire(import.meta.url).resolve("swagger-ui-dist/package.json"));
  return readFileSync(path.join(dir, name));
}

const JS = "text/javascript; charset=utf-8";
const CSS_TYPE = "text/css; charset=utf-8";

export function docsPageRoutes(app: FastifyInstance): void {
  const policy = { "content-security-policy": DOCS_CSP };
  app.get(DOCS_PATH, async (_request, reply) =>
    reply.headers(PAGE_HEADERS).headers(policy).type("text/html; charset=utf-8").send(HTML),
  );
  const files: [string, string, string | Buffer][] = [
    ["swagger-ui-bundle.js", JS, distFile("swagger-ui-bundle.js")],
    ["swagger-ui.css", CSS_TYPE, distFile("swagger-ui.css")],
    ["docs-init.js", JS, INIT],
    ["docs.css", CSS_TYPE, CSS],
  ];
  for (const [name, type, body] of files) asset(app, `${DOCS_PATH}/${name}`, type, body, policy);
  // The Authorize dialog's redirect target: the package's page (no inline script) and its script.
  const redirect = { ...policy, "referrer-policy": "no-referrer" };
  asset(
    app,
    `${DOCS_PATH}/oauth2-redirect.html`,
    "text/html; charset=utf-8",
    distFile("oauth2-redirect.html"),
    redirect,
  );
  asset(app, `${DOCS_PATH}/oauth2-redirect.js`, JS, distFile("oauth2-redirect.js"), policy);
}
