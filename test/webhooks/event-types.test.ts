// The event catalog against what really happens: GET /oauth/webhooks/event-types
// answers self-contained JSON Schema 2020-12, and the bodies and headers a
// loopback receiver really gets from the delivery service, and the items of
// GET /oauth/contacts, validate against those schemas (ajv, 2020-12, strict).
import { createHmac } from "node:crypto";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AuthService } from "../../gen/bizcard/auth/v1/auth_pb.js";
import { OrganisationService } from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import { EXAMPLE_SECRET, EventTypesAnswerSchema, webhooksObject } from "../../gateway/openapi/events.js";
import { apiCaller, expectError, type AppClient } from "../support/api-client.js";
import { startPlatform, type Platform } from "../support/platform.js";
import { waitFor } from "../support/processes.js";
import { startReceiver, type Receiver } from "../support/receiver.js";

interface EventTypeBody {
  name: string;
  description: string;
  schema: Record<string, unknown> & { properties: { data: Record<string, unknown> } };
  example: { type: string; timestamp: string; data: Record<string, string> };
}

let platform: Platform;
let receiver: Receiver;
let app: AppClient;
let orgId: string;
let base = "";
const { call } = apiCaller(() => base);

function newAjv() {
  // strict: a misspelt keyword or type in a served schema is an error, not ignored.
  const ajv = new Ajv2020({ strict: true, allErrors: true });
  addFormats.default(ajv);
  return ajv;
}

beforeAll(async () => {
  receiver = await startReceiver();
  platform = await startPlatform({
    token: "e".repeat(40),
    config: { WEBHOOK_ALLOW_INSECURE_TARGETS: "true", DELIVERY_POLL_MS: "50" },
    auth: true,
    webhook: true,
    delivery: true,
    gateway: { publicUrlPort: true, bus: true, serviceUrls: {} },
  });
  base = platform.base;
  orgId = (
    await platform.organisation
      .client(OrganisationService)
      .createOrganisation({ name: "Catalog Cards", ownerEmail: "owner@catalog.test", ownerPassword: "password-c" })
  ).organisation!.id;
  const res = await platform.auth
    .client(AuthService)
    .createClient({ name: "Mapper", ownerOrganisationId: orgId, scopes: [] });
  app = { id: res.client!.clientId, secret: res.clientSecret };
}, 60_000);

afterAll(async () => {
  await platform?.stop();
  await receiver?.close();
});

async function catalog(): Promise<EventTypeBody[]> {
  const res = await fetch(`${base}/oauth/webhooks/event-types`);
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toBe("application/json; charset=utf-8");
  return (await res.json()) as EventTypeBody[];
}

