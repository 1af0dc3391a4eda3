// W3C Trace Context end to end, as a webhook receiver and the logs see it: a
// traceparent sent with the RPC that creates a contact arrives on the webhook
// POST with the same trace id and its tracestate (organisation RPC → outbox →
// bus → fan-out → delivery worker → POST), on NATS JetStream (or the fixture's bus) and on the
// embedded start's in-process bus; a request without one, or with an invalid
// one, gets a new trace and succeeds; log lines carry the trace id.
import { randomUUID } from "node:crypto";
import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventType } from "../../gen/bizcard/events/v1/events_pb.js";
import { OrganisationService } from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import { WebhookService, type Owner } from "../../gen/bizcard/webhook/v1/webhook_pb.js";
import { InProcessBus } from "../../services/shared/event-bus/in-process-bus.js";
import { createLogger } from "../../services/shared/logger.js";
import type { ServiceApp } from "../../services/shared/service-app.js";
import {
  createOrganisationApp,
  createWebhookApp,
  startPlatform,
  type Platform,
  type StartedService,
} from "../support/platform.js";
import { waitFor } from "../support/processes.js";
import { startReceiver, type Answer, type Receiver } from "../support/receiver.js";

const TOKEN = "t".repeat(40);
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
const config = {
  WEBHOOK_ALLOW_INSECURE_TARGETS: "true",
  DELIVERY_RETRY_SCHEDULE_SECONDS: "0.2,0.2,0.2",
  DELIVERY_TIMEOUT_MS: "2000",
  DELIVERY_POLL_MS: "50",
};

const newTraceId = () => randomUUID().replaceAll("-", "");
const newSpanId = () => randomUUID().replaceAll("-", "").slice(0, 16);

/** The log lines of the services and the gateway, parsed. */
function captureLines() {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString("utf8").split("\n"))
        if (l.trim()) lines.push(JSON.parse(l) as Record<string, unknown>);
      done();
    },
  });
  return { lines, logger: createLogger("trace-test", "debug", sink) };
}

const variants = [
  { name: "the fixture's bus (NATS JetStream when available)", embedded: false },
  { name: "the embedded start's in-process bus", embedded: true },
];

