// The platform as docker-compose.yml runs it: each service and the gateway as
// its own process (support/distributed-platform.ts starts them). Administration
// goes through the `bizcard` command; the events it causes are read back from
// the stream; the RPC ports refuse callers without the internal credential;
// SIGTERM drains every process to exit code 0.
import { Code } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { AuthService } from "../../gen/bizcard/auth/v1/auth_pb.js";
import { DeliveryService } from "../../gen/bizcard/delivery/v1/delivery_pb.js";
import { EventType } from "../../gen/bizcard/events/v1/events_pb.js";
import { OrganisationService } from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import { WebhookService } from "../../gen/bizcard/webhook/v1/webhook_pb.js";
import { createRpcClient } from "../../services/shared/rpc/client.js";
import { uniqueName } from "../support/backends.js";
import { unpublishedOutboxRows } from "../support/outbox.js";
import { waitFor, type Spawned } from "../support/processes.js";
import {
  bizcard,
  composeVariableNames,
  connectNats,
  db,
  embedded,
  envs,
  mode,
  ports,
  PREFIX,
  procs,
  readStream,
  refused,
  RFC3339,
  rpcUrl,
  SERVICES,
  TOKEN,
  useDistributedPlatform,
  UUID,
} from "../support/distributed-platform.js";

useDistributedPlatform();

