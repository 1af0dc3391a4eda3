// CORS as a browser sees it: the preflight (OPTIONS with Origin and
// Access-Control-Request-Method) and the actual request of each route
// group (cors.ts), what a page may read (Access-Control-Expose-Headers),
// and the routes no web page may read. /mcp's own origins: cors-mcp.test.ts.
import { describe, expect, it } from "vitest";
import { expectError } from "../support/api-client.js";
import { base, client, list, PAGE, preflight, token, useCorsSuite } from "../support/cors-suite.js";

useCorsSuite();

describe("discovery documents: any origin, GET", () => {
  const paths = [
    "/.well-known/oauth-authorization-server",
    "/.well-known/oauth-protected-resource",
    "/.well-known/oauth-protected-resource/mcp",
    "/openapi.json",
    "/openapi.yaml",
    "/oauth/webhooks/event-types",
  ];

  it("a page of any origin reads each one", async () => {
    for (const path of paths) {
      const res = await fetch(`${base}${path}`, { headers: { origin: PAGE } });
      expect(res.status, path).toBe(200);
      expect(res.headers.get("access-control-allow-origin"), path).toBe("*");
      expect(res.headers.get("access-control-allow-credentials"), path).toBeNull();
      await res.arrayBuffer();
    }
  });

  it("the preflight is 204, GET only, with the header an MCP client sends, and no body", async () => {
    for (const path of paths) {
      const res = await preflight(path, PAGE, "GET", "mcp-protocol-version");
      expect(res.status, path).toBe(204);
      expect(res.headers.get("access-control-allow-origin"), path).toBe("*");
      expect(list(res.headers.get("access-control-allow-methods")), path).toEqual(["get"]);
      expect(list(res.headers.get("access-control-allow-headers")), path).toContain("mcp-protocol-version");
      expect(await res.text()).toBe("");
    }
  });
});

describe("the OAuth endpoints public clients call: any origin, POST, no cookies", () => {
  it("the preflight allows POST with Authorization and Content-Type, never credentials", async () => {
    for (const path of ["/oauth/token", "/oauth/revoke", "/oauth/register"]) {
      const res = await preflight(path, PAGE, "POST", "authorization, content-type");
      expect(res.status, path).toBe(204);
      expect(res.headers.get("access-control-allow-origin")).toBe("*");
      expect(list(res.headers.get("access-control-allow-methods"))).toEqual(["post"]);
      expect(list(res.headers.get("access-control-allow-headers"))).toEqual(
        expect.arrayContaining(["authorization", "content-type"]),
      );
      expect(res.headers.get("access-control-allow-credentials")).toBeNull();
      expect(Number(res.headers.get("access-control-max-age"))).toBeGreaterThan(0);
    }
  });

  it("the token answer, and its errors, are readable from a page", async () => {
    const form = new URLSearchParams({
      grant_type: "client_credentials",
      client_id: client.id,
      client_secret: client.secret,
      scope: "organisation:read",
    });
    const ok = await fetch(`${base}/oauth/token`, {
      method: "POST",
      headers: { origin: PAGE, "content-type": "application/x-www-form-urlencoded" },
      body: form,
    });
    expect(ok.status).toBe(200);
    expect(ok.headers.get("access-control-allow-origin")).toBe("*");
    expect(((await ok.json()) as { access_token: string }).access_token).toBeTruthy();

    form.set("client_secret", "wrong");
    const refused = await fetch(`${base}/oauth/token`, {
      method: "POST",
      headers: { origin: PAGE, "content-type": "application/x-www-form-urlencoded" },
      body: form,
    });
    expect(refused.headers.get("access-control-allow-origin")).toBe("*");
    expect(list(refused.headers.get("access-control-expose-headers"))).toEqual(
      expect.arrayContaining(["www-authenticate", "retry-after"]),
    );
    await expectError(refused, 401, "invalid_client");
  });

  it("a dynamic registration from a page is readable", async () => {
    const res = await fetch(`${base}/oauth/register`, {
      method: "POST",
      headers: { origin: PAGE, "content-type": "application/json" },
      body: JSON.stringify({
        client_name: "Browser agent",
        redirect_uris: ["http://127.0.0.1:5173/callback"],
        token_endpoint_auth_method: "none",
      }),
    });
    expect(res.status).toBe(201);
    expect(res.headers.get("access-control-allow-origin")).toBe("*");
    await res.arrayBuffer();
  });
});

