// The webhook subscription REST API's lists, tokens and scopes (RFC 6750),
// bodies and limits; GET /oauth/contacts; and subscriptions that end with
// their grant.
import { describe, expect, it } from "vitest";
import { AuthService } from "../../gen/bizcard/auth/v1/auth_pb.js";
import { OrganisationService } from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import { WebhookService } from "../../gen/bizcard/webhook/v1/webhook_pb.js";
import { contactJson } from "../../services/shared/contact-json.js";
import { expectError } from "../support/api-client.js";
import { waitFor } from "../support/processes.js";
import {
  app,
  auth,
  base,
  call,
  type Client,
  contactsOnly,
  create,
  foreign,
  organisation,
  orgId,
  otherOrgId,
  ownClient,
  PATH,
  reader,
  sibling,
  type SubscriptionBody,
  tokenOf,
  useSubscriptionsSuite,
  webhook,
  writer,
} from "../support/subscriptions-suite.js";

useSubscriptionsSuite();

describe("list", () => {
  it("a bare array, newest first, paged by limit with Link rel=next until the end", async () => {
    const client = await ownClient("Pager");
    const made: SubscriptionBody[] = [];
    for (let i = 0; i < 5; i++)
      made.push(
        await create(client, `https://hooks.example.test/page/${i}`, i % 2 ? "contact.updated" : "contact.created"),
      );
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
      await expectError(
        await call(app, "GET", `${PATH}?limit=${limit}`),
        400,
        "invalid_request",
        "limit: expected a whole number from 1 to 100",
      );
    }
    await expectError(
      await call(app, "GET", `${PATH}?limit=1&limit=2`),
      400,
      "invalid_request",
      "limit is included more than once",
    );
    await expectError(
      await call(app, "GET", `${PATH}?cursor=garbage`),
      400,
      "invalid_request",
      /^cursor: not a cursor this server issued/,
    );
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
      expect(none.headers.get("www-authenticate")).toBe(
        `Bearer realm="bizcard", resource_metadata="${base}/.well-known/oauth-protected-resource"`,
      );
      await expectError(none, 401, "invalid_token");
      const bad = await call(undefined, method, path, body, { authorization: "Bearer bca_not-a-real-token" });
      expect(bad.headers.get("www-authenticate")).toMatch(
        /^Bearer realm="bizcard", resource_metadata="[^"]+", error="invalid_token"/,
      );
      await expectError(bad, 401, "invalid_token");
    }
  });

  it("403 insufficient_scope naming the scope: webhooks:read to read, webhooks:write to change, contacts:read to subscribe", async () => {
    const body = { target_url: "https://hooks.example.test/scoped", event_type: "contact.created" };
    const cases: [Client, string, string, unknown, string][] = [
      [contactsOnly, "GET", PATH, undefined, "webhooks:read"],
      [contactsOnly, "GET", `${PATH}/1`, undefined, "webhooks:read"],
      // Subscribing needs both: the challenge names every scope it needs (MCP step-up).
      [reader, "POST", PATH, body, "webhooks:write contacts:read"],
      [reader, "PUT", `${PATH}/1`, {}, "webhooks:write contacts:read"],
      [reader, "DELETE", `${PATH}/1`, undefined, "webhooks:write"],
      [writer, "POST", PATH, body, "webhooks:write contacts:read"],
      [writer, "PUT", `${PATH}/1`, {}, "webhooks:write contacts:read"],
      [reader, "GET", "/oauth/contacts", undefined, "contacts:read"],
    ];
    for (const [client, method, path, payload, scope] of cases) {
      const res = await call(client, method, path, payload);
      const description = scope.includes(" ")
        ? `this request needs the scopes ${scope}`
        : `this resource needs the scope ${scope}`;
      expect(res.headers.get("www-authenticate"), `${method} ${path}`).toBe(
        `Bearer realm="bizcard", resource_metadata="${base}/.well-known/oauth-protected-resource", error="insufficient_scope", error_description="${description}", scope="${scope}"`,
      );
      await expectError(res, 403, "insufficient_scope", description);
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
    const big = JSON.stringify({
      target_url: `https://hooks.example.test/${"x".repeat(70 * 1024)}`,
      event_type: "contact.created",
    });
    await expectError(await call(app, "POST", PATH, big), 413, "payload_too_large");
    const form = new URLSearchParams({
      target_url: "https://hooks.example.test/form",
      event_type: "contact.created",
    }).toString();
    // The 415 names JSON only: the form encoding the other body types' 415 offers is refused here too.
    const jsonOnly = /^send the (subscription|body) as application\/json$/;
    for (const type of ["application/x-www-form-urlencoded", "text/plain", "application/xml"]) {
      await expectError(
        await call(app, "POST", PATH, form, { "content-type": type }),
        415,
        "unsupported_media_type",
        jsonOnly,
      );
      await expectError(
        await call(app, "PUT", `${PATH}/1`, form, { "content-type": type }),
        415,
        "unsupported_media_type",
        jsonOnly,
      );
    }
    await expectError(
      await call(app, "POST", PATH, '{"target_url": '),
      400,
      "invalid_request",
      "the request body could not be parsed",
    );
    await expectError(await call(app, "POST", PATH, ""), 400, "invalid_request");
    await expectError(
      await call(
        app,
        "POST",
        PATH,
        '{"target_url": "https://hooks.example.test/a", "target_url": "https://hooks.example.test/b", "event_type": "contact.created"}',
      ),
      400,
      "invalid_request",
      "parameter target_url is included more than once",
    );
    // JSON with a charset parameter is JSON.
    const ok = await call(
      app,
      "POST",
      PATH,
      { target_url: "https://hooks.example.test/charset", event_type: "contact.created" },
      { "content-type": "application/json; charset=utf-8" },
    );
    expect(ok.status).toBe(201);
  });

  it("405 with Allow for a method the path does not have", async () => {
    const res = await call(app, "PATCH", `${PATH}/1`, {});
    expect(res.headers.get("allow")).toBe("GET, HEAD, PUT, DELETE");
    await expectError(res, 405, "method_not_allowed");
  });
});