describe("GET /oauth/webhooks/event-types", () => {
  it("is public and lists contact.created and contact.updated with a description, a 2020-12 schema and an example", async () => {
    const types = await catalog();
    expect(types.map((t) => t.name)).toEqual(["contact.created", "contact.updated"]);
    // The zod schema the route's documented answer is made from agrees with the answer.
    expect(EventTypesAnswerSchema.safeParse(types).success).toBe(true);
    for (const type of types) {
      expect(Object.keys(type).sort()).toEqual(["description", "example", "name", "schema"]);
      expect(type.description.length).toBeGreaterThan(20);
      expect(type.schema.$schema).toBe("https://json-schema.org/draft/2020-12/schema");
      expect(type.schema).toMatchObject({
        type: "object",
        required: ["type", "timestamp", "data"],
        properties: { type: { const: type.name } },
      });
      expect(type.schema.properties.data).toMatchObject({
        type: "object",
        required: [
          "id",
          "first_name",
          "last_name",
          "email",
          "phone",
          "company",
          "job_title",
          "website",
          "address",
          "notes",
          "created_at",
          "updated_at",
        ],
      });
      // Self-contained: no reference into the OpenAPI document (or anywhere), and 2020-12 types, never `nullable`.
      const text = JSON.stringify(type.schema);
      expect(text).not.toContain("$ref");
      expect(text).not.toContain("#/components");
      expect(text).not.toContain('"nullable"');
      // Each example is a valid body of its own type.
      const validate = newAjv().compile(type.schema);
      expect(validate(type.example), JSON.stringify(validate.errors)).toBe(true);
      expect(type.example.type).toBe(type.name);
    }
  });

  it("another method is 405 in the one error shape, with Allow", async () => {
    const res = await fetch(`${base}/oauth/webhooks/event-types`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    expect(res.headers.get("allow")).toMatch(/GET/);
    await expectError(res, 405, "method_not_allowed");
  });

  it("the schemas reject what is not a body of that type", async () => {
    const [created, updated] = await catalog();
    const validate = newAjv().compile(created!.schema);
    expect(validate(updated!.example)).toBe(false);
    const { email: _dropped, ...withoutEmail } = created!.example.data;
    expect(validate({ ...created!.example, data: withoutEmail })).toBe(false);
    expect(validate({ ...created!.example, data: { ...created!.example.data, extra: "x" } })).toBe(false);
    expect(validate({ ...created!.example, timestamp: "yesterday" })).toBe(false);
  });
});

describe("what a subscriber really receives matches the catalog", () => {
  it("the bodies of contact.created and contact.updated, their headers, and GET /oauth/contacts' items", async () => {
    const types = await catalog();
    const routes = {
      "contact.created": receiver.route("/catalog/created"),
      "contact.updated": receiver.route("/catalog/updated"),
    };
    for (const [event_type, route] of Object.entries(routes)) {
      const res = await call(app, "POST", "/oauth/webhooks/subscriptions", { target_url: route.url, event_type });
      expect(res.status, await res.clone().text()).toBe(201);
    }
    const orgs = platform.organisation.client(OrganisationService);
    const contact = (
      await orgs.createContact({ organisationId: orgId, fields: { firstName: "Grace", company: "Navy" } })
    ).contact!;
    await orgs.updateContact({
      id: contact.id,
      organisationId: orgId,
      fields: { jobTitle: "Rear Admiral", notes: "line one\nline two" },
    });

    const webhooks = webhooksObject();
    for (const type of types) {
      const route = routes[type.name as keyof typeof routes];
      const [received] = await waitFor(() => (route.requests.length ? route.requests : undefined), 15_000, type.name);
      const body = JSON.parse(received!.body) as unknown;
      const validate = newAjv().compile(type.schema);
      expect(validate(body), JSON.stringify(validate.errors)).toBe(true);
      expect(body).toMatchObject({ type: type.name, data: { id: contact.id } });
      // The headers are the documented ones, each valid against its parameter schema.
      const operation = webhooks[type.name as keyof typeof webhooks].post;
      expect(operation.parameters.map((p) => p.name)).toEqual([
        "webhook-id",
        "webhook-timestamp",
        "webhook-signature",
        "traceparent",
      ]);
      for (const parameter of operation.parameters) {
        const value = received!.headers[parameter.name];
        expect(typeof value, parameter.name).toBe("string");
        const check = newAjv().compile(parameter.schema);
        expect(check(value), `${parameter.name}: ${String(value)} ${JSON.stringify(check.errors)}`).toBe(true);
      }
      // The body schema in the document is the catalog's (without $schema).
      const { $schema: _dialect, ...schema } = type.schema;
      expect(operation.requestBody.content["application/json"].schema).toEqual(schema);
    }

    const res = await call(app, "GET", "/oauth/contacts");
    expect(res.status).toBe(200);
    const listed = (await res.json()) as unknown[];
    expect(listed.length).toBe(1);
    const validateContact = newAjv().compile(types[0]!.schema.properties.data);
    for (const item of listed) expect(validateContact(item), JSON.stringify(validateContact.errors)).toBe(true);
    expect(listed[0]).toMatchObject({ id: contact.id, job_title: "Rear Admiral" });
  }, 30_000);
});

describe("the webhooks object (OpenAPI 3.1)", () => {
  it("one public POST per event type: the four headers required, a whole-body example, 2XX, 410 and default answers", () => {
    const webhooks = webhooksObject();
    expect(Object.keys(webhooks)).toEqual(["contact.created", "contact.updated"]);
    for (const [name, item] of Object.entries(webhooks)) {
      const op = item.post;
      expect(op.security).toEqual([]);
      expect(op.summary).toBeTruthy();
      for (const words of ["webhook-signature", "v1,", "5 minutes", "410", "whsec_", "shown once", "12 h"])
        expect(op.description).toContain(words);
      for (const p of op.parameters)
        expect(p).toMatchObject({
          in: "header",
          required: true,
          schema: { type: "string" },
          example: expect.any(String),
        });
      expect(Object.keys(op.responses).sort()).toEqual(["2XX", "410", "default"]);
      const media = op.requestBody.content["application/json"];
      expect(media.example.type).toBe(name);
      expect(JSON.stringify(item)).not.toContain("$ref");
      // The example headers sign the example body with the example secret the description gives.
      const headers = Object.fromEntries(op.parameters.map((p) => [p.name, p.example]));
      // Recomputed here by the Standard Webhooks rule, not by the library that made it.
      const key = Buffer.from(EXAMPLE_SECRET.slice("whsec_".length), "base64");
      const signed = `${headers["webhook-id"]}.${headers["webhook-timestamp"]}.${JSON.stringify(media.example)}`;
      expect(headers["webhook-signature"]).toBe(`v1,${createHmac("sha256", key).update(signed).digest("base64")}`);
      expect(Number(headers["webhook-timestamp"])).toBe(Math.floor(Date.parse(media.example.timestamp) / 1000));
    }
  });
});