describe("the REST API: any origin, bearer tokens, no cookies", () => {
  it("the preflight allows the methods and Authorization", async () => {
    for (const [path, method] of [
      ["/oauth/me", "GET"],
      ["/oauth/contacts", "GET"],
      ["/oauth/webhooks/subscriptions", "POST"],
      ["/oauth/webhooks/subscriptions/0b5f0c1e-0000-4000-8000-000000000000", "DELETE"],
    ]) {
      const res = await preflight(path!, PAGE, method!, "authorization");
      expect(res.status, path).toBe(204);
      expect(res.headers.get("access-control-allow-origin")).toBe("*");
      expect(list(res.headers.get("access-control-allow-methods"))).toContain(method!.toLowerCase());
      expect(list(res.headers.get("access-control-allow-headers"))).toContain("authorization");
      expect(res.headers.get("access-control-allow-credentials")).toBeNull();
    }
  });

  it("an answer and a 401 are readable, with WWW-Authenticate, Link and Location exposed", async () => {
    const me = await fetch(`${base}/oauth/me`, { headers: { origin: PAGE, authorization: `Bearer ${await token()}` } });
    expect(me.status).toBe(200);
    expect(me.headers.get("access-control-allow-origin")).toBe("*");
    expect(list(me.headers.get("access-control-expose-headers"))).toEqual(
      expect.arrayContaining(["www-authenticate", "link", "location", "retry-after", "x-request-id"]),
    );
    await me.json();
    const anonymous = await fetch(`${base}/oauth/me`, { headers: { origin: PAGE } });
    expect(anonymous.headers.get("access-control-allow-origin")).toBe("*");
    await expectError(anonymous, 401, "invalid_token");
  });

  it("a request without Origin (no page made it) gets no CORS header, only Vary: Origin; the discovery documents keep theirs", async () => {
    const me = await fetch(`${base}/oauth/me`, { headers: { authorization: `Bearer ${await token()}` } });
    expect(me.status).toBe(200);
    expect(me.headers.get("access-control-allow-origin")).toBeNull();
    expect(me.headers.get("access-control-expose-headers")).toBeNull();
    expect(list(me.headers.get("vary"))).toContain("origin");
    await me.json();
    const form = new URLSearchParams({
      grant_type: "client_credentials",
      client_id: client.id,
      client_secret: client.secret,
    });
    const issued = await fetch(`${base}/oauth/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: form,
    });
    expect(issued.status).toBe(200);
    expect(issued.headers.get("access-control-allow-origin")).toBeNull();
    expect(list(issued.headers.get("vary"))).toContain("origin");
    await issued.json();
    const metadata = await fetch(`${base}/.well-known/oauth-authorization-server`);
    expect(metadata.headers.get("access-control-allow-origin")).toBe("*");
    expect(metadata.headers.get("vary")).toBeNull();
    await metadata.json();
  });
});

describe("routes no web page may read", () => {
  it("the authorization endpoint, the pages and introspection send no CORS headers; their preflight is 405 as before", async () => {
    for (const [path, method] of [
      ["/oauth/authorize", "GET"],
      ["/oauth/introspect", "POST"],
      ["/account/login", "GET"],
    ]) {
      const pre = await preflight(path!, PAGE, method!);
      expect(pre.headers.get("access-control-allow-origin"), path).toBeNull();
      await expectError(pre, 405, "method_not_allowed");
      expect(pre.headers.get("allow")).not.toContain("OPTIONS");
    }
    const introspect = await fetch(`${base}/oauth/introspect`, {
      method: "POST",
      headers: { origin: PAGE, "content-type": "application/x-www-form-urlencoded" },
      body: "token=x",
    });
    expect(introspect.headers.get("access-control-allow-origin")).toBeNull();
    await introspect.arrayBuffer();
  });

  it("an OPTIONS that is no preflight, and a preflight to an unknown path, are answered as before", async () => {
    const plain = await fetch(`${base}/oauth/token`, { method: "OPTIONS" });
    expect(plain.headers.get("access-control-allow-origin")).toBeNull();
    await expectError(plain, 405, "method_not_allowed");
    expect(plain.headers.get("allow")).toBe("POST");
    await expectError(await preflight("/nowhere", PAGE, "GET"), 404, "not_found");
  });

  it("the OpenAPI document gains no OPTIONS operation", async () => {
    const doc = (await (await fetch(`${base}/openapi.json`)).json()) as {
      paths: Record<string, Record<string, unknown>>;
    };
    for (const [path, item] of Object.entries(doc.paths)) expect(Object.keys(item), path).not.toContain("options");
    expect(Object.keys(doc.paths)).not.toContain("*");
  });
});
