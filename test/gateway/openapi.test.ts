// The OpenAPI document: strict 3.1 (Redocly's recommended-strict rules, no
// warnings), JSON Schema 2020-12 without OpenAPI 3.0's `nullable`, every
// example valid, and the gateway's routes and the document's operations the
// same set. The answers themselves are checked in every integration test
// (support/openapi-hook.ts).
import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isHidden } from "../../gateway/openapi/document.js";
import { SCOPES } from "../../services/auth/scopes.js";
import { openapiChecker } from "../support/openapi-check.js";
import { documentGateway } from "../support/openapi-document.js";

// biome-ignore lint/suspicious/noExplicitAny: the OpenAPI document, of any shape, read by key
type Json = Record<string, any>;

/** Routes deliberately not in the document: HTML pages a person uses in a browser, and their assets. */
const HIDDEN = [
  "GET /account/login",
  "GET /account/applications",
  "POST /account/applications/revoke",
  "POST /account/logout",
  "GET /oauth/interaction/:id",
  "POST /oauth/interaction/:id/login",
  "GET /assets/pages.css",
  "GET /assets/icon.svg",
  "GET /",
  "GET /docs",
  "GET /docs/swagger-ui-bundle.js",
  "GET /docs/swagger-ui.css",
  "GET /docs/docs-init.js",
  "GET /docs/docs.css",
  "GET /docs/oauth2-redirect.html",
  "GET /docs/oauth2-redirect.js",
];

let app: FastifyInstance;
let doc: Json;

beforeAll(async () => {
  // A public URL that is neither localhost nor example.com (Redocly's no-server-example.com).
  app = await documentGateway("https://bizcard.test", {});
  doc = app.swagger() as Json;
});
afterAll(() => app?.close());