describe.each(variants)("trace context on $name", ({ embedded }) => {
  let platform: Platform;
  let receiver: Receiver;
  let organisation: StartedService<ServiceApp>;
  const captured = captureLines();

  beforeAll(async () => {
    receiver = await startReceiver();
    if (embedded) {
      const prefix = `trace${randomUUID().slice(0, 8)}`;
      // Consumers first, publishers last, as scripts/start.ts does.
      platform = await startPlatform({
        token: TOKEN,
        config: { ...config, NATS_SUBJECT_PREFIX: prefix },
        bus: new InProcessBus(prefix),
        logger: captured.logger,
        organisation: false,
        auth: false,
        webhook: { create: (deps) => createWebhookApp(deps, { consumeGrantRevoked: false }) },
        delivery: true,
      });
      organisation = await platform.startService(createOrganisationApp);
    } else {
      platform = await startPlatform({
        token: TOKEN,
        config,
        logger: captured.logger,
        auth: true,
        webhook: true,
        delivery: true,
        gateway: { logger: captured.logger },
      });
      organisation = platform.organisation;
    }
  });

  afterAll(async () => {
    await receiver?.close();
    await platform?.stop();
  });

  async function subscribe(answer?: (n: number) => Answer) {
    const orgs = organisation.client(OrganisationService);
    const org = await orgs.createOrganisation({
      name: "Traced",
      ownerEmail: `${randomUUID()}@trace.test`,
      ownerPassword: "correct horse",
    });
    const owner = { organisationId: org.organisation!.id, clientId: `tracer-${randomUUID().slice(0, 8)}` } as Owner;
    const route = receiver.route(`/hooks/${randomUUID()}`, answer);
    await platform.webhook
      .client(WebhookService)
      .createSubscription({ owner, targetUrl: route.url, eventType: EventType.CONTACT_CREATED });
    const createContact = (headers?: Record<string, string>) =>
      orgs.createContact(
        {
          organisationId: owner.organisationId,
          fields: { firstName: "Ada", lastName: "Lovelace", email: "ada@example.test" },
        },
        { headers },
      );
    return { route, createContact };
  }

  const posted = async (route: { requests: { headers: Record<string, string | string[] | undefined> }[] }, n = 1) => {
    const request = await waitFor(() => route.requests[n - 1], 30_000, `webhook POST ${n}`);
    return String(request.headers.traceparent ?? "");
  };

  it("a traceparent sent with the RPC that creates a contact arrives on the webhook POST with the same trace id", async () => {
    const { route, createContact } = await subscribe();
    const traceId = newTraceId();
    const parentId = newSpanId();
    await createContact({ traceparent: `00-${traceId}-${parentId}-01`, tracestate: "vendor=opaque" });
    const received = TRACEPARENT.exec(await posted(route));
    expect(received).not.toBeNull();
    expect(received![1]).toBe(traceId);
    // A hop of its own: the delivery attempt is the receiver's parent, not the client.
    expect(received![2]).not.toBe(parentId);
    expect(received![2]).not.toBe("0".repeat(16));
    expect(received![3]).toBe("01");
    // Its tracestate beside it, unchanged (W3C Trace Context §3.3: sent on to outgoing requests).
    expect(route.requests[0]!.headers.tracestate).toBe("vendor=opaque");
  });

  it("a request without a traceparent starts a trace: the POST still has a valid one", async () => {
    const { route, createContact } = await subscribe();
    const created = await createContact();
    expect(created.contact?.id).toBeTruthy();
    expect(await posted(route)).toMatch(TRACEPARENT);
    expect(route.requests[0]!.headers.tracestate, "no tracestate was sent").toBeUndefined();
  });

  it("an invalid traceparent is ignored and a new trace started; the request succeeds", async () => {
    for (const invalid of [
      `00-${newTraceId().toUpperCase()}-${newSpanId()}-01`,
      `00-${"0".repeat(32)}-${newSpanId()}-01`,
      `00-${newTraceId()}-${"0".repeat(16)}-01`,
      "garbage",
    ]) {
      const { route, createContact } = await subscribe();
      // §3.3.1: a tracestate beside a traceparent that does not parse is not used either.
      const created = await createContact({ traceparent: invalid, tracestate: "vendor=opaque" });
      expect(created.contact?.id).toBeTruthy();
      const received = TRACEPARENT.exec(await posted(route));
      expect(received, invalid).not.toBeNull();
      expect(received![1]).not.toBe(invalid.slice(3, 35).toLowerCase());
      expect(received![1]).not.toBe("0".repeat(32));
      expect(route.requests[0]!.headers.tracestate, invalid).toBeUndefined();
    }
  });

  it("the lines logged for the request and for its delivery carry its trace id", async () => {
    // A first answer of 500: the failed attempt is logged (at info) while the delivery is sent.
    const { route, createContact } = await subscribe((n) => ({ status: n === 1 ? 500 : 200 }));
    const traceId = newTraceId();
    await createContact({
      traceparent: `00-${traceId}-${newSpanId()}-01`,
      tracestate: "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7",
    });
    await posted(route, 2);
    const traced = await waitFor(
      () => {
        const lines = captured.lines.filter((l) => l.traceId === traceId);
        const rpc = lines.find(
          (l) => l.msg === "rpc" && l.procedure === "bizcard.organisation.v1.OrganisationService/CreateContact",
        );
        const delivery = lines.find((l) => l.msg === "delivery attempt failed; retried");
        return rpc && delivery ? { rpc, delivery } : undefined;
      },
      10_000,
      "the request's and the delivery's log lines",
    );
    expect(traced.rpc.requestId).toEqual(expect.any(String));
    expect(traced.delivery.status).toBe(500);
    // The second attempt is the same trace, a new span.
    const [first, second] = route.requests.map((r) => String(r.headers.traceparent));
    expect(first!.slice(3, 35)).toBe(traceId);
    expect(second!.slice(3, 35)).toBe(traceId);
    expect(second!.slice(36, 52)).not.toBe(first!.slice(36, 52));
    // Every attempt sends the event's tracestate.
    expect(route.requests.map((r) => r.headers.tracestate)).toEqual([
      "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7",
      "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7",
    ]);
  });

  // The gateway runs in front of the fixture's services only (the embedded variant starts no auth service).
  if (!embedded)
    it("the gateway continues the client's trace on its RPCs and in its log line", async () => {
      const traceId = newTraceId();
      const res = await fetch(`${platform.base}/oauth/token`, {
        method: "POST",
        headers: {
          "content-type": "application/x-www-form-urlencoded",
          traceparent: `00-${traceId}-${newSpanId()}-01`,
        },
        body: "grant_type=client_credentials&client_id=bc_nobody&client_secret=bcs_nothing",
      });
      expect(res.status, await res.clone().text()).toBe(401);
      const lines = await waitFor(
        () => {
          const mine = captured.lines.filter((l) => l.traceId === traceId);
          const gateway = mine.find((l) => l.msg === "request" && l.url === "/oauth/token");
          const rpc = mine.find((l) => l.msg === "rpc" && String(l.procedure).startsWith("bizcard.auth."));
          return gateway && rpc ? { gateway, rpc } : undefined;
        },
        10_000,
        "the gateway's and the auth service's lines",
      );
      expect(lines.gateway.status).toBe(401);
      expect(lines.rpc.requestId).toBe(res.headers.get("x-request-id"));

      // The bearer check is one of the request's RPCs too.
      const checked = newTraceId();
      const refused = await fetch(`${platform.base}/oauth/me`, {
        headers: { authorization: "Bearer not-a-token", traceparent: `00-${checked}-${newSpanId()}-01` },
      });
      expect(refused.status).toBe(401);
      await waitFor(
        () =>
          captured.lines.find(
            (l) =>
              l.msg === "rpc" &&
              l.procedure === "bizcard.auth.v1.AuthService/AuthenticateAccessToken" &&
              l.traceId === checked,
          ),
        10_000,
        "the bearer check's line",
      );

      // Without one (or with an invalid one), the gateway starts the trace its RPCs continue.
      for (const traceparent of [undefined, "00-not-a-trace-01"]) {
        const started = await fetch(`${platform.base}/oauth/token`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded", ...(traceparent ? { traceparent } : {}) },
          body: "grant_type=client_credentials&client_id=bc_nobody&client_secret=bcs_nothing",
        });
        expect(started.status).toBe(401);
        const requestId = started.headers.get("x-request-id");
        const pair = await waitFor(
          () => {
            const gateway = captured.lines.find((l) => l.msg === "request" && l.requestId === requestId);
            const rpc = captured.lines.find((l) => l.msg === "rpc" && l.requestId === requestId);
            return gateway && rpc ? { gateway, rpc } : undefined;
          },
          10_000,
          "the lines of a request without a valid traceparent",
        );
        expect(pair.gateway.traceId).toMatch(/^[0-9a-f]{32}$/);
        expect(pair.rpc.traceId).toBe(pair.gateway.traceId);
      }
    });
});
