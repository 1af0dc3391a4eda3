// The developers' pages over HTTP: GET / (the landing page, in the sign-in
// pages' style and policy) links everything an integrator reads; GET /docs
// serves Swagger UI from the project's own dependencies under a policy that
// allows scripts from this origin only, with cached, revalidated assets.
// (test/gateway/browser-docs.test.ts renders both in Chromium.)
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startPlatform, type Platform } from "../support/platform.js";

const PAGE_CSP =
  "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";
const DOCS_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

let platform: Platform;
let base = "";

beforeAll(async () => {
  platform = await startPlatform({ organisation: false, gateway: { serviceUrls: {} } });
  base = platform.base;
}, 60_000);

afterAll(async () => {
  await platform?.stop();
});

const hrefs = (html: string) => [...html.matchAll(/<a [^>]*href="([^"]*)"/g)].map((m) => m[1]!);

describe("GET /", () => {
  it("an HTML page under the pages' policy, linking the docs, the document, the event types, the metadata, the applications page and health", async () => {
    const res = await fetch(`${base}/`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(res.headers.get("content-security-policy")).toBe(PAGE_CSP);
    expect(res.headers.get("x-frame-options")).toBe("DENY");
    const html = await res.text();
    expect(html).toContain('<link rel="stylesheet" href="/assets/pages.css">');
    expect(html).not.toContain("<script");
    const links = hrefs(html);
    for (const href of [
      "/docs",
      "/openapi.json",
      "/oauth/webhooks/event-types",
      "/.well-known/oauth-authorization-server",
      "/account/applications",
      "/healthz",
      "/readyz",
    ]) {
      expect(links, href).toContain(href);
    }
    // Every link stays on this host.
    for (const href of links) expect(href).toMatch(/^\/(?!\/)/);
  });

  it("another method is 405 in the one error shape, with Allow: GET (an unknown path beside it stays 404)", async () => {
    for (const path of ["/", "/docs"]) {
      const res = await fetch(`${base}${path}`, { method: "DELETE" });
      expect(res.status).toBe(405);
      expect(
        res.headers
          .get("allow")!
          .split(",")
          .map((m) => m.trim()),
      ).toContain("GET");
      expect(Object.keys((await res.json()) as object).sort()).toEqual(["error", "error_description"]);
    }
    const unknown = await fetch(`${base}/docs/nope.js`);
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ error: "not_found" });
  });

  it("the links it gives to this gateway's own routes answer", async () => {
    const html = await (await fetch(`${base}/`)).text();
    for (const href of [
      "/docs",
      "/oauth/webhooks/event-types",
      "/.well-known/oauth-authorization-server",
      "/account/applications",
      "/healthz",
      "/readyz",
    ]) {
      const res = await fetch(`${base}${href}`, { redirect: "manual" });
      expect([200, 303], `${href}: ${res.status}`).toContain(res.status);
    }
    expect(hrefs(html)).toContain("/openapi.json");
  });
});

describe("GET /docs", () => {
  it("our own HTML: no inline script, Swagger UI's bundle and stylesheet and docs-init.js from this origin, the docs policy", async () => {
    const res = await fetch(`${base}/docs`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(res.headers.get("content-security-policy")).toBe(DOCS_CSP);
    expect(res.headers.get("x-frame-options")).toBe("DENY");
    expect(res.headers.get("cache-control")).toBe("no-store");
    const html = await res.text();
    const scripts = [...html.matchAll(/<script([^>]*)>([\s\S]*?)<\/script>/g)];
    expect(scripts.map((m) => m[1]!.trim())).toEqual(['src="/docs/swagger-ui-bundle.js"', 'src="/docs/docs-init.js"']);
    for (const m of scripts) expect(m[2]).toBe("");
    expect(html).not.toMatch(/\son[a-z]+=/i);
    expect(html).not.toMatch(/(src|href)="(https?:)?\/\//);
    expect(html).toContain('<link rel="stylesheet" href="/docs/swagger-ui.css">');
    expect(html).toContain('id="swagger-ui"');
  });

  it("docs-init.js starts Swagger UI on /openapi.json with the validator badge off", async () => {
    const res = await fetch(`${base}/docs/docs-init.js`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    const js = await res.text();
    expect(js).toContain("SwaggerUIBundle({");
    expect(js).toContain('url: "/openapi.json"');
    expect(js).toContain('dom_id: "#swagger-ui"');
    expect(js).toContain("validatorUrl: null");
    expect(js).toContain("queryConfigEnabled: false");
    expect(js).toContain("usePkceWithAuthorizationCodeGrant: true");
    expect(js).toContain('oauth2RedirectUrl: window.location.origin + "/docs/oauth2-redirect.html"');
  });

  it("the Authorize dialog's redirect page: the package's own, no inline script, under the docs policy", async () => {
    const res = await fetch(`${base}/docs/oauth2-redirect.html`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(res.headers.get("content-security-policy")).toBe(DOCS_CSP);
    const html = await res.text();
    expect([...html.matchAll(/<script([^>]*)>([\s\S]*?)<\/script>/g)].map((m) => [m[1]!.trim(), m[2]])).toEqual([
      ['src="oauth2-redirect.js"', ""],
    ]);
    const js = await fetch(`${base}/docs/oauth2-redirect.js`);
    expect(js.status).toBe(200);
    expect(js.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    expect(await js.text()).toContain("swaggerUIRedirectOauth2");
  });

  it("the bundle and the stylesheet: swagger-ui-dist's own files, with an ETag, cached an hour, 304 when unchanged", async () => {
    const { readFile } = await import("node:fs/promises");
    const { createRequire } = await import("node:module");
    const dist = createRequire(import.meta.url)
      .resolve("swagger-ui-dist/package.json")
      .replace(/package\.json$/, "");
    for (const [name, type] of [
      ["swagger-ui-bundle.js", "text/javascript; charset=utf-8"],
      ["swagger-ui.css", "text/css; charset=utf-8"],
    ] as const) {
      const res = await fetch(`${base}/docs/${name}`);
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toBe(type);
      expect(res.headers.get("cache-control")).toBe("public, max-age=3600");
      expect(res.headers.get("x-content-type-options")).toBe("nosniff");
      const etag = res.headers.get("etag")!;
      expect(etag).toMatch(/^"[A-Za-z0-9_-]{22}"$/);
      expect(Buffer.from(await res.arrayBuffer()).equals(await readFile(`${dist}${name}`))).toBe(true);
      const again = await fetch(`${base}/docs/${name}`, { headers: { "if-none-match": etag } });
      expect(again.status).toBe(304);
      expect(await again.text()).toBe("");
    }
    // The package's own page, with its petstore initializer, is not served.
    expect((await fetch(`${base}/docs/index.html`)).status).toBe(404);
    expect((await fetch(`${base}/docs/swagger-initializer.js`)).status).toBe(404);
  });

  it("the stylesheet loads no font or image from another host", async () => {
    const css = await (await fetch(`${base}/docs/swagger-ui.css`)).text();
    expect(css).not.toContain("@font-face");
    expect(css).not.toContain("@import");
    const urls = [...css.matchAll(/url\(\s*["']?([^"')]+)/g)].map((m) => m[1]!);
    for (const url of urls) expect(url, url).toMatch(/^data:/);
  });
});