describe("the OpenAPI document", () => {
  it.each([
    ["a deployment's", "https://bizcard.test"],
    ["npm start's (PUBLIC_URL on localhost)", "http://localhost:8080"],
  ])(
    "passes redocly lint with the recommended-strict rules (a warning fails it): %s document",
    async (_which, publicUrl) => {
      const dir = await mkdtemp(join(tmpdir(), "openapi-"));
      const other = publicUrl === "https://bizcard.test" ? undefined : await documentGateway(publicUrl, {});
      try {
        const file = join(dir, "openapi.json");
        await writeFile(file, JSON.stringify(other ? other.swagger() : doc));
        const run = await promisify(execFile)(
          process.execPath,
          ["node_modules/@redocly/cli/bin/cli.js", "lint", "--config", "redocly.yaml", "--format", "stylish", file],
          {
            env: { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true", NO_COLOR: "1" },
          },
        ).catch((err: { stdout: string; stderr: string }) => ({
          stdout: err.stdout,
          stderr: `lint failed\n${err.stderr}`,
        }));
        // recommended-strict makes every warning an error, so a clean exit means no problem of either kind.
        expect(run.stderr).not.toMatch(/lint failed/);
        expect(run.stderr + run.stdout).toMatch(/Your API description is valid/);
        expect(run.stderr + run.stdout).not.toMatch(/\d+ (error|warning)s?\b/);
      } finally {
        await other?.close();
        await rm(dir, { recursive: true, force: true });
      }
    },
    60_000,
  );

  it("is OpenAPI 3.1: JSON Schema 2020-12, never `nullable`; servers is PUBLIC_URL", () => {
    expect(doc.openapi).toBe("3.1.0");
    expect(JSON.stringify(doc)).not.toContain('"nullable"');
    expect(doc.servers).toEqual([{ url: "https://bizcard.test" }]);
    expect(doc.info.license).toBeDefined();
    // A nullable field is a type array.
    expect(doc.components.schemas.Subscription.properties.disabled_at.type).toEqual(["string", "null"]);
    expect(doc.components.schemas.Subscription.required).toEqual(
      expect.arrayContaining([
        "id",
        "target_url",
        "event_type",
        "created_at",
        "updated_at",
        "disabled_at",
        "disabled_reason",
      ]),
    );
  });

  it("has OAuth 2.0 (authorization code with PKCE, client credentials) with every scope and its meaning, and the bearer token", () => {
    const { oauth2, bearer } = doc.components.securitySchemes;
    expect(oauth2.flows.authorizationCode).toMatchObject({
      authorizationUrl: "https://bizcard.test/oauth/authorize",
      tokenUrl: "https://bizcard.test/oauth/token",
    });
    expect(oauth2.flows.authorizationCode.scopes).toEqual(SCOPES);
    expect(oauth2.flows.clientCredentials).toEqual({ tokenUrl: "https://bizcard.test/oauth/token", scopes: SCOPES });
    expect(bearer).toMatchObject({ type: "http", scheme: "bearer" });
  });

  it("every operation has an operationId, a summary, its security, a 4xx answer in the one error shape, and examples that are valid", () => {
    const checker = openapiChecker(doc);
    expect(checker.exampleProblems()).toEqual([]);
    for (const [path, item] of Object.entries(doc.paths as Json)) {
      for (const [method, op] of Object.entries(item as Json)) {
        const where = `${method.toUpperCase()} ${path}`;
        expect(op.operationId, where).toBeTruthy();
        expect(op.summary, where).toBeTruthy();
        expect(Array.isArray(op.security), where).toBe(true);
        const errors = Object.entries(op.responses as Json).filter(([status]) => status.startsWith("4"));
        expect(errors.length, where).toBeGreaterThan(0);
        const jsonError = errors.some(
          ([, r]) => r.content?.["application/json"]?.schema?.$ref === "#/components/schemas/Error",
        );
        expect(jsonError || path === "/oauth/authorize", where).toBe(true);
      }
    }
  });

  it("an endpoint that is off by default says so in its summary (the /docs list)", () => {
    const register = (doc.paths as Json)["/oauth/register"].post;
    expect(register.summary).toMatch(/optional, off by default/);
  });

  it("the repeated create's 200, a bad id's 400, 401, 403, 404, 429 and 503 are documented", () => {
    const subscription = doc.paths["/oauth/webhooks/subscriptions/{id}"];
    expect(Object.keys(doc.paths["/oauth/webhooks/subscriptions"].post.responses)).toEqual(
      expect.arrayContaining(["200", "201", "400", "401", "403", "415", "429", "503"]),
    );
    for (const method of ["get", "put", "delete"]) {
      expect(Object.keys(subscription[method].responses)).toEqual(
        expect.arrayContaining(["400", "401", "403", "404", "429", "503"]),
      );
    }
    expect(doc.paths["/oauth/webhooks/subscriptions"].post.security).toEqual([
      { oauth2: ["webhooks:write", "contacts:read"] },
      { bearer: ["webhooks:write", "contacts:read"] },
    ]);
    expect(Object.keys(doc.paths["/oauth/token"].post.requestBody.content)).toEqual([
      "application/x-www-form-urlencoded",
      "application/json",
    ]);
  });

  it("every time a client sends or reads is a date-time, the recovery's since included; a log line can say cancelled", () => {
    const recover =
      doc.paths["/oauth/webhooks/subscriptions/{id}/recover"].post.requestBody.content["application/json"].schema;
    const body = recover.$ref ? doc.components.schemas[recover.$ref.split("/").pop()] : recover;
    expect(body.properties.since).toMatchObject({ type: "string", format: "date-time" });
    const attempt =
      doc.components.schemas.DeliveryAttempt ??
      Object.values(doc.components.schemas as Json).find((s: Json) => s.properties?.outcome && s.properties?.attempt);
    expect(attempt.properties.outcome.enum).toEqual(["succeeded", "failed", "gave_up", "gone", "skipped", "cancelled"]);
  });
});

describe("routes and operations", () => {
  it("each registered route is in the document and each operation is a registered route (HEAD, the CORS preflight and the listed pages aside)", () => {
    // The CORS preflight routes (gateway/cors.ts) are hidden from the document.
    const registered = registeredRoutes(app).filter((r) => !r.startsWith("HEAD ") && !r.startsWith("OPTIONS "));
    expect(registered.filter((r) => isHidden(r.split(" ")[1]!)).sort()).toEqual([...HIDDEN].sort());
    const documented = Object.entries(doc.paths as Json).flatMap(([path, item]) =>
      Object.keys(item as Json).map((method) => `${method.toUpperCase()} ${path.replace(/\{([^}]+)\}/g, ":$1")}`),
    );
    expect(documented.length).toBeGreaterThan(15);
    expect(registered.filter((r) => !HIDDEN.includes(r)).sort()).toEqual(documented.sort());
  });
});

/** "METHOD /path" of every route, from fastify's printed route tree (one node a line, nested by indentation). */
function registeredRoutes(gateway: FastifyInstance): string[] {
  const stack: string[] = [];
  const out: string[] = [];
  for (const line of gateway.printRoutes({ commonPrefix: false }).split("\n")) {
    const at = line.indexOf("── ");
    if (at < 0) continue;
    const depth = (at - 1) / 4;
    const [, segment, methods] = /^(\S+)(?: \(([^)]*)\))?/.exec(line.slice(at + 3))!;
    stack[depth] = segment!;
    stack.length = depth + 1;
    for (const method of methods ? methods.split(", ") : []) out.push(`${method} ${stack.join("")}`);
  }
  return out;
}
