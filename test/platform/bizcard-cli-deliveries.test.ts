// `bizcard deliveries … --json` prints what REST answers, with its names and
// types: each output is validated against the gateway's own schemas (the
// ones the OpenAPI document is built from) with no key more or less, and
// compared with the REST answer about the same deliveries.
import { beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { Attempt, Delivery } from "../../gateway/schemas/subscriptions.js";
import { runBizcard, waitFor } from "../support/processes.js";
import {
  app,
  attempts,
  call,
  createContact,
  orgId,
  PATH,
  platform,
  receiver,
  subscribe,
  type SubscriptionBody,
  TOKEN,
  useDeliveryApiSuite,
} from "../support/delivery-api-suite.js";

// One retry, so that a target that only fails gives up after two attempts (before it could be disabled).
useDeliveryApiSuite({ DELIVERY_RETRY_SCHEDULE_SECONDS: "0.2" });

const AttemptOut = Attempt.strict();
const DeliveryOut = Delivery.strict();
/** The operators' list: the REST delivery and its owner. */
const OwnedDeliveryOut = Delivery.extend({ organisation_id: z.uuid(), client_id: z.string().min(1) }).strict();
const LogOut = z
  .object({
    subscription_id: z.number().int().positive(),
    state: z.enum(["active", "disabled", "deleted"]),
    reason: z.string().nullable(),
    attempts: z.array(AttemptOut),
  })
  .strict();

/** bin/bizcard.js against the suite's webhook and delivery services: exit status, stdout and stderr. */
async function bizcard(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return runBizcard(args, {
    WEBHOOK_RPC_URL: platform.webhook.server.url,
    DELIVERY_RPC_URL: platform.delivery.server.url,
    INTERNAL_RPC_TOKEN: TOKEN,
    DATA_DIR: undefined,
  });
}

/** The one JSON object a --json run printed, parsed with `schema` (which says what is wrong, if anything). */
async function cliJson<T>(schema: z.ZodType<T>, args: string[]): Promise<T> {
  const run = await bizcard([...args, "--json"]);
  expect(run.code, `${run.stdout}${run.stderr}`).toBe(0);
  expect(run.stderr).toBe("");
  const lines = run.stdout.split("\n").filter(Boolean);
  expect(lines).toHaveLength(1);
  const parsed = schema.safeParse(JSON.parse(lines[0]!));
  expect(parsed.error?.issues ?? [], lines[0]).toEqual([]);
  return parsed.data!;
}

async function restRetry(subscriptionId: number, deliveryId: number): Promise<z.infer<typeof DeliveryOut>> {
  const res = await call(app, "POST", `${PATH}/${subscriptionId}/deliveries/${deliveryId}/retry`);
  const body = (await res.json()) as unknown;
  expect(res.status, JSON.stringify(body)).toBe(202);
  return DeliveryOut.parse(body);
}

describe("bizcard deliveries --json: the REST names and types", () => {
  let flaky: SubscriptionBody;
  let failing: SubscriptionBody;
  const owner = () => ["--org", orgId, "--client", app.id];

  beforeAll(async () => {
    flaky = await subscribe(
      app,
      receiver.route("/cli/flaky", (n) => (n === 1 ? { status: 500 } : { status: 200 })).url,
    );
    failing = await subscribe(app, receiver.route("/cli/failing", () => ({ status: 503 })).url);
    await createContact(orgId, "Cli");
    await waitFor(
      async () =>
        ((await attempts(app, flaky.id)).length === 2 && (await attempts(app, failing.id))[0]?.outcome === "gave_up") ||
        undefined,
      20_000,
      "both logs",
    );
  });

  it("deliveries log: the REST log's attempts, exactly; the state and reason of its headers", async () => {
    const res = await call(app, "GET", `${PATH}/${flaky.id}/deliveries`);
    expect(res.status).toBe(200);
    const rest = (await res.json()) as unknown[];
    const cli = await cliJson(LogOut, ["deliveries", "log", ...owner(), "--subscription", String(flaky.id)]);
    expect(cli).toEqual({
      subscription_id: flaky.id,
      state: res.headers.get("subscription-state"),
      reason: res.headers.get("subscription-state-reason"),
      attempts: rest,
    });
    expect(cli.attempts.map((a) => [a.attempt, a.status_code, a.outcome])).toEqual([
      [2, 200, "succeeded"],
      [1, 500, "failed"],
    ]);

    const gaveUp = await cliJson(LogOut, ["deliveries", "log", ...owner(), "--subscription", String(failing.id)]);
    const restGaveUp = await call(app, "GET", `${PATH}/${failing.id}/deliveries`);
    expect(gaveUp).toEqual({
      subscription_id: failing.id,
      state: "active",
      reason: restGaveUp.headers.get("subscription-state-reason"),
      attempts: await restGaveUp.json(),
    });
    expect(gaveUp.reason).toMatch(/^the last delivery gave up at /);
  });

  it("deliveries retry: the retry route's delivery, field for field", async () => {
    const deliveryId = (await attempts(app, flaky.id))[0]!.delivery_id;
    const rest = await restRetry(flaky.id, deliveryId);
    await waitFor(
      async () => (await attempts(app, flaky.id)).length === 3 || undefined,
      10_000,
      "the REST retry's attempt",
    );

    const sent = Date.now();
    const cli = await cliJson(DeliveryOut, [
      "deliveries",
      "retry",
      ...owner(),
      "--subscription",
      String(flaky.id),
      "--id",
      String(deliveryId),
    ]);
    expect(Object.keys(cli)).toEqual(Object.keys(rest));
    const { updated_at: _u, next_retry_at: _n, attempts: _a, ...stable } = rest;
    expect(cli).toMatchObject({
      ...stable,
      id: deliveryId,
      subscription_id: flaky.id,
      status: "pending",
      status_code: 200,
      error: null,
      attempts: rest.attempts + 1,
    });
    expect(Date.parse(cli.next_retry_at!)).toBeGreaterThanOrEqual(sent - 250);
    expect(Date.parse(cli.next_retry_at!)).toBeLessThanOrEqual(Date.now() + 250);

    const text = await bizcard([
      "deliveries",
      "retry",
      ...owner(),
      "--subscription",
      String(flaky.id),
      "--id",
      String(deliveryId),
    ]);
    expect(text.stdout).toMatch(
      new RegExp(`^delivery ${deliveryId} pending, next attempt \\d{4}-\\d{2}-\\d{2}T\\S+Z\\n$`),
    );
  });

  it("deliveries failed: each the retry route's delivery plus its owner", async () => {
    const { deliveries } = await cliJson(z.object({ deliveries: z.array(OwnedDeliveryOut) }).strict(), [
      "deliveries",
      "failed",
      "--org",
      orgId,
    ]);
    const deliveryId = (await attempts(app, failing.id))[0]!.delivery_id;
    const cli = deliveries.find((d) => d.id === deliveryId);
    expect(cli).toMatchObject({
      subscription_id: failing.id,
      organisation_id: orgId,
      client_id: app.id,
      status: "gave_up",
      attempts: 2,
      status_code: 503,
      error: "HTTP 503",
      next_retry_at: null,
    });
    const text = await bizcard(["deliveries", "failed", "--org", orgId]);
    expect(text.stdout).toMatch(
      new RegExp(
        `^delivery ${deliveryId} .* subscription ${failing.id} \\(org ${orgId}, client ${app.id}\\)  2 attempts, last: HTTP 503$`,
        "m",
      ),
    );

    // The same delivery as REST answers it (a retry, the one REST route that shows a delivery).
    const rest = await restRetry(failing.id, deliveryId);
    const { organisation_id: _o, client_id: _c, ...asRest } = cli!;
    expect(Object.keys(asRest)).toEqual(Object.keys(rest));
    expect({ ...asRest, status: "pending", updated_at: rest.updated_at, next_retry_at: rest.next_retry_at }).toEqual(
      rest,
    );
  });
});
