// The webhook subscription REST API as a client application sees it: create
// its subscriptions over HTTP through the gateway, and the bad ones refused.
// Read, update and delete: subscriptions-api-update.test.ts. Lists, scopes,
// bodies, limits, GET /oauth/contacts and revoked grants:
// subscriptions-api-access.test.ts.
import { describe, expect, it } from "vitest";
import { EventType } from "../../gen/bizcard/events/v1/events_pb.js";
import { WebhookService } from "../../gen/bizcard/webhook/v1/webhook_pb.js";
import { expectError } from "../support/api-client.js";
import { waitFor } from "../support/processes.js";
import {
  app,
  base,
  call,
  create,
  dns,
  EVENT_TYPE_ERROR,
  foreign,
  orgId,
  PATH,
  RFC3339,
  sibling,
  type SubscriptionBody,
  tokenOf,
  useSubscriptionsSuite,
  webhook,
} from "../support/subscriptions-suite.js";

useSubscriptionsSuite();

describe("create", () => {
  it("201 with Location and the subscription plus its secret, once; GET at Location shows it without the secret", async () => {
    const res = await call(app, "POST", PATH, {
      target_url: "https://hooks.example.test/zap/1?x=1",
      event_type: "contact.created",
    });
    expect(res.status).toBe(201);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    expect(res.headers.get("cache-control")).toBe("no-store");
    const body = (await res.json()) as SubscriptionBody;
    expect(Object.keys(body).sort()).toEqual([
      "blocked_delivery_id",
      "blocked_since",
      "created_at",
      "disabled_at",
      "disabled_reason",
      "event_type",
      "id",
      "in_flight_cap",
      "ordered",
      "previous_secret_expires_at",
      "secret",
      "target_url",
      "throttled_until",
      "updated_at",
    ]);
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
    const { subscribers } = await webhook
      .client(WebhookService)
      .listSubscribers({ organisationId: orgId, eventType: EventType.CONTACT_CREATED });
    expect(subscribers.find((x) => Number(x.subscriptionId) === body.id)).toMatchObject({
      clientId: app.id,
      targetUrl: body.target_url,
      secret: body.secret,
    });
  });

  it("is idempotent: the same target_url and event_type again is 200 with the existing subscription and no secret", async () => {
    const first = await create(app, "https://hooks.example.test/zap/idem", "contact.updated");
    // The same URL once normalised (scheme and host case, explicit default port).
    const again = await call(app, "POST", PATH, {
      target_url: "HTTPS://Hooks.Example.TEST:443/zap/idem",
      event_type: "contact.updated",
    });
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
      [
        { target_url: "http://hooks.example.test/", event_type: "contact.created" },
        "target_url: must use https (http is not allowed)",
      ],
      [
        { target_url: "https://u:p@hooks.example.test/", event_type: "contact.created" },
        /^target_url: must not contain user-info/,
      ],
      [
        { target_url: `https://hooks.example.test/${"a".repeat(2048)}`, event_type: "contact.created" },
        "target_url: at most 2048 characters",
      ],
      [
        { target_url: "https://10.1.2.3/hook", event_type: "contact.created" },
        /^target_url: points to a private address/,
      ],
      [
        { target_url: "https://127.0.0.1/hook", event_type: "contact.created" },
        /^target_url: points to a loopback address/,
      ],
      [
        { target_url: "https://[fe80::1]/hook", event_type: "contact.created" },
        /^target_url: points to a link-local address/,
      ],
      [{ target_url: "https://localhost/hook", event_type: "contact.created" }, /loopback name/],
      [
        { target_url: "https://internal.example.test/hook", event_type: "contact.created" },
        /^target_url: host internal\.example\.test resolves to a private address/,
      ],
      [
        { target_url: "https://mixed.example.test/hook", event_type: "contact.created" },
        /resolves to a loopback address/,
      ],
      [
        { target_url: "https://nowhere.example.test/hook", event_type: "contact.created" },
        "target_url: host nowhere.example.test does not resolve",
      ],
      [
        { target_url: "https://hooks.example.test:22/", event_type: "contact.created" },
        /^target_url: port 22 is not allowed/,
      ],
      // Refused, not repaired into https://hooks.example.test/x by the URL parser.
      [
        { target_url: "https:///hooks.example.test/x", event_type: "contact.created" },
        /^target_url: expected a host right after https:\/\//,
      ],
      [
        { target_url: "https:/hooks.example.test/x", event_type: "contact.created" },
        /^target_url: expected \/\/ and a host right after https:/,
      ],
      [
        { target_url: "https:\\\\hooks.example.test\\x", event_type: "contact.created" },
        /^target_url: must not contain backslashes/,
      ],
      // Control characters are refused, never silently dropped ("exa\tmple" must not become "example").
      [
        { target_url: "https://hooks.exa\tmple.test/", event_type: "contact.created" },
        /^target_url: must not contain control characters/,
      ],
      [
        { target_url: "https://hooks.example.test/a\nb", event_type: "contact.created" },
        /^target_url: must not contain control characters/,
      ],
      [{ target_url: "https://hooks.example.test/", event_type: "contact.deleted" }, EVENT_TYPE_ERROR],
      [{ target_url: "https://hooks.example.test/", event_type: "" }, EVENT_TYPE_ERROR],
      [{ target_url: "https://hooks.example.test/" }, "event_type: required (contact.created or contact.updated)"],
      [{ event_type: "contact.created" }, "target_url: required"],
      [{ target_url: "", event_type: "contact.created" }, "target_url: required"],
      [{ target_url: 42, event_type: "contact.created" }, "target_url: expected a string"],
      [{ target_url: "https://hooks.example.test/", event_type: null }, "event_type: expected a string"],
      [{ target_url: "https://hooks.example.test/", event: "contact.created" }, /^unknown field "event"/],
      [[], "the body must be a JSON object"],
      ['"https://hooks.example.test/"', "the body must be a JSON object"],
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
    const hanging = Promise.all(
      [1, 2, 3, 4, 5, 6].map((i) =>
        call(app, "POST", PATH, { target_url: `https://hang.example.test/${i}`, event_type: "contact.created" }),
      ),
    );
    void hanging.then(() => (hangingSettled = true));
    // Six lookups wait for an answer that never comes...
    await waitFor(
      () => (dns.asked.filter((q) => q === "hang.example.test/A").length >= 6 ? true : undefined),
      10_000,
      "six lookups in flight",
    );
    // ...while another tenant's create goes through, before any of them gives up.
    const quick = await call(foreign, "POST", PATH, {
      target_url: "https://hooks.example.test/foreign/quick",
      event_type: "contact.created",
    });
    expect(quick.status).toBe(201);
    expect(hangingSettled).toBe(false);
    for (const res of await hanging) {
      expect(res.headers.get("retry-after")).toBe("5");
      await expectError(
        res,
        503,
        "temporarily_unavailable",
        /^target_url: the host hang\.example\.test could not be resolved right now/,
      );
    }
    const servfail = await call(app, "POST", PATH, {
      target_url: "https://broken.example.test/",
      event_type: "contact.created",
    });
    await expectError(
      servfail,
      503,
      "temporarily_unavailable",
      /^target_url: the host broken\.example\.test could not be resolved right now/,
    );
  });
});
