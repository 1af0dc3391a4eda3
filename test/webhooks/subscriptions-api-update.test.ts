// The webhook subscription REST API as a client application sees it: read,
// update and delete its subscriptions over HTTP through the gateway; ids that
// are not positive integers, and other applications' subscriptions, refused.
// Create: subscriptions-api.test.ts.
import { describe, expect, it } from "vitest";
import { expectError } from "../support/api-client.js";
import { waitFor } from "../support/processes.js";
import {
  app,
  call,
  create,
  EVENT_TYPE_ERROR,
  foreign,
  PATH,
  sibling,
  type SubscriptionBody,
  useSubscriptionsSuite,
} from "../support/subscriptions-suite.js";

useSubscriptionsSuite();

describe("read, update, delete", () => {
  it("PUT changes what is sent, moves updated_at only when something changed, and checks both fields", async () => {
    const s = await create(app, "https://hooks.example.test/put/1");
    const path = `${PATH}/${s.id}`;
    await waitFor(
      () => (Date.now() > Date.parse(s.updated_at) + 1 ? true : undefined),
      5_000,
      "the clock to pass updated_at",
    );

    const moved = await call(app, "PUT", path, { target_url: "https://other.example.test/put/2" });
    expect(moved.status).toBe(200);
    expect(moved.headers.get("cache-control")).toBe("no-store");
    const m = (await moved.json()) as SubscriptionBody;
    expect(m).toEqual({
      ...m,
      id: s.id,
      target_url: "https://other.example.test/put/2",
      event_type: "contact.created",
      created_at: s.created_at,
    });
    expect(Object.keys(m)).not.toContain("secret");
    expect(Date.parse(m.updated_at)).toBeGreaterThan(Date.parse(s.updated_at));

    const retyped = (await (
      await call(app, "PUT", path, { event_type: "contact.updated" })
    ).json()) as SubscriptionBody;
    expect(retyped.event_type).toBe("contact.updated");
    expect(retyped.target_url).toBe("https://other.example.test/put/2");

    // Neither field, no body at all, the same values, or the object sent back as read: nothing changes.
    for (const res of [
      await call(app, "PUT", path, {}),
      await call(app, "PUT", path),
      await call(app, "PUT", path, {
        target_url: "https://OTHER.example.test:443/put/2",
        event_type: "contact.updated",
      }),
      await call(app, "PUT", path, { ...retyped, secret: "whsec_ignored" }),
    ]) {
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual(retyped);
    }

    await expectError(
      await call(app, "PUT", path, { event_type: "contact.removed" }),
      400,
      "invalid_request",
      EVENT_TYPE_ERROR,
    );
    await expectError(
      await call(app, "PUT", path, { target_url: "http://hooks.example.test/" }),
      400,
      "invalid_request",
      "target_url: must use https (http is not allowed)",
    );
    await expectError(
      await call(app, "PUT", path, { target_url: "https://internal.example.test/" }),
      400,
      "invalid_request",
      /resolves to a private address/,
    );
    await expectError(
      await call(app, "PUT", path, { target_url: "https://hooks.example.test/\u0000" }),
      400,
      "invalid_request",
      /control characters/,
    );
    await expectError(
      await call(app, "PUT", path, { target_url: "https://hang.example.test/" }),
      503,
      "temporarily_unavailable",
    );
    await expectError(
      await call(app, "PUT", path, { events: ["contact.created"] }),
      400,
      "invalid_request",
      /^unknown field "events"/,
    );
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
        await expectError(
          await call(app, method, `${PATH}/${id}`, body),
          400,
          "invalid_request",
          /^id: expected a positive integer/,
        );
      }
    }
    await expectError(await call(app, "GET", `${PATH}/9223372036854775807`), 404, "not_found");

    const mine = await create(app, "https://hooks.example.test/private/mine");
    for (const stranger of [sibling, foreign]) {
      for (const [method, body] of [
        ["GET"],
        ["PUT", { target_url: "https://hooks.example.test/stolen" }],
        ["DELETE"],
      ] as const) {
        await expectError(
          await call(stranger, method, `${PATH}/${mine.id}`, body),
          404,
          "not_found",
          "subscription not found",
        );
      }
      const theirs = (await (await call(stranger, "GET", `${PATH}?limit=100`)).json()) as SubscriptionBody[];
      expect(theirs.map((x) => x.id)).not.toContain(mine.id);
    }
    const { secret: _secret, ...unchanged } = mine;
    expect(await (await call(app, "GET", `${PATH}/${mine.id}`)).json()).toEqual(unchanged);
  });
});
