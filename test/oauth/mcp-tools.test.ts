// The MCP tools as an agent sees them through the SDK's client: each maps to
// the REST route doing the same (the same JSON objects), sees only the
// token's organisation (and, for subscriptions, its application), pages with
// a cursor, and answers bad input, an unknown id and a service outage with
// a tool error (isError) carrying a clear message, never a 500.
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiCaller } from "../support/api-client.js";
import {
  app,
  base,
  callTool,
  connect,
  foreign,
  makeContacts,
  orgId,
  otherOrgId,
  platform,
  post,
  sibling,
  structured,
  tokenFor,
  toolErrorText,
  toolsCall,
  useMcpSuite,
} from "../support/mcp-suite.js";

useMcpSuite();

const rest = apiCaller(() => base);
type ContactJson = { id: string; first_name: string; email: string };
type SubscriptionJson = { id: number; target_url: string; event_type: string; secret?: string };
type Page<K extends string, T> = Record<K, T[]> & { next_cursor: string | null };

let agent: Client;
let agentElsewhere: Client;
let ours: string[];
let theirs: string[];

beforeAll(async () => {
  ours = await makeContacts(orgId, ["Ada", "Grace", "Edsger", "Barbara", "Alan"]);
  theirs = await makeContacts(otherOrgId, ["Linus"]);
  agent = await connect(await tokenFor(app));
  agentElsewhere = await connect(await tokenFor(foreign));
}, 30_000);

afterAll(async () => {
  await agent?.close();
  await agentElsewhere?.close();
});

describe("organisation and contacts", () => {
  it("get_organisation: the token's organisation, as GET /oauth/me answers it", async () => {
    expect(structured(await callTool(agent, "get_organisation"))).toEqual(
      await (await rest.call(app, "GET", "/oauth/me")).json(),
    );
    expect(structured(await callTool(agent, "get_organisation"))).toEqual({ id: orgId, name: "Agent Cards" });
    expect(structured(await callTool(agentElsewhere, "get_organisation"))).toEqual({
      id: otherOrgId,
      name: "Elsewhere Ltd",
    });
  });

  it("list_contacts: newest first, the objects GET /oauth/contacts lists; only the organisation's", async () => {
    const page = structured<Page<"contacts", ContactJson>>(await callTool(agent, "list_contacts"));
    expect(page.contacts.map((c) => c.id)).toEqual([...ours].reverse());
    expect(page.next_cursor).toBeNull();
    expect(page.contacts).toEqual(await (await rest.call(app, "GET", "/oauth/contacts")).json());
    const elsewhere = structured<Page<"contacts", ContactJson>>(await callTool(agentElsewhere, "list_contacts"));
    expect(elsewhere.contacts.map((c) => c.id)).toEqual(theirs);
  });

  it("list_contacts pages with limit and next_cursor, every contact once, and the last page has no cursor", async () => {
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = structured<Page<"contacts", ContactJson>>(
        await callTool(agent, "list_contacts", { limit: 2, ...(cursor ? { cursor } : {}) }),
      );
      expect(page.contacts.length).toBeLessThanOrEqual(2);
      seen.push(...page.contacts.map((c) => c.id));
      cursor = page.next_cursor ?? undefined;
      pages++;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen).toEqual([...ours].reverse());
  });

  it("get_contact: one contact by id; another organisation's is not found, as an unknown one", async () => {
    const contact = structured<ContactJson>(await callTool(agent, "get_contact", { id: ours[0] }));
    expect(contact).toMatchObject({ id: ours[0], first_name: "Ada", email: "ada@contacts.test" });
    const listed = structured<Page<"contacts", ContactJson>>(await callTool(agent, "list_contacts", { limit: 100 }));
    expect(listed.contacts.find((c) => c.id === ours[0])).toEqual(contact);
    expect(toolErrorText(await callTool(agent, "get_contact", { id: theirs[0] }))).toBe("contact not found");
    expect(toolErrorText(await callTool(agent, "get_contact", { id: "00000000-0000-4000-8000-000000000000" }))).toBe(
      "contact not found",
    );
  });
});

