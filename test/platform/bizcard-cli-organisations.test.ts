// `bizcard org list` (bin/bizcard.js as an operator runs it) and the
// ListOrganisations RPC under it, against the real organisation service: every
// organisation, newest first, so that an operator who lost an id finds it by
// name; the command follows the pages, the RPC pages like every other list.
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OrganisationService } from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import { OrganisationEntity } from "../../services/organisation/organisations/organisation.entity.js";
import { startPlatform, type Platform } from "../support/platform.js";
import { runBizcard, type BizcardRun } from "../support/processes.js";
import { rpcError } from "../support/rpc.js";

const TOKEN = "o".repeat(40);
let platform: Platform;
let first: { id: string; name: string };
let second: { id: string; name: string };

async function bizcard(args: string[]): Promise<BizcardRun> {
  return runBizcard(args, {
    ORGANISATION_RPC_URL: platform.organisation.server.url,
    ORGANISATION_RPC_PORT: undefined,
    DATA_DIR: undefined,
    INTERNAL_RPC_TOKEN: TOKEN,
  });
}

function onlyJson(run: BizcardRun): Record<string, unknown> {
  const lines = run.stdout.split("\n").filter(Boolean);
  expect(lines, `stdout: ${run.stdout}\nstderr: ${run.stderr}`).toHaveLength(1);
  expect(run.stderr).toBe("");
  return JSON.parse(lines[0]!) as Record<string, unknown>;
}

async function createOrganisation(name: string, email: string): Promise<{ id: string; name: string }> {
  const run = await bizcard([
    "org",
    "create",
    "--name",
    name,
    "--email",
    email,
    "--password",
    "correct horse",
    "--json",
  ]);
  expect(run.code, run.stderr).toBe(0);
  return (onlyJson(run) as { organisation: { id: string; name: string } }).organisation;
}

beforeAll(async () => {
  platform = await startPlatform({ token: TOKEN });
  first = await createOrganisation("Acme Cards", "owner@acme.test");
  second = await createOrganisation("Globex", "owner@globex.test");
}, 120_000);

afterAll(async () => {
  await platform?.stop();
});

describe("bizcard org list", { timeout: 60_000 }, () => {
  it("--json: every organisation, newest first, with its id, name and creation time", async () => {
    const run = await bizcard(["org", "list", "--json"]);
    expect(run.code, run.stderr).toBe(0);
    const { organisations } = onlyJson(run) as { organisations: Record<string, unknown>[] };
    expect(organisations.map((o) => [o.id, o.name])).toEqual([
      [second.id, "Globex"],
      [first.id, "Acme Cards"],
    ]);
    for (const o of organisations) {
      expect(new Date(o.created_at as string).toISOString()).toBe(o.created_at);
      expect(new Date(o.created_at as string).getTime()).toBeGreaterThan(Date.now() - 120_000);
    }
  });

  it("the text is one line each under a heading", async () => {
    const run = await bizcard(["org", "list"]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toBe("");
    const lines = run.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^ID\s+CREATED\s+NAME$/);
    const time = "\\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z";
    expect(lines.slice(1)).toHaveLength(2);
    expect(lines[1]).toMatch(new RegExp(`^${second.id}  ${time}  Globex$`));
    expect(lines[2]).toMatch(new RegExp(`^${first.id}  ${time}  Acme Cards$`));
  });

  it("is in the usage, with its order; `org` names both commands and a typo its nearest", async () => {
    const help = await bizcard(["--help"]);
    expect(help.stdout).toContain("  bizcard org list [--json]\n");
    expect(help.stdout).toContain("org list: every organisation (id, creation time, name), newest first.");
    const which = await bizcard(["org", "--json"]);
    expect(which.code).toBe(2);
    expect(onlyJson(which)).toEqual({
      error: "invalid_usage",
      error_description: "org: which command? (create, list)",
    });
    const typo = await bizcard(["org", "lsit"]);
    expect(typo.code).toBe(2);
    expect(typo.stderr).toMatch(/^bizcard: unknown command: org lsit \(did you mean org list\?\)\n/);
    const extra = await bizcard(["org", "list", "--name", "Acme"]);
    expect(extra.code).toBe(2);
    expect(extra.stderr).toMatch(/^bizcard: unknown flag --name\nusage:\n {2}bizcard org list \[--json\]\n/);
  });
});

describe("ListOrganisations", { timeout: 60_000 }, () => {
  const client = () => platform.organisation.client(OrganisationService);

  it("pages newest first with page_size and page_token", async () => {
    const one = await client().listOrganisations({ pageSize: 1 });
    expect(one.organisations.map((o) => o.id)).toEqual([second.id]);
    expect(one.organisations[0]!.createTime).toBeDefined();
    expect(one.nextPageToken).not.toBe("");
    const two = await client().listOrganisations({ pageSize: 1, pageToken: one.nextPageToken });
    expect(two.organisations.map((o) => [o.id, o.name])).toEqual([[first.id, "Acme Cards"]]);
    expect(two.nextPageToken).toBe("");
  });

  it("refuses a bad page_size or page_token, and a caller without the internal credential", async () => {
    expect((await rpcError(client().listOrganisations({ pageSize: 101 }))).code).toBe(Code.InvalidArgument);
    expect((await rpcError(client().listOrganisations({ pageToken: "nope" }))).rawMessage).toBe(
      "page_token: not a token this service issued",
    );
    const stranger = platform.organisation.client(OrganisationService, "x".repeat(40));
    expect((await rpcError(stranger.listOrganisations({}))).code).toBe(Code.Unauthenticated);
  });

  it("the command reads every page: more organisations than one page holds", async () => {
    const em = platform.organisation.app.orm.em.fork();
    const older = Array.from({ length: 120 }, (_, i) => ({
      id: crypto.randomUUID(),
      name: `Old ${i}`,
      createdAt: new Date(Date.UTC(2020, 0, 1, 0, 0, i)),
    }));
    await em.insertMany(OrganisationEntity, older);
    const run = await bizcard(["org", "list", "--json"]);
    expect(run.code, run.stderr).toBe(0);
    const { organisations } = onlyJson(run) as { organisations: { id: string }[] };
    expect(organisations).toHaveLength(122);
    expect(organisations.slice(0, 3).map((o) => o.id)).toEqual([second.id, first.id, older[119]!.id]);
    expect(organisations.at(-1)!.id).toBe(older[0]!.id);
    expect(new Set(organisations.map((o) => o.id)).size).toBe(122);
  });
});
