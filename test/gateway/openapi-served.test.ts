// GET /openapi.json and /openapi.yaml as a client gets them, and the answer
// checker (support/openapi-check.ts) catching what drifts from the document.
import type { FastifyInstance } from "fastify";
import type { GatewayOptions } from "../../gateway/app.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { openapiChecker } from "../support/openapi-check.js";
import { checkAnswersAgainstDocument } from "../support/openapi-hook.js";
import { documentGateway } from "../support/openapi-document.js";

let app: FastifyInstance;
beforeAll(async () => {
  app = await documentGateway("https://bizcard.test");
});
afterAll(() => app?.close());

describe("GET /openapi.json and /openapi.yaml", () => {
  it("answers the document as JSON whatever the Accept header, with an ETag", async () => {
    for (const accept of ["text/html", "application/xml", "*/*"]) {
      const res = await app.inject({ method: "GET", url: "/openapi.json", headers: { accept } });
      expect(res.statusCode).toBe(200);
      expect(res.headers["content-type"]).toBe("application/json; charset=utf-8");
      expect(res.json()).toEqual(app.swagger());
    }
    const first = await app.inject({ method: "GET", url: "/openapi.json" });
    const again = await app.inject({
      method: "GET",
      url: "/openapi.json",
      headers: { "if-none-match": String(first.headers.etag) },
    });
    expect(again.statusCode).toBe(304);
    expect(again.body).toBe("");
  });

  it("answers the same document as YAML, without aliases", async () => {
    const res = await app.inject({ method: "GET", url: "/openapi.yaml" });
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toBe("application/yaml; charset=utf-8");
    expect(res.body).not.toMatch(/[&*]a\d+\b/);
    expect(parse(res.body)).toEqual(app.swagger());
  });

  it("bad input to the new routes gets the one error shape", async () => {
    const res = await app.inject({
      method: "POST",
      url: "/openapi.json",
      payload: "{}",
      headers: { "content-type": "application/json" },
    });
    expect(res.statusCode).toBe(405);
    expect(Object.keys(res.json()).sort()).toEqual(["error", "error_description"]);
  });
});

describe("webhooks", () => {
  it("the document's webhooks are what buildGateway is given (the event catalog), examples checked like the rest", async () => {
    const webhooks = {
      "contact.created": {
        post: {
          operationId: "contactCreated",
          summary: "A contact was created",
          security: [],
          requestBody: {
            content: {
              "application/json": {
                schema: { type: "object", required: ["type"], properties: { type: { const: "contact.created" } } },
                example: { type: "contact.created" },
              },
            },
          },
          responses: { "200": { description: "Received" } },
        },
      },
    };
    const gateway = await documentGateway("https://bizcard.test", {
      webhooks: webhooks as unknown as GatewayOptions["webhooks"],
    });
    const doc = gateway.swagger() as { webhooks: unknown };
    await gateway.close();
    expect(doc.webhooks).toEqual(webhooks);
    expect(openapiChecker(doc as Record<string, unknown>).exampleProblems()).toEqual([]);
    const wrong = structuredClone(webhooks);
    wrong["contact.created"].post.requestBody.content["application/json"].example.type =
      "contact.updated" as "contact.created";
    expect(openapiChecker({ ...doc, webhooks: wrong }).exampleProblems()).toEqual([
      expect.stringMatching(/webhook contact.created post request application\/json: example/),
    ]);
  });
});

describe("the answer checker", () => {
  it("names an undocumented status, a missing required header, a body that does not match and an undocumented content type", () => {
    const check = openapiChecker(app.swagger() as Record<string, unknown>).check;
    const subscription = {
      id: 1,
      target_url: "https://h.test/",
      event_type: "contact.created",
      created_at: "2026-01-01T00:00:00.000Z",
      updated_at: "2026-01-01T00:00:00.000Z",
      disabled_at: null,
      disabled_reason: null,
      ordered: false,
      previous_secret_expires_at: null,
      throttled_until: null,
      in_flight_cap: null,
      blocked_since: null,
      blocked_delivery_id: null,
    };
    const ok = {
      status: 200,
      headers: {
        "x-request-id": "req-1",
        "content-type": "application/json; charset=utf-8",
        "cache-control": "no-store",
      },
      body: JSON.stringify(subscription),
    };
    expect(check("GET", "/oauth/webhooks/subscriptions/1", ok)).toEqual([]);
    expect(check("GET", "/oauth/webhooks/subscriptions/1", { ...ok, status: 402 })).toEqual([
      expect.stringMatching(/-> 402: status not documented/),
    ]);
    expect(
      check("GET", "/oauth/webhooks/subscriptions/1", { ...ok, headers: { "content-type": "application/json" } }),
    ).toEqual([
      expect.stringMatching(/header x-request-id missing/),
      expect.stringMatching(/header cache-control missing/),
    ]);
    const { disabled_at: _, ...incomplete } = subscription;
    expect(
      check("GET", "/oauth/webhooks/subscriptions/1", {
        ...ok,
        body: JSON.stringify({ ...incomplete, id: "1" }),
      }).join(),
    ).toMatch(/disabled_at.*|must be integer/);
    expect(
      check("GET", "/oauth/webhooks/subscriptions/1", {
        ...ok,
        headers: { ...ok.headers, "content-type": "text/plain" },
      }),
    ).toEqual([expect.stringMatching(/content-type text\/plain not documented/)]);
    expect(
      check("DELETE", "/oauth/webhooks/subscriptions/1", {
        status: 204,
        headers: { "x-request-id": "req-1", "cache-control": "no-store" },
        body: "{}",
      }),
    ).toEqual([expect.stringMatching(/a body where none is documented/)]);
  });

  it("in the platform fixture, turns a drifting answer into a 500 naming the problem", async () => {
    let problems: string[] = [];
    const gateway = await documentGateway("https://bizcard.test", {}, (g) => {
      problems = checkAnswersAgainstDocument(g);
      // Drift made on purpose: /healthz answering a status the document does not have.
      g.addHook("preSerialization", async (request, _reply, payload) =>
        request.url === "/healthz" ? { ...(payload as object), status: "fine" } : payload,
      );
    });
    const res = await gateway.inject({ method: "GET", url: "/healthz" });
    await gateway.close();
    expect(res.statusCode).toBe(500);
    expect(res.json().error).toBe("openapi_drift");
    expect(problems.join()).toMatch(/GET \/healthz -> 200: body\/status must be equal to/);
  });
});