describe("webhook subscriptions", () => {
  it("create, list and delete; the secret once; the same create again is the existing one; each application sees its own", async () => {
    const args = { target_url: "http://127.0.0.1:19999/mcp-hook", event_type: "contact.created" };
    const created = structured<{ created: boolean; subscription: SubscriptionJson }>(
      await callTool(agent, "create_webhook_subscription", args),
    );
    expect(created.created).toBe(true);
    expect(created.subscription).toMatchObject({
      target_url: args.target_url,
      event_type: "contact.created",
      disabled_at: null,
    });
    expect(created.subscription.secret).toMatch(/^whsec_/);
    const { secret: _secret, ...withoutSecret } = created.subscription;
    // The object GET /oauth/webhooks/subscriptions/{id} answers.
    const got = await rest.call(app, "GET", `/oauth/webhooks/subscriptions/${created.subscription.id}`);
    expect(await got.json()).toEqual(withoutSecret);

    const again = structured<{ created: boolean; subscription: SubscriptionJson }>(
      await callTool(agent, "create_webhook_subscription", args),
    );
    expect(again).toEqual({ created: false, subscription: withoutSecret });

    const listed = structured<Page<"subscriptions", SubscriptionJson>>(
      await callTool(agent, "list_webhook_subscriptions"),
    );
    expect(listed).toEqual({ subscriptions: [withoutSecret], next_cursor: null });
    // Another application of the organisation, and another organisation, see none of it.
    const siblingAgent = await connect(await tokenFor(sibling));
    expect(structured(await callTool(siblingAgent, "list_webhook_subscriptions"))).toEqual({
      subscriptions: [],
      next_cursor: null,
    });
    expect(
      toolErrorText(await callTool(siblingAgent, "delete_webhook_subscription", { id: created.subscription.id })),
    ).toMatch(/not found/);
    await siblingAgent.close();
    expect(structured(await callTool(agentElsewhere, "list_webhook_subscriptions"))).toEqual({
      subscriptions: [],
      next_cursor: null,
    });

    expect(structured(await callTool(agent, "delete_webhook_subscription", { id: created.subscription.id }))).toEqual({
      deleted: true,
      id: created.subscription.id,
    });
    expect(structured(await callTool(agent, "list_webhook_subscriptions"))).toEqual({
      subscriptions: [],
      next_cursor: null,
    });
    expect(
      toolErrorText(await callTool(agent, "delete_webhook_subscription", { id: created.subscription.id })),
    ).toMatch(/not found/);
  });

  it("list_webhook_subscriptions pages with a cursor", async () => {
    const ids: number[] = [];
    for (const n of [1, 2, 3]) {
      const made = structured<{ subscription: SubscriptionJson }>(
        await callTool(agent, "create_webhook_subscription", {
          target_url: `http://127.0.0.1:19999/page-${n}`,
          event_type: "contact.updated",
        }),
      );
      ids.push(made.subscription.id);
    }
    const first = structured<Page<"subscriptions", SubscriptionJson>>(
      await callTool(agent, "list_webhook_subscriptions", { limit: 2 }),
    );
    expect(first.subscriptions).toHaveLength(2);
    const second = structured<Page<"subscriptions", SubscriptionJson>>(
      await callTool(agent, "list_webhook_subscriptions", { limit: 2, cursor: first.next_cursor }),
    );
    expect(second.next_cursor).toBeNull();
    expect([...first.subscriptions, ...second.subscriptions].map((s) => s.id).sort()).toEqual(ids.sort());
    for (const id of ids) structured(await callTool(agent, "delete_webhook_subscription", { id }));
  });
});

describe("bad input is a tool error with a clear message, and changes nothing", () => {
  it("each tool's arguments are checked with the REST schemas' rules", async () => {
    const cases: [tool: string, args: Record<string, unknown>, message: RegExp][] = [
      ["list_contacts", { limit: 0 }, /limit: expected a whole number from 1 to 100/],
      ["list_contacts", { limit: 101 }, /limit: expected a whole number from 1 to 100/],
      ["list_contacts", { limit: "ten" }, /limit: expected a whole number from 1 to 100/],
      [
        "list_contacts",
        { cursor: "not-a-cursor" },
        /^cursor: not a cursor this server issued; start again without one$/,
      ],
      ["list_contacts", { page: 2 }, /unknown argument "page"; the arguments are: limit, cursor/],
      ["get_contact", {}, /id: expected a string/],
      ["get_contact", { id: "42" }, /id: expected a contact id \(a UUID, as list_contacts shows\)/],
      ["list_webhook_subscriptions", { cursor: 7 }, /cursor: expected a string/],
      ["create_webhook_subscription", { event_type: "contact.created" }, /target_url: required/],
      [
        "create_webhook_subscription",
        { target_url: "http://127.0.0.1:19999/x" },
        /event_type: required \(contact\.created or contact\.updated\)/,
      ],
      [
        "create_webhook_subscription",
        { target_url: "http://127.0.0.1:19999/x", event_type: "contact.deleted" },
        /event_type: expected contact\.created or contact\.updated/,
      ],
      [
        "create_webhook_subscription",
        { target_url: "not a url", event_type: "contact.created" },
        /^target_url: expected an absolute URL/,
      ],
      [
        "create_webhook_subscription",
        { target_url: "http://127.0.0.1:19999/x", event_type: "contact.created", secret: "mine" },
        /unknown argument "secret"/,
      ],
      ["delete_webhook_subscription", { id: "abc" }, /id: expected a positive integer, not "abc"/],
      ["delete_webhook_subscription", { id: -1 }, /id: expected a positive integer, not -1/],
    ];
    for (const [tool, args, message] of cases) {
      expect(toolErrorText(await callTool(agent, tool, args)), `${tool} ${JSON.stringify(args)}`).toMatch(message);
    }
    expect(structured(await callTool(agent, "list_webhook_subscriptions"))).toEqual({
      subscriptions: [],
      next_cursor: null,
    });
  });

  it("an unknown tool is a tool error too, and nothing is a 500 over HTTP", async () => {
    expect(toolErrorText(await callTool(agent, "drop_tables"))).toMatch(/Tool drop_tables not found/);
    const res = await post(toolsCall("get_contact", { id: null }), { authorization: `Bearer ${await tokenFor(app)}` });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { result: { isError: boolean; content: { text: string }[] } };
    expect(body.result.isError).toBe(true);
    expect(body.result.content[0]!.text).toMatch(/id: expected a string/);
  });
});

describe("an outage", () => {
  it("a service that does not answer is a tool error saying temporarily unavailable (the webhook service, stopped last)", async () => {
    await platform.webhook.stop();
    const text = toolErrorText(await callTool(agent, "list_webhook_subscriptions"));
    expect(text).toMatch(/^temporarily unavailable: /);
    // The other tools still work.
    expect(structured(await callTool(agent, "get_organisation"))).toEqual({ id: orgId, name: "Agent Cards" });
  });
});
