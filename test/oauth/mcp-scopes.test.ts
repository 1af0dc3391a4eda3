// Step-up authorization at /mcp: a tool called without the scopes it needs is
// a real HTTP 403 whose WWW-Authenticate names insufficient_scope and every
// scope the call needs (so a client asking for exactly those gets a token
// that works), the same on every retry, before the tool runs. The scope table
// is the REST routes' (the OpenAPI document's security of each operation).
import { StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { beforeAll, describe, expect, it } from "vitest";
import { TOOL_SCOPES } from "../../gateway/mcp/tool-scopes.js";
import { scopesNeeded } from "../../gateway/mcp/scope-check.js";
import { expectError } from "../support/api-client.js";
import {
  app,
  base,
  callTool,
  connect,
  makeClient,
  orgId,
  post,
  structured,
  tokenFor,
  toolsCall,
  useMcpSuite,
} from "../support/mcp-suite.js";

useMcpSuite();

const challenge = (scopes: string[]) =>
  `Bearer realm="bizcard", resource_metadata="${base}/.well-known/oauth-protected-resource/mcp", error="insufficient_scope", ` +
  `error_description="${scopes.length === 1 ? `this resource needs the scope ${scopes[0]}` : `this request needs the scopes ${scopes.join(" ")}`}", ` +
  `scope="${scopes.join(" ")}"`;

let contactsOnly: string;
let webhooksNoContacts: string;

beforeAll(async () => {
  contactsOnly = await tokenFor(app, ["contacts:read"]);
  webhooksNoContacts = await tokenFor(app, ["webhooks:read", "webhooks:write"]);
});

/** A tools/call that must be refused: 403 with the challenge naming `scopes`, twice the same. */
async function expectStepUp(token: string, body: unknown, scopes: string[]): Promise<void> {
  const answers: [string | null, string][] = [];
  for (let attempt = 0; attempt < 2; attempt++) {
    const res = await post(body, { authorization: `Bearer ${token}` });
    expect(res.status).toBe(403);
    expect(res.headers.get("www-authenticate")).toBe(challenge(scopes));
    expect(res.headers.get("cache-control")).toBe("no-store");
    answers.push([res.headers.get("www-authenticate"), await res.clone().text()]);
    await expectError(res, 403, "insufficient_scope");
  }
  expect(answers[1]).toEqual(answers[0]);
}

describe("a tool called without its scopes", () => {
  it("is HTTP 403 insufficient_scope naming the tool's scope, identical on retry", async () => {
    await expectStepUp(contactsOnly, toolsCall("get_organisation"), ["organisation:read"]);
    await expectStepUp(contactsOnly, toolsCall("list_webhook_subscriptions"), ["webhooks:read"]);
    await expectStepUp(contactsOnly, toolsCall("delete_webhook_subscription", { id: 1 }), ["webhooks:write"]);
    await expectStepUp(webhooksNoContacts, toolsCall("list_contacts"), ["contacts:read"]);
    await expectStepUp(webhooksNoContacts, toolsCall("get_contact", { id: "00000000-0000-4000-8000-000000000000" }), [
      "contacts:read",
    ]);
  });

  it("create_webhook_subscription names webhooks:write AND contacts:read, whichever is missing, and creates nothing", async () => {
    const args = { target_url: "http://127.0.0.1:19999/step-up", event_type: "contact.created" };
    await expectStepUp(webhooksNoContacts, toolsCall("create_webhook_subscription", args), [
      "webhooks:write",
      "contacts:read",
    ]);
    await expectStepUp(contactsOnly, toolsCall("create_webhook_subscription", args), [
      "webhooks:write",
      "contacts:read",
    ]);
    const agent = await connect(await tokenFor(app));
    expect(structured(await callTool(agent, "list_webhook_subscriptions"))).toEqual({
      subscriptions: [],
      next_cursor: null,
    });
    await agent.close();
  });

  it("a token with exactly the scopes the challenge named is served", async () => {
    const stepped = await tokenFor(app, ["webhooks:write", "contacts:read"]);
    const agent = await connect(stepped);
    const made = structured<{ subscription: { id: number } }>(
      await callTool(agent, "create_webhook_subscription", {
        target_url: "http://127.0.0.1:19999/stepped",
        event_type: "contact.created",
      }),
    );
    expect(structured(await callTool(agent, "delete_webhook_subscription", { id: made.subscription.id }))).toEqual({
      deleted: true,
      id: made.subscription.id,
    });
    await agent.close();
  });

  it("the scopes come from the client's grant, not the client's registration: a client limited to contacts:read gets the same 403", async () => {
    const limited = await makeClient("Contacts agent", orgId, ["contacts:read"]);
    const token = await tokenFor(limited, ["contacts:read"]);
    await expectStepUp(token, toolsCall("get_organisation"), ["organisation:read"]);
    const agent = await connect(token);
    expect(structured<{ contacts: unknown[] }>(await callTool(agent, "list_contacts")).contacts).toEqual([]);
    await agent.close();
  });

  it("the SDK's client (without an auth provider) gets the 403 as an HTTP error, not a tool result", async () => {
    const agent = await connect(contactsOnly);
    const error = await callTool(agent, "get_organisation").then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(error).toBeInstanceOf(StreamableHTTPError);
    expect((error as StreamableHTTPError).code).toBe(403);
    expect((error as Error).message).toMatch(/insufficient_scope/);
    await agent.close();
  });
});

describe("what needs no scope", () => {
  it("initialize, tools/list and notifications need only a valid /mcp token; an unknown tool is the server's tool error", async () => {
    const none = await tokenFor(app, []);
    const list = await post({ jsonrpc: "2.0", id: 1, method: "tools/list" }, { authorization: `Bearer ${none}` });
    expect(list.status).toBe(200);
    expect(((await list.json()) as { result: { tools: unknown[] } }).result.tools).toHaveLength(6);
    expect(
      (await post({ jsonrpc: "2.0", method: "notifications/initialized" }, { authorization: `Bearer ${none}` })).status,
    ).toBe(202);
    const unknown = await post(toolsCall("no_such_tool"), { authorization: `Bearer ${none}` });
    expect(unknown.status).toBe(200);
    expect(((await unknown.json()) as { result: { isError: boolean } }).result.isError).toBe(true);
  });
});

describe("a batch", () => {
  it("is one operation: refused naming every scope its tool calls need, when any is missing", async () => {
    const batch = [
      toolsCall("list_contacts", {}, 1),
      toolsCall("get_organisation", {}, 2),
      { jsonrpc: "2.0", id: 3, method: "tools/list" },
    ];
    await expectStepUp(contactsOnly, batch, ["contacts:read", "organisation:read"]);
  });

  it("is answered, one response per request, when the token holds them all", async () => {
    const token = await tokenFor(app, ["contacts:read", "organisation:read"]);
    const res = await post([toolsCall("list_contacts", {}, 1), toolsCall("get_organisation", {}, 2)], {
      authorization: `Bearer ${token}`,
    });
    expect(res.status).toBe(200);
    const answers = (await res.json()) as { id: number; result: { isError?: boolean; structuredContent: unknown } }[];
    expect(answers.map((a) => a.id).sort()).toEqual([1, 2]);
    expect(answers.find((a) => a.id === 2)!.result.structuredContent).toEqual({ id: orgId, name: "Agent Cards" });
  });
});

describe("the scope table", () => {
  it("is the REST routes' scopes, as the OpenAPI document declares them", async () => {
    const doc = (await (await fetch(`${base}/openapi.json`)).json()) as {
      paths: Record<string, Record<string, { operationId: string; security: Record<string, string[]>[] }>>;
    };
    const scopesOf = (operationId: string) => {
      for (const item of Object.values(doc.paths))
        for (const op of Object.values(item)) if (op.operationId === operationId) return op.security[0]!.oauth2;
      throw new Error(`no operation ${operationId}`);
    };
    expect(TOOL_SCOPES.get_organisation).toEqual(scopesOf("getMe"));
    expect(TOOL_SCOPES.list_contacts).toEqual(scopesOf("listContacts"));
    expect(TOOL_SCOPES.get_contact).toEqual(scopesOf("listContacts"));
    expect(TOOL_SCOPES.list_webhook_subscriptions).toEqual(scopesOf("listSubscriptions"));
    expect(TOOL_SCOPES.create_webhook_subscription).toEqual(scopesOf("createSubscription"));
    expect(TOOL_SCOPES.delete_webhook_subscription).toEqual(scopesOf("deleteSubscription"));
  });

  it("the pre-check reads only tools/call messages naming a tool", () => {
    expect(scopesNeeded(toolsCall("create_webhook_subscription"))).toEqual(["webhooks:write", "contacts:read"]);
    expect(scopesNeeded({ jsonrpc: "2.0", id: 1, method: "tools/list" })).toEqual([]);
    expect(scopesNeeded({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: 42 } })).toEqual([]);
    expect(scopesNeeded({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "toString" } })).toEqual([]);
    expect(scopesNeeded([toolsCall("get_contact"), toolsCall("list_contacts"), "junk", null])).toEqual([
      "contacts:read",
    ]);
  });
});
