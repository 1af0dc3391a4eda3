// The subscription API and the contacts sample as a client application sees
// them: real HTTP to the gateway, real access tokens (client_credentials of
// owned clients), in front of the real auth, organisation and webhook
// services on PostgreSQL and NATS. The webhook service runs strict (https,
// public destinations only) and resolves target hosts with its c-ares
// resolver against a DNS server of this test (support/dns-server.ts), which
// answers public and private addresses, NXDOMAIN, SERVFAIL, or nothing.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AuthService } from "../gen/bizcard/auth/v1/auth_pb.js";
import { EventType } from "../gen/bizcard/events/v1/events_pb.js";
import { OrganisationService } from "../gen/bizcard/organisation/v1/organisation_pb.js";
import { WebhookService } from "../gen/bizcard/webhook/v1/webhook_pb.js";
import { contactJson } from "../services/shared/contact-json.js";
import type { ServiceApp } from "../services/shared/service-app.js";
import { apiCaller, expectError, type AppClient } from "./support/api-client.js";
import { TestDnsServer } from "./support/dns-server.js";
import { startPlatform, type Platform, type StartedService } from "./support/platform.js";
import { waitFor } from "./support/processes.js";

const TOKEN = "s".repeat(40);
const PATH = "/oauth/webhooks/subscriptions";
const DNS_TIMEOUT_MS = 2000;
const EVENT_TYPE_ERROR = "event_type: expected contact.created or contact.updated";

let dns: TestDnsServer;
let platform: Platform;
let organisation: StartedService<ServiceApp>;
let auth: StartedService<ServiceApp>;
let webhook: StartedService<ServiceApp>;
let base: string;
let orgId: string;
let otherOrgId: string;

type Client = AppClient;
/** Owned by orgId, every scope. */
let app: Client;
/** Another application of the same organisation. */
let sibling: Client;
/** An application of another organisation. */
let foreign: Client;
/** webhooks:read only. */
let reader: Client;
/** webhooks:read and webhooks:write, but not contacts:read. */
let writer: Client;
/** contacts:read only. */
let contactsOnly: Client;

const { tokenOf, call } = apiCaller(() => base);


beforeAll(async () => {
  dns = await TestDnsServer.start({
    "hooks.example.test": { A: ["93.184.215.14"] },
    "other.example.test": { A: ["93.184.215.15"], AAAA: ["2606:4700:4700::1111"] },
    "internal.example.test": { A: ["10.0.0.7"] },
    "mixed.example.test": { A: ["93.184.215.14"], AAAA: ["::1"] },
    "hang.example.test": "drop",
    "broken.example.test": "servfail",
  });
  platform = await startPlatform({
    token: TOKEN,
    auth: true,
    webhook: {
      config: {
        WEBHOOK_ALLOW_INSECURE_TARGETS: "false",
        WEBHOOK_DNS_SERVERS: dns.address,
        WEBHOOK_DNS_TIMEOUT_MS: String(DNS_TIMEOUT_MS),
      },
    },
    gateway: { publicUrlPort: true, bus: true, serviceUrls: {} },
  });
  ({ organisation, auth, webhook, base } = platform);

  const orgs = organisation.client(OrganisationService);
  orgId = (await orgs.createOrganisation({ name: "Hooked Cards", ownerEmail: "owner@hooked.test", ownerPassword: "password-h" })).organisation!.id;
  otherOrgId = (await orgs.createOrganisation({ name: "Elsewhere", ownerEmail: "owner@elsewhere.test", ownerPassword: "password-e" })).organisation!.id;
  const clients = auth.client(AuthService);
  const make = async (name: string, owner: string, scopes: string[] = []): Promise<Client> => {
    const res = await clients.createClient({ name, ownerOrganisationId: owner, scopes });
    return { id: res.client!.clientId, secret: res.clientSecret };
  };
  app = await make("Zap", orgId);
  sibling = await make("Make", orgId);
  foreign = await make("Zap elsewhere", otherOrgId);
  reader = await make("Reader", orgId, ["webhooks:read"]);
  writer = await make("Writer", orgId, ["webhooks:read", "webhooks:write"]);
  contactsOnly = await make("Poller", orgId, ["contacts:read"]);
}, 60_000);

