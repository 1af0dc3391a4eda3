// The real `bizcard` command (bin/bizcard.js) as a user runs it: usage and
// --help, the exit status, --json errors as one JSON object, and the
// organisation passed explicitly. It talks to a real organisation service (and
// the other three, found on their *_RPC_PORT as the platform reads them).
import { readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OrganisationService } from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import { startPlatform, type OrganisationApp, type Platform, type StartedService } from "../support/platform.js";
import { freePort, ROOT, runBizcard, type BizcardRun } from "../support/processes.js";

const TOKEN = "c".repeat(40);
let platform: Platform;
let svc: StartedService<OrganisationApp>;
let orgId: string;
let otherOrgId: string;
let contactId: string;

/** Runs bin/bizcard.js to its exit, against the test's organisation service unless `env` says otherwise. */
async function bizcard(args: string[], env: Record<string, string | undefined> = {}): Promise<BizcardRun> {
  return runBizcard(args, {
    ORGANISATION_RPC_URL: svc.server.url,
    AUTH_RPC_URL: undefined,
    ORGANISATION_RPC_PORT: undefined,
    AUTH_RPC_PORT: undefined,
    DATA_DIR: undefined,
    INTERNAL_RPC_TOKEN: TOKEN,
    ...env,
  });
}

/** The single JSON object a --json run printed, and nothing else anywhere. */
function onlyJson(run: BizcardRun): unknown {
  const lines = run.stdout.split("\n").filter(Boolean);
  expect(lines, `stdout: ${run.stdout}\nstderr: ${run.stderr}`).toHaveLength(1);
  expect(run.stderr, "--json prints nothing else").toBe("");
  return JSON.parse(lines[0]!);
}

beforeAll(async () => {
  // Every service: the command finds each one on the port the platform gave it.
  platform = await startPlatform({ token: TOKEN, auth: true, webhook: true, delivery: true });
  svc = platform.organisation;
  const client = svc.client(OrganisationService);
  const a = await client.createOrganisation({ name: "CLI A", ownerEmail: "a@cli.test", ownerPassword: "password-a" });
  const b = await client.createOrganisation({ name: "CLI B", ownerEmail: "b@cli.test", ownerPassword: "password-b" });
  orgId = a.organisation!.id;
  otherOrgId = b.organisation!.id;
  contactId = (await client.createContact({ organisationId: orgId, fields: { firstName: "Ada" } })).contact!.id;
}, 120_000);

afterAll(async () => {
  await platform?.stop();
});

describe("bizcard usage", { timeout: 60_000 }, () => {
  it("--help prints the usage on stdout and exits 0, with the required flags outside brackets", async () => {
    const run = await bizcard(["--help"]);
    expect(run.code).toBe(0);
    expect(run.stderr).toBe("");
    expect(run.stdout).toMatch(/^usage:\n/);
    const lines = run.stdout.split("\n").map((l) => l.trim());
    expect(lines).toContain("bizcard org create --name NAME --email EMAIL --password PASSWORD [--json]");
    expect(lines).toContain("bizcard contact create --org ID (--first-name F | --last-name L) [FIELD…] [--json]");
    expect(lines).toContain("bizcard contact update --org ID --id ID FIELD [FIELD…] [--json]");
    expect(run.stdout).toContain("Flags outside [brackets] are required");
    // The README's list of commands is this usage, line for line.
    const readme = readFileSync(path.join(ROOT, "README.md"), "utf8");
    const block = /## The `bizcard` command\n\n```\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(block?.trim().split("\n")).toEqual(lines.filter((l) => l.startsWith("bizcard ")));
    // The same from inside a command.
    const inside = await bizcard(["contact", "update", "--help"]);
    expect(inside.code).toBe(0);
    expect(inside.stdout).toBe(run.stdout);
  });

  it("`bizcard org` prints the usage of org on stderr and exits 2", async () => {
    const run = await bizcard(["org"]);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe("");
    expect(run.stderr).toContain("bizcard: org: which command? (create, list)\nusage:\n");
    expect(run.stderr).toContain("bizcard org create --name NAME --email EMAIL --password PASSWORD [--json]");
  });

  it("`contact update` requires --org: a usage error, exit 2, before any call", async () => {
    const run = await bizcard(["contact", "update", "--id", contactId, "--notes", "x"]);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stdout).toBe("");
    expect(run.stderr).toMatch(/^bizcard: missing --org\nusage:\n {2}bizcard contact update --org ID --id ID/);
  });
});

describe("bizcard names the flag or command a person typed wrong", { timeout: 60_000 }, () => {
  it("an unknown flag, command or action: exit 2, the nearest one suggested", async () => {
    const flag = await bizcard(["contact", "create", "--org", orgId, "--frist-name", "Ada"]);
    expect(flag.code).toBe(2);
    expect(flag.stdout).toBe("");
    expect(flag.stderr).toMatch(/^bizcard: unknown flag --frist-name \(did you mean --first-name\?\)\nusage:\n/);
    const action = await bizcard(["org", "craete"]);
    expect(action.code).toBe(2);
    expect(action.stderr).toMatch(/^bizcard: unknown command: org craete \(did you mean org create\?\)\n/);
    const group = await bizcard(["contacts", "create"]);
    expect(group.code).toBe(2);
    expect(group.stderr).toMatch(/^bizcard: unknown command: contacts \(did you mean contact\?\)\n/);
    const far = await bizcard(["contact", "create", "--org", orgId, "--colour", "red"]);
    expect(far.stderr).toMatch(/^bizcard: unknown flag --colour\nusage:/);
  });

  it("an id flag that is not a UUID is refused by its flag's name, before any call", async () => {
    const run = await bizcard(["contact", "create", "--org", "not-a-uuid", "--first-name", "Ada", "--json"]);
    expect(run.code).toBe(2);
    expect(onlyJson(run)).toEqual({
      error: "invalid_usage",
      error_description: '--org: expected an organisation id (a UUID), got "not-a-uuid"',
    });
  });
});