describe("limits", () => {
  it("100 subscriptions per pair; past it a clear 400, even when creates race; other pairs unaffected", async () => {
    const client = await ownClient("Busy");
    const url = (i: number) => `https://hooks.example.test/cap/${i}`;
    for (let batch = 0; batch < 9; batch++) {
      const answers = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          call(client, "POST", PATH, { target_url: url(batch * 10 + i), event_type: "contact.created" }),
        ),
      );
      expect(answers.map((r) => r.status)).toEqual(Array(10).fill(201));
    }
    // 90 made; 20 race for the last 10 places.
    const race = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        call(client, "POST", PATH, { target_url: url(90 + i), event_type: "contact.created" }),
      ),
    );
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
    expect(
      (await call(client, "POST", PATH, { target_url: page[0]!.target_url, event_type: "contact.created" })).status,
    ).toBe(200);
    expect((await call(client, "DELETE", `${PATH}/${page[0]!.id}`)).status).toBe(204);
    expect((await call(client, "POST", PATH, { target_url: url(500), event_type: "contact.created" })).status).toBe(
      201,
    );
    // Another application of the organisation has room of its own.
    expect((await call(sibling, "POST", PATH, { target_url: url(0), event_type: "contact.created" })).status).toBe(201);
  });
});

describe("GET /oauth/contacts", () => {
  it("the organisation's most recent contacts, newest first, as events carry them; limit default 10, Link to page", async () => {
    const orgs = organisation.client(OrganisationService);
    const made = [];
    for (let i = 0; i < 12; i++) {
      const res = await orgs.createContact({
        organisationId: orgId,
        fields: { firstName: `Ada${i}`, lastName: "Lovelace", email: `ada${i}@example.test`, company: "Engines" },
      });
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
    const rest = await fetch(/^<([^>]+)>/.exec(link)![1]!, {
      headers: { authorization: `Bearer ${await tokenOf(contactsOnly)}` },
    });
    expect(await rest.json()).toEqual(newestFirst.slice(10));
    expect(rest.headers.get("link")).toBeNull();

    const three = await call(app, "GET", "/oauth/contacts?limit=3");
    expect(await three.json()).toEqual(newestFirst.slice(0, 3));
    const theirs = (await (await call(foreign, "GET", "/oauth/contacts?limit=100")).json()) as { first_name: string }[];
    expect(theirs.map((c) => c.first_name)).toEqual(["Not"]);
    for (const limit of ["0", "101", "x"]) {
      await expectError(
        await call(app, "GET", `/oauth/contacts?limit=${limit}`),
        400,
        "invalid_request",
        "limit: expected a whole number from 1 to 100",
      );
    }
    await expectError(await call(app, "GET", "/oauth/contacts?cursor=nope"), 400, "invalid_request", /^cursor: /);
  });
});

describe("grants and subscriptions are tied", () => {
  it("revoking the organisation's grant to the application deletes that pair's subscriptions, and only those", async () => {
    const client = await ownClient("Revoked");
    const doomed = [
      await create(client, "https://hooks.example.test/revoked/1"),
      await create(client, "https://hooks.example.test/revoked/2", "contact.updated"),
    ];
    const kept = await create(sibling, "https://hooks.example.test/revoked/kept");
    const rpc = webhook.client(WebhookService);
    const pair = { organisationId: orgId, clientId: client.id };
    expect((await rpc.listSubscriptions({ owner: pair })).subscriptions.map((s) => Number(s.id))).toEqual(
      doomed.map((s) => s.id).reverse(),
    );
    await auth.client(AuthService).revokeGrant({ organisationId: orgId, clientId: client.id });
    await waitFor(
      async () => ((await rpc.listSubscriptions({ owner: pair })).subscriptions.length === 0 ? true : undefined),
      15_000,
      "the pair's subscriptions to go",
    );
    expect((await call(sibling, "GET", `${PATH}/${kept.id}`)).status).toBe(200);
    await expectError(await call(client, "GET", PATH), 401, "invalid_token");
  });
});