afterAll(async () => {
  await platform?.stop();
  await dns?.close();
});



interface SubscriptionBody {
  id: number;
  target_url: string;
  event_type: string;
  created_at: string;
  updated_at: string;
  secret?: string;
}

async function create(client: Client, target_url: string, event_type = "contact.created"): Promise<SubscriptionBody> {
  const res = await call(client, "POST", PATH, { target_url, event_type });
  const body = (await res.json()) as SubscriptionBody;
  expect(res.status, JSON.stringify(body)).toBe(201);
  return body;
}


const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe("create", () => {
  it("201 with Location and the subscription plus its secret, once; GET at Location shows it without the secret", async () => {
    const res = await call(app, "POST", PATH, { target_url: "https://hooks.example.test/zap/1?x=1", event_type: "contact.created" });
    expect(res.status).toBe(201);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    expect(res.headers.get("cache-control")).toBe("no-store");
    const body = (await res.json()) as SubscriptionBody;
    expect(Object.keys(body).sort()).toEqual(["created_at", "disabled_at", "disabled_reason", "event_type", "id", "secret", "target_url", "updated_at"]);
    expect(Number.isInteger(body.id) && body.id > 0).toBe(true);
    expect(body.target_url).toBe("https://hooks.example.test/zap/1?x=1");
    expect(body.event_type).toBe("contact.created");
    expect(body.created_at).toMatch(RFC3339);
    expect(body.updated_at).toBe(body.created_at);
    expect(body.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(res.headers.get("location")).toBe(`${base}${PATH}/${body.id}`);

    const got = await call(app, "GET", new URL(res.headers.get("location")!).pathname);
    expect(got.status).toBe(200);
    expect(got.headers.get("cache-control")).toBe("no-store");
    const { secret: _secret, ...withoutSecret } = body;
    expect(await got.json()).toEqual(withoutSecret);

    // The secret shown once is the one the delivery service signs with (ListSubscribers).
    const { subscribers } = await webhook.client(WebhookService).listSubscribers({ organisationId: orgId, eventType: EventType.CONTACT_CREATED });
    expect(subscribers.find((x) => Number(x.subscriptionId) === body.id)).toMatchObject({ clientId: app.id, targetUrl: body.target_url, secret: body.secret });
  });

  it("is idempotent: the same target_url and event_type again is 200 with the existing subscription and no secret", async () => {
    const first = await create(app, "https://hooks.example.test/zap/idem", "contact.updated");
    // The same URL once normalised (scheme and host case, explicit default port).
    const again = await call(app, "POST", PATH, { target_url: "HTTPS://Hooks.Example.TEST:443/zap/idem", event_type: "contact.updated" });
    expect(again.status).toBe(200);
    expect(again.headers.get("location")).toBeNull();
    const { secret: _secret, ...existing } = first;
    expect(await again.json()).toEqual(existing);
    // Another application of the organisation with the same URL gets its own.
    const theirs = await create(sibling, "https://hooks.example.test/zap/idem", "contact.updated");
    expect(theirs.id).not.toBe(first.id);
    expect(theirs.secret).not.toBe(first.secret);
  });

  it("400 naming the problem, for each bad target_url or event_type, and stores nothing", async () => {
    const client = { ...sibling };
    const before = (await (await call(client, "GET", `${PATH}?limit=100`)).json()) as unknown[];
    const cases: [body: unknown, description: string | RegExp][] = [
      [{ target_url: "not a url", event_type: "contact.created" }, /^target_url: expected an absolute URL/],
      [{ target_url: "/relative", event_type: "contact.created" }, /^target_url: expected an absolute URL/],
      [{ target_url: "ftp://hooks.example.test/", event_type: "contact.created" }, "target_url: expected an https URL"],
      [{ target_url: "http://hooks.example.test/", event_type: "contact.created" }, "target_url: must use https (http is not allowed)"],
      [{ target_url: "https://u:p@hooks.example.test/", event_type: "contact.created" }, /^target_url: must not contain user-info/],
      [{ target_url: `https://hooks.example.test/${"a".repeat(2048)}`, event_type: "contact.created" }, "target_url: at most 2048 characters"],
      [{ target_url: "https://10.1.2.3/hook", event_type: "contact.created" }, /^target_url: points to a private address/],
      [{ target_url: "https://127.0.0.1/hook", event_type: "contact.created" }, /^target_url: points to a loopback address/],
      [{ target_url: "https://[fe80::1]/hook", event_type: "contact.created" }, /^target_url: points to a link-local address/],
      [{ target_url: "https://localhost/hook", event_type: "contact.created" }, /loopback name/],
      [{ target_url: "https://internal.example.test/hook", event_type: "contact.created" }, /^target_url: host internal\.example\.test resolves to a private address/],
      [{ target_url: "https://mixed.example.test/hook", event_type: "contact.created" }, /resolves to a loopback address/],
      [{ target_url: "https://nowhere.example.test/hook", event_type: "contact.created" }, "target_url: host nowhere.example.test does not resolve"],
      [{ target_url: "https://hooks.example.test:22/", event_type: "contact.created" }, /^target_url: port 22 is not allowed/],
      // Control characters are refused, never silently dropped ("exa\tmple" must not become "example").
      [{ target_url: "https://hooks.exa\tmple.test/", event_type: "contact.created" }, /^target_url: must not contain control characters/],
      [{ target_url: "https://hooks.example.test/a\nb", event_type: "contact.created" }, /^target_url: must not contain control characters/],
      [{ target_url: "https://hooks.example.test/", event_type: "contact.deleted" }, EVENT_TYPE_ERROR],
      [{ target_url: "https://hooks.example.test/", event_type: "" }, EVENT_TYPE_ERROR],
      [{ target_url: "https://hooks.example.test/" }, "event_type: required (contact.created or contact.updated)"],
      [{ event_type: "contact.created" }, "target_url: required"],
      [{ target_url: "", event_type: "contact.created" }, "target_url: required"],
      [{ target_url: 42, event_type: "contact.created" }, "target_url: expected a string"],
      [{ target_url: "https://hooks.example.test/", event_type: null }, "event_type: expected a string"],
      [{ target_url: "https://hooks.example.test/", event: "contact.created" }, /^unknown field "event"/],
      [[], "the body must be a JSON object"],
      ["\"https://hooks.example.test/\"", "the body must be a JSON object"],
    ];
    for (const [body, description] of cases) {
      await expectError(await call(client, "POST", PATH, body), 400, "invalid_request", description);
    }
    expect(await (await call(client, "GET", `${PATH}?limit=100`)).json()).toEqual(before);
  });

  it("503 when the target's DNS fails or does not answer, without holding up other creates", async () => {
    await tokenOf(app);
    await tokenOf(foreign);
    let hangingSettled = false;
    const hanging = Promise.all([1, 2, 3, 4, 5, 6].map((i) => call(app, "POST", PATH, { target_url: `https://hang.example.test/${i}`, event_type: "contact.created" })));
    void hanging.then(() => (hangingSettled = true));
    // Six lookups wait for an answer that never comes...
    await waitFor(() => (dns.asked.filter((q) => q === "hang.example.test/A").length >= 6 ? true : undefined), 10_000, "six lookups in flight");
    // ...while another tenant's create goes through, before any of them gives up.
    const quick = await call(foreign, "POST", PATH, { target_url: "https://hooks.example.test/foreign/quick", event_type: "contact.created" });
    expect(quick.status).toBe(201);
    expect(hangingSettled).toBe(false);
    for (const res of await hanging) {
      expect(res.headers.get("retry-after")).toBe("5");
      await expectError(res, 503, "temporarily_unavailable", /^target_url: the host hang\.example\.test could not be resolved right now/);
    }
    const servfail = await call(app, "POST", PATH, { target_url: "https://broken.example.test/", event_type: "contact.created" });
    await expectError(servfail, 503, "temporarily_unavailable", /^target_url: the host broken\.example\.test could not be resolved right now/);
  });
});

describe("read, update, delete", () => {
  it("PUT changes what is sent, moves updated_at only when something changed, and checks both fields", async () => {
    const s = await create(app, "https://hooks.example.test/put/1");
    const path = `${PATH}/${s.id}`;
    await waitFor(() => (Date.now() > Date.parse(s.updated_at) + 1 ? true : undefined), 5_000, "the clock to pass updated_at");

    const moved = await call(app, "PUT", path, { target_url: "https://other.example.test/put/2" });
    expect(moved.status).toBe(200);
    expect(moved.headers.get("cache-control")).toBe("no-store");
    const m = (await moved.json()) as SubscriptionBody;
    expect(m).toEqual({ ...m, id: s.id, target_url: "https://other.example.test/put/2", event_type: "contact.created", created_at: s.created_at });
    expect(Object.keys(m)).not.toContain("secret");
    expect(Date.parse(m.updated_at)).toBeGreaterThan(Date.parse(s.updated_at));

    const retyped = (await (await call(app, "PUT", path, { event_type: "contact.updated" })).json()) as SubscriptionBody;
    expect(retyped.event_type).toBe("contact.updated");
    expect(retyped.target_url).toBe("https://other.example.test/put/2");

    // Neither field, no body at all, the same values, or the object sent back as read: nothing changes.
    for (const res of [
      await call(app, "PUT", path, {}),
      await call(app, "PUT", path),
      await call(app, "PUT", path, { target_url: "https://OTHER.example.test:443/put/2", event_type: "contact.updated" }),
      await call(app, "PUT", path, { ...retyped, secret: "whsec_ignored" }),
    ]) {
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual(retyped);
    }

    await expectError(await call(app, "PUT", path, { event_type: "contact.removed" }), 400, "invalid_request", EVENT_TYPE_ERROR);
    await expectError(await call(app, "PUT", path, { target_url: "http://hooks.example.test/" }), 400, "invalid_request", "target_url: must use https (http is not allowed)");
    await expectError(await call(app, "PUT", path, { target_url: "https://internal.example.test/" }), 400, "invalid_request", /resolves to a private address/);
    await expectError(await call(app, "PUT", path, { target_url: "https://hooks.example.test/\u0000" }), 400, "invalid_request", /control characters/);
    await expectError(await call(app, "PUT", path, { target_url: "https://hang.example.test/" }), 503, "temporarily_unavailable");
    await expectError(await call(app, "PUT", path, { events: ["contact.created"] }), 400, "invalid_request", /^unknown field "events"/);
    expect(await (await call(app, "GET", path)).json()).toEqual(retyped);

    // Pointing it at what another of the pair's subscriptions already is: 409.
    const twin = await create(app, "https://hooks.example.test/put/twin", "contact.updated");
    await expectError(
      await call(app, "PUT", path, { target_url: twin.target_url }),
      409,
      "conflict",
      `a subscription with this target_url and event_type already exists (id ${twin.id})`,
    );
  });

  it("DELETE is 204 with no body; afterwards the subscription is 404 everywhere", async () => {
    const s = await create(app, "https://hooks.example.test/delete/me");
    const path = `${PATH}/${s.id}`;
    const res = await call(app, "DELETE", path);
    expect(res.status).toBe(204);
    expect(await res.text()).toBe("");
    for (const [method, body] of [["GET"], ["PUT", { event_type: "contact.updated" }], ["DELETE"]] as const) {
      await expectError(await call(app, method, path, body), 404, "not_found", "subscription not found");
    }
    const list = (await (await call(app, "GET", `${PATH}?limit=100`)).json()) as SubscriptionBody[];
    expect(list.map((x) => x.id)).not.toContain(s.id);
  });

  it("{id} must be a positive integer (400); another application's or organisation's subscription is 404", async () => {
    for (const id of ["abc", "0", "-1", "1.5", "1e3", "%201", "9223372036854775808", "99999999999999999999"]) {
      for (const [method, body] of [["GET"], ["PUT", {}], ["DELETE"]] as const) {
        await expectError(await call(app, method, `${PATH}/${id}`, body), 400, "invalid_request", /^id: expected a positive integer/);
      }
    }
    await expectError(await call(app, "GET", `${PATH}/9223372036854775807`), 404, "not_found");

    const mine = await create(app, "https://hooks.example.test/private/mine");
    for (const stranger of [sibling, foreign]) {
      for (const [method, body] of [["GET"], ["PUT", { target_url: "https://hooks.example.test/stolen" }], ["DELETE"]] as const) {
        await expectError(await call(stranger, method, `${PATH}/${mine.id}`, body), 404, "not_found", "subscription not found");
      }
      const theirs = (await (await call(stranger, "GET", `${PATH}?limit=100`)).json()) as SubscriptionBody[];
      expect(theirs.map((x) => x.id)).not.toContain(mine.id);
    }
    const { secret: _secret, ...unchanged } = mine;
    expect(await (await call(app, "GET", `${PATH}/${mine.id}`)).json()).toEqual(unchanged);
  });
});

describe("list", () => {
  it("a bare array, newest first, paged by limit with Link rel=next until the end", async () => {
    const client = await ownClient("Pager");
    const made: SubscriptionBody[] = [];
    for (let i = 0; i < 5; i++) made.push(await create(client, `https://hooks.example.test/page/${i}`, i % 2 ? "contact.updated" : "contact.created"));
    const expected = made.reverse().map(({ secret: _s, ...rest }) => rest);

    const all = await call(client, "GET", PATH);
    expect(all.status).toBe(200);
    expect(all.headers.get("cache-control")).toBe("no-store");
    expect(all.headers.get("link")).toBeNull();
    expect(await all.json()).toEqual(expected);

    const pages: SubscriptionBody[][] = [];
    let next: string | undefined = `${base}${PATH}?limit=2`;
    while (next) {
      const res = await fetch(next, { headers: { authorization: `Bearer ${await tokenOf(client)}` } });
      expect(res.status).toBe(200);
      pages.push((await res.json()) as SubscriptionBody[]);
      const link = res.headers.get("link");
      if (link) {
        const match = /^<([^>]+)>; rel="next"$/.exec(link);
        expect(match, link).not.toBeNull();
        expect(match![1]!.startsWith(`${base}${PATH}?limit=2&cursor=`)).toBe(true);
        next = match![1];
      } else next = undefined;
    }
    expect(pages.map((p) => p.length)).toEqual([2, 2, 1]);
    expect(pages.flat()).toEqual(expected);
  });

  it("400 for a limit outside 1-100, a repeated one, or a cursor it did not issue", async () => {
    for (const limit of ["0", "101", "-1", "abc", "1.5", ""]) {
      await expectError(await call(app, "GET", `${PATH}?limit=${limit}`), 400, "invalid_request", "limit: expected a whole number from 1 to 100");
    }
    await expectError(await call(app, "GET", `${PATH}?limit=1&limit=2`), 400, "invalid_request", "limit is included more than once");
    await expectError(await call(app, "GET", `${PATH}?cursor=garbage`), 400, "invalid_request", /^cursor: not a cursor this server issued/);
    expect((await call(app, "GET", `${PATH}?limit=100`)).status).toBe(200);
  });
});

describe("tokens and scopes (RFC 6750)", () => {
  it("401 without a token or with a bad one, on every route", async () => {
    for (const [method, path, body] of [
      ["GET", PATH],
      ["POST", PATH, { target_url: "https://hooks.example.test/", event_type: "contact.created" }],
      ["GET", `${PATH}/1`],
      ["PUT", `${PATH}/1`, {}],
      ["DELETE", `${PATH}/1`],
      ["GET", "/oauth/contacts"],
    ] as const) {
      const none = await call(undefined, method, path, body);
      expect(none.headers.get("www-authenticate")).toBe('Bearer realm="bizcard"');
      await expectError(none, 401, "invalid_token");
      const bad = await call(undefined, method, path, body, { authorization: "Bearer bca_not-a-real-token" });
      expect(bad.headers.get("www-authenticate")).toMatch(/^Bearer realm="bizcard", error="invalid_token"/);
      await expectError(bad, 401, "invalid_token");
    }
  });

  it("403 insufficient_scope naming the scope: webhooks:read to read, webhooks:write to change, contacts:read to subscribe", async () => {
    const body = { target_url: "https://hooks.example.test/scoped", event_type: "contact.created" };
    const cases: [Client, string, string, unknown, string][] = [
      [contactsOnly, "GET", PATH, undefined, "webhooks:read"],
      [contactsOnly, "GET", `${PATH}/1`, undefined, "webhooks:read"],
      [reader, "POST", PATH, body, "webhooks:write"],
      [reader, "PUT", `${PATH}/1`, {}, "webhooks:write"],
      [reader, "DELETE", `${PATH}/1`, undefined, "webhooks:write"],
      [writer, "POST", PATH, body, "contacts:read"],
      [writer, "PUT", `${PATH}/1`, {}, "contacts:read"],
      [reader, "GET", "/oauth/contacts", undefined, "contacts:read"],
    ];
    for (const [client, method, path, payload, scope] of cases) {
      const res = await call(client, method, path, payload);
      expect(res.headers.get("www-authenticate"), `${method} ${path}`).toBe(
        `Bearer realm="bizcard", error="insufficient_scope", error_description="this resource needs the scope ${scope}", scope="${scope}"`,
      );
      await expectError(res, 403, "insufficient_scope", `this resource needs the scope ${scope}`);
    }
    // What each may do: read with webhooks:read; delete with webhooks:write alone.
    expect((await call(reader, "GET", PATH)).status).toBe(200);
    await expectError(await call(writer, "DELETE", `${PATH}/9223372036854775807`), 404, "not_found");
  });

  it("refuses a token in the query string", async () => {
    const res = await fetch(`${base}${PATH}?access_token=${await tokenOf(app)}`);
    await expectError(res, 400, "invalid_request", /Authorization header/);
  });
});

describe("bodies", () => {
  it("413 over 64 KiB, 415 for anything but JSON, 400 for malformed JSON or a repeated field", async () => {
    const big = JSON.stringify({ target_url: `https://hooks.example.test/${"x".repeat(70 * 1024)}`, event_type: "contact.created" });
    await expectError(await call(app, "POST", PATH, big), 413, "payload_too_large");
    const form = new URLSearchParams({ target_url: "https://hooks.example.test/form", event_type: "contact.created" }).toString();
    for (const type of ["application/x-www-form-urlencoded", "text/plain", "application/xml"]) {
      await expectError(await call(app, "POST", PATH, form, { "content-type": type }), 415, "unsupported_media_type");
      await expectError(await call(app, "PUT", `${PATH}/1`, form, { "content-type": type }), 415, "unsupported_media_type");
    }
    await expectError(await call(app, "POST", PATH, "{\"target_url\": "), 400, "invalid_request", "the request body could not be parsed");
    await expectError(await call(app, "POST", PATH, ""), 400, "invalid_request");
    await expectError(
      await call(app, "POST", PATH, '{"target_url": "https://hooks.example.test/a", "target_url": "https://hooks.example.test/b", "event_type": "contact.created"}'),
      400,
      "invalid_request",
      "parameter target_url is included more than once",
    );
    // JSON with a charset parameter is JSON.
    const ok = await call(app, "POST", PATH, { target_url: "https://hooks.example.test/charset", event_type: "contact.created" }, { "content-type": "application/json; charset=utf-8" });
    expect(ok.status).toBe(201);
  });

  it("405 with Allow for a method the path does not have", async () => {
    const res = await call(app, "PATCH", `${PATH}/1`, {});
    expect(res.headers.get("allow")).toBe("GET, HEAD, PUT, DELETE");
    await expectError(res, 405, "method_not_allowed");
  });
});

/** A fresh application of the organisation (its own pair), every scope. */
async function ownClient(name: string): Promise<Client> {
  const res = await auth.client(AuthService).createClient({ name, ownerOrganisationId: orgId });
  return { id: res.client!.clientId, secret: res.clientSecret };
}

describe("limits", () => {
  it("100 subscriptions per pair; past it a clear 400, even when creates race; other pairs unaffected", async () => {
    const client = await ownClient("Busy");
    const url = (i: number) => `https://hooks.example.test/cap/${i}`;
    for (let batch = 0; batch < 9; batch++) {
      const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => call(client, "POST", PATH, { target_url: url(batch * 10 + i), event_type: "contact.created" })));
      expect(answers.map((r) => r.status)).toEqual(Array(10).fill(201));
    }
    // 90 made; 20 race for the last 10 places.
    const race = await Promise.all(Array.from({ length: 20 }, (_, i) => call(client, "POST", PATH, { target_url: url(90 + i), event_type: "contact.created" })));
    expect(race.filter((r) => r.status === 201)).toHaveLength(10);
    const refused = race.filter((r) => r.status !== 201);
    expect(refused).toHaveLength(10);
    for (const res of refused) {
      await expectError(
        res,
        400,
        "invalid_request",
        "this application already has 100 subscriptions in this organisation, the most allowed; delete one before creating another",
      );
    }
    // At the cap, the same create again is still the existing subscription; after a delete there is room.
    const page = (await (await call(client, "GET", `${PATH}?limit=100`)).json()) as SubscriptionBody[];
    expect(page).toHaveLength(100);
    expect((await call(client, "POST", PATH, { target_url: page[0]!.target_url, event_type: "contact.created" })).status).toBe(200);
    expect((await call(client, "DELETE", `${PATH}/${page[0]!.id}`)).status).toBe(204);
    expect((await call(client, "POST", PATH, { target_url: url(500), event_type: "contact.created" })).status).toBe(201);
    // Another application of the organisation has room of its own.
    expect((await call(sibling, "POST", PATH, { target_url: url(0), event_type: "contact.created" })).status).toBe(201);
  });
});

