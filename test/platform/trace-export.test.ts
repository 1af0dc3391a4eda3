// Span export: with OTEL_EXPORTER_OTLP_ENDPOINT set, spans leave through the
// OpenTelemetry SDK (OTLP/HTTP, JSON) to a loopback collector; unset, the
// tracing module reports "off" and nothing is sent. The platform runs in this
// process, so the tracing this file starts is the services' own.
import { randomUUID } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventType } from "../../gen/bizcard/events/v1/events_pb.js";
import { OrganisationService } from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import { WebhookService, type Owner } from "../../gen/bizcard/webhook/v1/webhook_pb.js";
import { startSpan, startTracing, tracesUrl, tracingState, type Tracing } from "../../services/shared/trace/tracing.js";
import { createRpcClient } from "../../services/shared/rpc/client.js";
import { TEST_NATS_URL, createTestDatabase, testConfig, type TestDatabase } from "../support/backends.js";
import { startPlatform, type Platform } from "../support/platform.js";
import { freePort, httpReady, spawnTs, waitFor, type Spawned } from "../support/processes.js";
import { startReceiver, type Receiver } from "../support/receiver.js";
import { deleteStream } from "../support/stream.js";

interface ExportedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  service: string;
  path: string;
}

/** A loopback OTLP/HTTP collector: every span of every POST, with its resource's service.name. */
async function startCollector() {
  const spans: ExportedSpan[] = [];
  const requests: { path: string; contentType: string }[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      requests.push({ path: req.url ?? "", contentType: String(req.headers["content-type"]) });
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as {
        resourceSpans: {
          resource: { attributes: { key: string; value: { stringValue?: string } }[] };
          scopeSpans: { spans: Omit<ExportedSpan, "service" | "path">[] }[];
        }[];
      };
      for (const rs of body.resourceSpans) {
        const service = rs.resource.attributes.find((a) => a.key === "service.name")?.value.stringValue ?? "";
        for (const ss of rs.scopeSpans) {
          for (const s of ss.spans) {
            spans.push({
              ...s,
              traceId: hex(s.traceId),
              spanId: hex(s.spanId),
              parentSpanId: s.parentSpanId ? hex(s.parentSpanId) : undefined,
              service,
              path: req.url ?? "",
            });
          }
        }
      }
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans,
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** OTLP/JSON ids are hex; accept base64 too (protobuf-style JSON mapping). */
const hex = (id: string) => (/^[0-9a-f]+$/.test(id) ? id : Buffer.from(id, "base64").toString("hex"));

const newTraceId = () => randomUUID().replaceAll("-", "");
const newSpanId = () => randomUUID().replaceAll("-", "").slice(0, 16);

let collector: Awaited<ReturnType<typeof startCollector>>;

beforeAll(async () => {
  collector = await startCollector();
});

afterAll(async () => {
  await collector?.close();
});

describe("without an OTLP endpoint", () => {
  it("reports off, starts no exporter, and work still gets a traceparent", async () => {
    expect(tracesUrl({})).toBeUndefined();
    const tracing = await startTracing("off-test", {});
    expect(tracing.state).toBe("off");
    expect(tracingState()).toBe("off");
    const parent = `00-${newTraceId()}-${newSpanId()}-01`;
    const span = startSpan("work", parent, "server");
    expect(span.traceparent.slice(0, 35)).toBe(parent.slice(0, 35));
    span.end();
    await tracing.flush();
    await tracing.shutdown();
    expect(collector.requests).toEqual([]);
  });

  it("reads the standard variables: the traces endpoint as is, the base endpoint with /v1/traces", () => {
    expect(tracesUrl({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318/" })).toBe(
      "http://collector:4318/v1/traces",
    );
    expect(
      tracesUrl({
        OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318",
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://other:4318/traces",
      }),
    ).toBe("http://other:4318/traces");
  });
});

describe("with OTEL_EXPORTER_OTLP_ENDPOINT", () => {
  let tracing: Tracing;
  let platform: Platform;
  let receiver: Receiver;

  beforeAll(async () => {
    tracing = await startTracing("trace-export", { OTEL_EXPORTER_OTLP_ENDPOINT: collector.base });
    receiver = await startReceiver();
    platform = await startPlatform({
      config: { WEBHOOK_ALLOW_INSECURE_TARGETS: "true", DELIVERY_POLL_MS: "50" },
      webhook: true,
      delivery: true,
    });
  });

  afterAll(async () => {
    await receiver?.close();
    await platform?.stop();
    await tracing?.shutdown();
  });

  it("exports the spans of a contact's creation, its event's publish and fan-out, and its webhook POST, in the client's trace", async () => {
    expect(tracing.state).toBe("on");
    expect(tracingState()).toBe("on");
    const orgs = platform.organisation.client(OrganisationService);
    const org = await orgs.createOrganisation({
      name: "Exported",
      ownerEmail: `${randomUUID()}@export.test`,
      ownerPassword: "correct horse",
    });
    const owner = { organisationId: org.organisation!.id, clientId: `exporter-${randomUUID().slice(0, 8)}` } as Owner;
    const route = receiver.route(`/hooks/${randomUUID()}`);
    await platform.webhook
      .client(WebhookService)
      .createSubscription({ owner, targetUrl: route.url, eventType: EventType.CONTACT_CREATED });

    const traceId = newTraceId();
    const clientSpan = newSpanId();
    await orgs.createContact(
      {
        organisationId: owner.organisationId,
        fields: { firstName: "Grace", lastName: "Hopper", email: "grace@example.test" },
      },
      { headers: { traceparent: `00-${traceId}-${clientSpan}-01` } },
    );
    const posted = await waitFor(() => route.requests[0], 30_000, "the webhook POST");
    const postParent = String(posted.headers.traceparent).slice(36, 52);
    expect(String(posted.headers.traceparent).slice(3, 35)).toBe(traceId);

    const spans = await waitFor(
      async () => {
        await tracing.flush();
        const mine = collector.spans.filter((s) => s.traceId === traceId);
        const rpc = mine.find((s) => s.name === "bizcard.organisation.v1.OrganisationService/CreateContact");
        const publish = mine.find((s) => s.name.startsWith("publish ") && s.name.endsWith("contact.created"));
        const fanOut = mine.find((s) => s.name === "fan-out contact.created");
        const post = mine.find((s) => s.name === "webhook POST");
        return rpc && publish && fanOut && post ? { rpc, publish, fanOut, post } : undefined;
      },
      15_000,
      "the exported spans",
    );
    expect(collector.requests[0]).toMatchObject({
      path: "/v1/traces",
      contentType: expect.stringContaining("application/json"),
    });
    // The RPC server's span is the client's child; the POST's traceparent names the attempt's span.
    expect(spans.rpc.parentSpanId).toBe(clientSpan);
    expect(spans.rpc.service).toBe("bizcard-trace-export");
    expect(spans.post.spanId).toBe(postParent);
    // The event's way, each step the child of the one before: the outbox relay's publish
    // (producer), the delivery service's fan-out (consumer), then the attempt.
    expect(spans.publish.parentSpanId).toBe(spans.rpc.spanId);
    expect(spans.fanOut.parentSpanId).toBe(spans.publish.spanId);
    expect(spans.post.parentSpanId).toBe(spans.fanOut.spanId);
  });

  it("OTEL_SERVICE_NAME names the service; OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is used as is", async () => {
    await tracing.shutdown();
    expect(tracingState()).toBe("off");
    tracing = await startTracing("ignored", {
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${collector.base}/custom/traces`,
      OTEL_SERVICE_NAME: "renamed",
    });
    const traceId = newTraceId();
    startSpan("work", `00-${traceId}-${newSpanId()}-01`, "internal").end();
    await tracing.flush();
    const span = collector.spans.find((s) => s.traceId === traceId);
    expect(span).toMatchObject({ name: "work", service: "renamed", path: "/custom/traces" });
  });
});

describe("a service process (main.ts) with OTEL_EXPORTER_OTLP_ENDPOINT", () => {
  let db: TestDatabase;
  let proc: Spawned | undefined;
  const config = testConfig();

  beforeAll(async () => {
    db = await createTestDatabase();
  });

  afterAll(async () => {
    await proc?.kill("SIGKILL");
    await db?.drop();
    await deleteStream(TEST_NATS_URL, config.NATS_STREAM).catch(() => undefined);
  });

  it("exports its spans as bizcard-<name>, the last ones when it drains on SIGTERM", async () => {
    const port = await freePort();
    const token = "x".repeat(40);
    proc = spawnTs("services/organisation/main.ts", {
      DATABASE_URL: db.url,
      DATABASE_POOL_MAX: String(db.poolMax),
      NATS_URL: TEST_NATS_URL,
      NATS_STREAM: config.NATS_STREAM,
      NATS_SUBJECT_PREFIX: config.NATS_SUBJECT_PREFIX,
      ORGANISATION_RPC_PORT: String(port),
      INTERNAL_RPC_TOKEN: token,
      LOG_LEVEL: "warn",
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.base,
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: undefined,
      OTEL_SERVICE_NAME: undefined,
    });
    await httpReady(`http://127.0.0.1:${port}/healthz`, 60_000, proc);
    const traceId = newTraceId();
    const client = createRpcClient(OrganisationService, {
      baseUrl: `http://127.0.0.1:${port}`,
      timeoutMs: 10_000,
      internalToken: token,
    });
    await client.createOrganisation(
      { name: "Process", ownerEmail: `${randomUUID()}@process.test`, ownerPassword: "correct horse" },
      { headers: { traceparent: `00-${traceId}-${newSpanId()}-01` } },
    );
    // The batch's delay has not passed: the drain sends it.
    expect(await proc.kill("SIGTERM"), proc.output()).toBe(0);
    const span = await waitFor(() => collector.spans.find((s) => s.traceId === traceId), 10_000, "the process's span");
    expect(span).toMatchObject({
      name: "bizcard.organisation.v1.OrganisationService/CreateOrganisation",
      service: "bizcard-organisation",
    });
  });
});
