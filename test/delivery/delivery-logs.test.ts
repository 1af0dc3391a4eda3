// The delivery service's log lines, as an operator reads them at the default
// level: one line per failed attempt (its answer or error, the attempt, the
// subscription, its owner, the target's host and the next retry), one for a
// 410 unsubscribe, one for a give-up, one for a disable; successes only at
// debug. Never the target URL's path or query. LOG_FORMAT picks JSON or
// readable lines.
import { randomUUID } from "node:crypto";
import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventType } from "../../gen/bizcard/events/v1/events_pb.js";
import { OrganisationService } from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import { WebhookService, type Owner } from "../../gen/bizcard/webhook/v1/webhook_pb.js";
import { createLogger, logFormat } from "../../services/shared/logger.js";
import { createDeliveryApp, startPlatform, type Platform } from "../support/platform.js";
import { waitFor } from "../support/processes.js";
import { startReceiver, type Answer, type Receiver } from "../support/receiver.js";

const TOKEN = "g".repeat(40);
const SECRET_QUERY = "token=QUERY-SECRET-91c2";

type Line = Record<string, unknown> & { level: number; msg: string };
const lines: Line[] = [];
const sink = () =>
  new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString("utf8").split("\n")) if (l.trim()) lines.push(JSON.parse(l) as Line);
      done();
    },
  });

let platform: Platform;
let receiver: Receiver;

beforeAll(async () => {
  receiver = await startReceiver();
  // At debug, to see that a success is logged there (and only there).
  const logger = createLogger("delivery", "debug", sink(), "json");
  platform = await startPlatform({
    token: TOKEN,
    config: {
      WEBHOOK_ALLOW_INSECURE_TARGETS: "true",
      // Four attempts over about 1.2 s.
      DELIVERY_RETRY_SCHEDULE_SECONDS: "0.3,0.3,0.6",
      DELIVERY_TIMEOUT_MS: "300",
      DELIVERY_CLAIM_LEASE_SECONDS: "10",
      DELIVERY_POLL_MS: "50",
      WEBHOOK_DISABLE_AFTER_FAILING_SECONDS: "1",
      WEBHOOK_DISABLE_AFTER_FAILURES: "3",
    },
    webhook: true,
    // The delivery service's lines, as it writes them at the default level.
    delivery: { create: (deps) => createDeliveryApp({ ...deps, logger }) },
  });
}, 60_000);

afterAll(async () => {
  await platform?.stop();
  await receiver?.close();
});

async function subscribeAndSend(path: string, answer: (n: number) => Answer) {
  const route = receiver.route(`${path}?${SECRET_QUERY}`, answer);
  // An organisation each: its one subscription gets its one event.
  const orgs = platform.organisation.client(OrganisationService);
  const organisationId = (
    await orgs.createOrganisation({
      name: `Log Cards ${path}`,
      ownerEmail: `o${randomUUID().slice(0, 8)}@log.test`,
      ownerPassword: "password-g",
    })
  ).organisation!.id;
  const owner: Owner = { organisationId, clientId: randomUUID() } as Owner;
  const { subscription } = await platform.webhook
    .client(WebhookService)
    .createSubscription({ owner, targetUrl: route.url, eventType: EventType.CONTACT_CREATED });
  await orgs.createContact({ organisationId, fields: { firstName: "Ada", lastName: "L", email: "l@log.test" } });
  return { id: subscription!.id.toString(), organisationId, clientId: owner.clientId, route };
}

const linesOf = (subscriptionId: string) => lines.filter((l) => l.subscriptionId === subscriptionId);
const host = () => new URL(receiver.base).host;