describe("GET /oauth/contacts", () => {
  it("the organisation's most recent contacts, newest first, as events carry them; limit default 10, Link to page", async () => {
    const orgs = organisation.client(OrganisationService);
    const made = [];
    for (let i = 0; i < 12; i++) {
      const res = await orgs.createContact({ organisationId: orgId, fields: { firstName: `Ada${i}`, lastName: "Lovelace", email: `ada${i}@example.test`, company: "Engines" } });
      made.push(contactJson(res.contact!));
    }
    await orgs.createContact({ organisationId: otherOrgId, fields: { firstName: "Not", lastName: "Mine" } });
    const newestFirst = made.reverse();

    const res = await call(contactsOnly, "GET", "/oauth/contacts");
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(await res.json()).toEqual(newestFirst.slice(0, 10));
    const link = res.headers.get("link")!;
    expect(link).toMatch(new RegExp(`^<${base}/oauth/contacts\\?limit=10&cursor=[^>]+>; rel="next"$`));
    const rest = await fetch(/^<([^>]+)>/.exec(link)![1]!, { headers: { authorization: `Bearer ${await tokenOf(contactsOnly)}` } });
    expect(await rest.json()).toEqual(newestFirst.slice(10));
    expect(rest.headers.get("link")).toBeNull();

    const three = await call(app, "GET", "/oauth/contacts?limit=3");
    expect(await three.json()).toEqual(newestFirst.slice(0, 3));
    const theirs = (await (await call(foreign, "GET", "/oauth/contacts?limit=100")).json()) as { first_name: string }[];
    expect(theirs.map((c) => c.first_name)).toEqual(["Not"]);
    for (const limit of ["0", "101", "x"]) {
      await expectError(await call(app, "GET", `/oauth/contacts?limit=${limit}`), 400, "invalid_request", "limit: expected a whole number from 1 to 100");
    }
    await expectError(await call(app, "GET", "/oauth/contacts?cursor=nope"), 400, "invalid_request", /^cursor: /);
  });
});

describe("grants and subscriptions are tied", () => {
  it("revoking the organisation's grant to the application deletes that pair's subscriptions, and only those", async () => {
    const client = await ownClient("Revoked");
    const doomed = [await create(client, "https://hooks.example.test/revoked/1"), await create(client, "https://hooks.example.test/revoked/2", "contact.updated")];
    const kept = await create(sibling, "https://hooks.example.test/revoked/kept");
    const rpc = webhook.client(WebhookService);
    const pair = { organisationId: orgId, clientId: client.id };
    expect((await rpc.listSubscriptions({ owner: pair })).subscriptions.map((s) => Number(s.id))).toEqual(doomed.map((s) => s.id).reverse());
    await auth.client(AuthService).revokeGrant({ organisationId: orgId, clientId: client.id });
    await waitFor(async () => ((await rpc.listSubscriptions({ owner: pair })).subscriptions.length === 0 ? true : undefined), 15_000, "the pair's subscriptions to go");
    expect((await call(sibling, "GET", `${PATH}/${kept.id}`)).status).toBe(200);
    await expectError(await call(client, "GET", PATH), 401, "invalid_token");
  });
});