describe("the platform as separate processes", () => {
  let orgId: string;
  let contact: Record<string, string>;

  it("runs with the environment variable names docker-compose.yml sets", async () => {
    const compose = composeVariableNames();
    expect(compose.size).toBeGreaterThan(10);
    const used = new Set([
      ...Object.keys(envs.organisation),
      ...Object.keys(envs.webhook),
      ...Object.keys(envs.gateway),
    ]);
    expect(
      [...used].filter((k) => !compose.has(k)),
      "set here but not in docker-compose.yml",
    ).toEqual([]);
    expect(
      [...compose].filter((k) => !used.has(k)),
      "set in docker-compose.yml but not here",
    ).toEqual([]);
    // Every service the same, but for the webhook service's key (docker-compose.yml's x-webhook-env).
    const own = (name: string) => (name === "webhook" ? ["WEBHOOK_SECRET_ENCRYPTION_KEY"] : []);
    for (const name of SERVICES)
      expect(Object.keys(envs[name]).sort()).toEqual([...Object.keys(envs.organisation), ...own(name)].sort());

    const res = await fetch(`http://127.0.0.1:${ports.gateway}/readyz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      status: "ok",
      services: { auth: "ok", organisation: "ok", webhook: "ok", delivery: "ok" },
    });
    for (const name of SERVICES) {
      const r = await fetch(`${rpcUrl(name)}/readyz`);
      expect(await r.json(), name).toEqual({ status: "ok", checks: { database: "ok", bus: "ok" } });
    }
  });

  it("administers through the bizcard command, with the JSON shapes of CONTRACT.md", async () => {
    const email = `${uniqueName("owner")}@acme.test`;
    const org = (await bizcard([
      "org",
      "create",
      "--name",
      "Acme Cards",
      "--email",
      email,
      "--password",
      "correct horse battery",
      "--json",
    ])) as {
      organisation: { id: string; name: string };
      user: { id: string; email: string };
    };
    expect(org).toEqual({
      organisation: { id: expect.stringMatching(UUID), name: "Acme Cards" },
      user: { id: expect.stringMatching(UUID), email },
    });
    orgId = org.organisation.id;

    contact = (await bizcard([
      "contact",
      "create",
      "--org",
      orgId,
      "--first-name",
      "Ada",
      "--last-name",
      "Lovelace",
      "--email",
      "ada@example.com",
      "--company",
      "Engines",
      "--json",
    ])) as Record<string, string>;
    expect(Object.keys(contact).sort()).toEqual([
      "address",
      "company",
      "created_at",
      "email",
      "first_name",
      "id",
      "job_title",
      "last_name",
      "notes",
      "phone",
      "updated_at",
      "website",
    ]);
    expect(contact).toMatchObject({
      first_name: "Ada",
      last_name: "Lovelace",
      email: "ada@example.com",
      company: "Engines",
      job_title: "",
      phone: "",
    });
    expect(contact.id).toMatch(UUID);
    expect(contact.created_at).toMatch(RFC3339);
    expect(contact.updated_at).toMatch(RFC3339);

    const updated = (await bizcard([
      "contact",
      "update",
      "--org",
      orgId,
      "--id",
      contact.id!,
      "--job-title",
      "Analyst",
      "--company",
      "",
      "--json",
    ])) as Record<string, string>;
    expect(updated).toMatchObject({
      id: contact.id,
      first_name: "Ada",
      email: "ada@example.com",
      job_title: "Analyst",
      company: "",
      created_at: contact.created_at,
    });
    expect(Date.parse(updated.updated_at!)).toBeGreaterThanOrEqual(Date.parse(contact.created_at!));

    const client = (await bizcard([
      "client",
      "create",
      "--name",
      "X",
      "--redirect-uri",
      "https://app.example/cb",
      "--json",
    ])) as Record<string, unknown>;
    expect(Object.keys(client).sort()).toEqual(["client_id", "client_secret", "name", "redirect_uris", "scopes"]);
    expect(client).toMatchObject({ name: "X", redirect_uris: ["https://app.example/cb"] });
    expect(client.client_id).toMatch(/^bc_/);
    expect(client.client_secret).toMatch(/^bcs_.{32,}$/);
    expect(client.scopes).toEqual(["organisation:read", "webhooks:read", "webhooks:write", "contacts:read"]);

    const pub = (await bizcard([
      "client",
      "create",
      "--name",
      "Public",
      "--redirect-uri",
      "https://app.example/cb",
      "--public",
      "--json",
    ])) as Record<string, unknown>;
    expect(pub.client_secret, "a public client has no secret").toBeUndefined();
    expect(pub.client_id).not.toBe(client.client_id);
  });

  it("puts exactly one contact.created and one contact.updated on the stream, each with Nats-Msg-Id = event_id", {
    timeout: 90_000,
  }, async () => {
    expect(contact?.id, "needs the contact of the previous test").toBeDefined();
    const nc = await connectNats();
    const js = nc.jetstream();
    const jsm = await nc.jetstreamManager();
    const mine = async () => {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>(
        (_, reject) => (timer = setTimeout(() => reject(new Error("reading the stream took over 15 s")), 15_000)),
      );
      try {
        return (await Promise.race([readStream(js, jsm), timeout])).filter((m) => m.event.contact?.id === contact.id);
      } finally {
        clearTimeout(timer);
      }
    };
    await waitFor(
      async () => ((await mine()).length >= 2 ? true : undefined),
      30_000,
      "two contact events on the stream",
    );
    // Nothing more arrives: the organisation service has nothing left to publish.
    const organisationDb = mode.postgres ? db!.url : embedded[SERVICES.indexOf("organisation")]!.url;
    await waitFor(
      async () => ((await unpublishedOutboxRows(organisationDb)) === 0 ? true : undefined),
      30_000,
      "an empty outbox",
    );
    const messages = await mine();
    expect(messages.map((m) => m.event.type)).toEqual([EventType.CONTACT_CREATED, EventType.CONTACT_UPDATED]);
    expect(messages.map((m) => m.subject)).toEqual([`${PREFIX}.contact.created`, `${PREFIX}.contact.updated`]);
    for (const m of messages) {
      expect(m.event.eventId).toMatch(UUID);
      expect(m.msgId).toBe(m.event.eventId);
      expect(m.event.organisationId).toBe(orgId);
    }
    expect(messages[0]!.event.eventId).not.toBe(messages[1]!.event.eventId);
    expect(messages[0]!.event.contact?.company).toBe("Engines");
    expect(messages[1]!.event.contact?.company).toBe("");
    expect(messages[1]!.event.contact?.jobTitle).toBe("Analyst");
  });

  it("refuses an RPC without the internal credential on every service port", async () => {
    const noToken = { timeoutMs: 10_000 };
    const wrongToken = { timeoutMs: 10_000, internalToken: `${TOKEN}x` };
    for (const options of [noToken, wrongToken]) {
      const calls: [string, () => Promise<unknown>][] = [
        [
          "organisation",
          () =>
            createRpcClient(OrganisationService, { baseUrl: rpcUrl("organisation"), ...options }).getOrganisation({
              id: orgId,
            }),
        ],
        [
          "auth",
          () => createRpcClient(AuthService, { baseUrl: rpcUrl("auth"), ...options }).getClient({ clientId: "x" }),
        ],
        [
          "webhook",
          () => createRpcClient(WebhookService, { baseUrl: rpcUrl("webhook"), ...options }).listSubscriptions({}),
        ],
        [
          "delivery",
          () => createRpcClient(DeliveryService, { baseUrl: rpcUrl("delivery"), ...options }).listDeliveryAttempts({}),
        ],
      ];
      for (const [name, call] of calls) {
        const err = await refused(call());
        expect(err.code, `${name}: ${err.message}`).toBe(Code.Unauthenticated);
      }
    }
    // The same call with the credential goes through: the refusal was the credential's.
    const ok = await createRpcClient(OrganisationService, {
      baseUrl: rpcUrl("organisation"),
      timeoutMs: 10_000,
      internalToken: TOKEN,
    }).getOrganisation({
      id: orgId,
    });
    expect(ok.organisation?.name).toBe("Acme Cards");
  });

  it("logs one JSON line per request, with the caller's request id carried from the gateway into the service", async () => {
    const requestId = `trace-${Date.now()}`;
    const res = await fetch(`http://127.0.0.1:${ports.gateway}/oauth/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", "x-request-id": requestId },
      body: "grant_type=client_credentials&client_id=bc_x&client_secret=bcs_y",
    });
    expect(res.headers.get("x-request-id")).toBe(requestId);
    const lines = (p: Spawned) =>
      p
        .output()
        .split("\n")
        .filter((l) => l.startsWith("{"))
        .map((l) => JSON.parse(l) as Record<string, unknown>);
    const gatewayLine = await waitFor(
      () => lines(procs.gateway).find((l) => l.requestId === requestId && l.msg === "request"),
      10_000,
    );
    expect(gatewayLine).toMatchObject({ method: "POST", url: "/oauth/token", status: res.status });
    const authLines = await waitFor(() => {
      const found = lines(procs.auth).filter((l) => l.requestId === requestId);
      return found.length ? found : undefined;
    }, 10_000);
    expect(authLines).toHaveLength(1);
    expect(authLines[0]).toMatchObject({ procedure: "bizcard.auth.v1.AuthService/ExchangeToken", msg: "rpc" });
  });

  it("drains every process on SIGTERM to exit code 0 within a few seconds", async () => {
    const names = ["gateway", ...SERVICES] as const;
    const results = await Promise.all(
      names.map(async (name) => {
        const p = procs[name];
        expect(p.child.exitCode, `${name} died early:\n${p.output()}`).toBeNull();
        const t0 = performance.now();
        p.child.kill("SIGTERM");
        const code = await Promise.race([p.exited, new Promise((r) => setTimeout(r, 15_000, "timeout"))]);
        return { name, code, ms: Math.round(performance.now() - t0), output: p.output() };
      }),
    );
    console.log(`[distributed] SIGTERM to exit: ${results.map((r) => `${r.name} ${r.ms} ms`).join(", ")}`);
    for (const r of results) {
      expect(r.code, `${r.name}:\n${r.output.slice(-2000)}`).toBe(0);
      expect(r.output, r.name).toMatch(/"msg":"stopped"/);
    }
  }, 60_000);
});