describe("a failed delivery leaves lines that answer questions", () => {
  it("500: one info line per failed attempt with the answer, attempt, owner, host and next retry; a warn line when it gives up", async () => {
    const sub = await subscribeAndSend("/logs/500", () => ({ status: 500 }));
    await waitFor(() => linesOf(sub.id).some((l) => /gave up/.test(l.msg)) || undefined, 15_000, "the give-up line");
    const failed = linesOf(sub.id).filter((l) => l.msg === "delivery attempt failed; retried");
    expect(failed.map((l) => l.attempt)).toEqual([1, 2, 3]);
    for (const l of failed) {
      expect(l.level).toBe(30);
      expect(l).toMatchObject({
        status: 500,
        error: "HTTP 500",
        organisationId: sub.organisationId,
        clientId: sub.clientId,
        host: host(),
      });
      expect(l.nextRetryAt).toMatch(/^\d{4}-\d{2}-\d{2}T/);
      expect(typeof l.retryInMs).toBe("number");
    }
    const gaveUp = linesOf(sub.id).filter((l) => /gave up/.test(l.msg));
    expect(gaveUp).toHaveLength(1);
    expect(gaveUp[0]).toMatchObject({
      level: 40,
      attempt: 4,
      status: 500,
      error: "HTTP 500",
      organisationId: sub.organisationId,
      clientId: sub.clientId,
      host: host(),
    });
    expect(sub.route.requests).toHaveLength(4);
  });

  it("a subscription that only fails is disabled, with one warn line saying so", async () => {
    // Slow answers: the four attempts fail for longer than the period (1 s), whatever the jitter.
    const sub = await subscribeAndSend("/logs/disabled", () => ({ status: 503, delayMs: 120 }));
    const line = await waitFor(
      () => linesOf(sub.id).find((l) => l.msg === "subscription disabled: every attempt failed"),
      15_000,
      "the disable line",
    );
    expect(line).toMatchObject({
      level: 40,
      organisationId: sub.organisationId,
      clientId: sub.clientId,
      host: host(),
      lastError: "HTTP 503",
    });
    expect(line.failures).toBeGreaterThanOrEqual(3);
    expect(linesOf(sub.id).filter((l) => l.msg === "subscription disabled: every attempt failed")).toHaveLength(1);
  });

  it("410: one info line saying the subscription was deleted", async () => {
    const sub = await subscribeAndSend("/logs/410", () => ({ status: 410 }));
    const line = await waitFor(() => linesOf(sub.id).find((l) => /410 Gone/.test(l.msg)), 15_000, "the 410 line");
    expect(line).toMatchObject({
      level: 30,
      status: 410,
      attempt: 1,
      organisationId: sub.organisationId,
      clientId: sub.clientId,
      host: host(),
    });
    expect(linesOf(sub.id)).toHaveLength(1);
  });

  it("a receiver that hangs past DELIVERY_TIMEOUT_MS: the line says timeout", async () => {
    const sub = await subscribeAndSend("/logs/hang", () => "hang");
    const line = await waitFor(
      () => linesOf(sub.id).find((l) => l.msg === "delivery attempt failed; retried"),
      15_000,
      "the timeout line",
    );
    expect(line).toMatchObject({
      level: 30,
      status: 0,
      attempt: 1,
      organisationId: sub.organisationId,
      clientId: sub.clientId,
      host: host(),
    });
    expect(line.error).toMatch(/^timeout: no complete answer within 300 ms$/);
  });

  it("a success is logged at debug only; the lines never hold the target's path or query", async () => {
    const sub = await subscribeAndSend("/logs/ok", () => ({ status: 204 }));
    await waitFor(() => sub.route.requests.length === 1 || undefined, 10_000, "the delivery");
    // The next event's attempts are logged after this one's: wait for a later line of another subscription.
    const marker = await subscribeAndSend("/logs/marker", () => ({ status: 410 }));
    await waitFor(() => linesOf(marker.id).length > 0 || undefined, 10_000, "the marker's line");
    expect(linesOf(sub.id)).toHaveLength(1);
    expect(linesOf(sub.id)[0]).toMatchObject({
      level: 20,
      msg: "delivery succeeded",
      status: 204,
      attempt: 1,
      host: host(),
      clientId: sub.clientId,
    });
    const text = JSON.stringify(lines);
    expect(text).not.toContain("QUERY-SECRET");
    expect(text).not.toContain("/logs/");
  });
});

describe("LOG_FORMAT", () => {
  const write = (format: "json" | "pretty", level = "debug") => {
    let out = "";
    const dest = new Writable({
      write(chunk: Buffer, _enc, done) {
        out += chunk.toString("utf8");
        done();
      },
    });
    const logger = createLogger("delivery", level, dest, format);
    logger.info({ subscriptionId: "7", host: "hooks.example.test" }, "delivery attempt failed; retried");
    logger.debug({ subscriptionId: "7" }, "delivery succeeded");
    return out.trim().split("\n");
  };

  it("json: one JSON object a line", () => {
    const out = write("json");
    expect(out).toHaveLength(2);
    expect(JSON.parse(out[0]!)).toMatchObject({
      level: 30,
      service: "delivery",
      subscriptionId: "7",
      host: "hooks.example.test",
      msg: "delivery attempt failed; retried",
    });
  });

  it("pretty: one readable line each, level, service and message first", () => {
    const out = write("pretty");
    expect(out).toHaveLength(2);
    expect(() => JSON.parse(out[0]!)).toThrow();
    expect(out[0]).toMatch(
      /^\[\d{2}:\d{2}:\d{2}\.\d{3}\] INFO: delivery: delivery attempt failed; retried .*"subscriptionId":"7"/,
    );
    expect(out[1]).toMatch(/DEBUG: delivery: delivery succeeded/);
  });

  it("LOG_FORMAT wins; unset, a terminal gets pretty lines and anything else JSON", () => {
    expect(logFormat("json", true)).toBe("json");
    expect(logFormat("pretty", false)).toBe("pretty");
    expect(logFormat(undefined, true)).toBe("pretty");
    expect(logFormat(undefined, false)).toBe("json");
  });
});