describe("bizcard --json errors", { timeout: 60_000 }, () => {
  it("a usage error is one JSON object, exit 2", async () => {
    const run = await bizcard(["contact", "update", "--id", contactId, "--notes", "x", "--json"]);
    expect(run.code).toBe(2);
    expect(onlyJson(run)).toEqual({ error: "invalid_usage", error_description: "missing --org" });
    const unknown = await bizcard(["org", "--json"]);
    expect(unknown.code).toBe(2);
    expect(onlyJson(unknown)).toEqual({
      error: "invalid_usage",
      error_description: "org: which command? (create, list)",
    });
  });

  it("an RPC failure is one JSON object, exit 1; without --json one line on stderr", async () => {
    const args = ["contact", "update", "--org", otherOrgId, "--id", contactId, "--notes", "hijacked"];
    const run = await bizcard([...args, "--json"]);
    expect(run.code).toBe(1);
    expect(onlyJson(run)).toEqual({ error: "not_found", error_description: "contact not found" });
    const text = await bizcard(args);
    expect(text.code).toBe(1);
    expect(text.stdout).toBe("");
    expect(text.stderr).toBe("bizcard: contact not found (not_found)\n");

    const down = await bizcard([...args, "--json"], { ORGANISATION_RPC_URL: `http://127.0.0.1:${await freePort()}` });
    expect(down.code).toBe(1);
    expect(onlyJson(down)).toMatchObject({ error: "unavailable", error_description: expect.any(String) });
  });

  it("the organisation's own contact is updated with --org", async () => {
    const run = await bizcard([
      "contact",
      "update",
      "--org",
      orgId,
      "--id",
      contactId,
      "--notes",
      "by the CLI",
      "--json",
    ]);
    expect(run.code, run.stderr).toBe(0);
    expect(onlyJson(run)).toMatchObject({ id: contactId, first_name: "Ada", notes: "by the CLI" });
  });
});

// The platform reads its services' ports from *_RPC_PORT (services/shared/config.ts);
// the command run in the same environment must find them there, not on the
// default ports, without the operator spelling each *_RPC_URL out too.
describe("bizcard on the ports the platform reads", { timeout: 60_000 }, () => {
  const portOf = (service: { server: { url: string } }) => new URL(service.server.url).port;
  const noUrls = {
    ORGANISATION_RPC_URL: undefined,
    AUTH_RPC_URL: undefined,
    WEBHOOK_RPC_URL: undefined,
    DELIVERY_RPC_URL: undefined,
  };
  const ports = () => ({
    ORGANISATION_RPC_PORT: portOf(platform.organisation),
    AUTH_RPC_PORT: portOf(platform.auth),
    WEBHOOK_RPC_PORT: portOf(platform.webhook),
    DELIVERY_RPC_PORT: portOf(platform.delivery),
  });

  it("reaches each service on its *_RPC_PORT when no *_RPC_URL is set", async () => {
    const env = { ...noUrls, ...ports() };
    // The test proves nothing on the default ports.
    for (const port of Object.values(ports())) expect(["7101", "7102", "7103", "7104"]).not.toContain(port);

    const organisation = await bizcard(
      ["contact", "update", "--org", orgId, "--id", contactId, "--notes", "by port", "--json"],
      env,
    );
    expect(organisation.code, organisation.stderr).toBe(0);
    expect(onlyJson(organisation)).toMatchObject({ id: contactId, notes: "by port" });
    const auth = await bizcard(["client", "list", "--json"], env);
    expect(auth.code, auth.stderr).toBe(0);
    const delivery = await bizcard(["deliveries", "failed", "--json"], env);
    expect(delivery.code, delivery.stderr).toBe(0);
    // No such subscription: the webhook service answered (not_found), it was reached.
    const webhook = await bizcard(
      ["subscriptions", "rotate-secret", "999999", "--org", orgId, "--client", "nobody", "--json"],
      env,
    );
    expect(webhook.code).toBe(1);
    expect(onlyJson(webhook)).toMatchObject({ error: "not_found" });
  });

  it("reads a port as the platform does (trimmed), and an explicit *_RPC_URL still wins over it", async () => {
    const args = ["contact", "update", "--org", orgId, "--id", contactId, "--notes", "url wins", "--json"];
    const padded = await bizcard(args, { ...noUrls, ORGANISATION_RPC_PORT: ` ${portOf(platform.organisation)} ` });
    expect(padded.code, padded.stderr).toBe(0);
    const wins = await bizcard(args, {
      ORGANISATION_RPC_URL: platform.organisation.server.url,
      ORGANISATION_RPC_PORT: String(await freePort()),
    });
    expect(wins.code, wins.stderr).toBe(0);
    expect(onlyJson(wins)).toMatchObject({ id: contactId, notes: "url wins" });
  });
});
