// The auth service's client registry over real RPC: what a client may
// register, the secret shown once and stored only as a hash.
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AuthService } from "../../gen/bizcard/auth/v1/auth_pb.js";
import { hashSecret } from "../../services/auth/clients/client-secret.js";
import type { ServiceApp } from "../../services/shared/service-app.js";
import type { TestDatabase } from "../support/backends.js";
import { rpcError } from "../support/rpc.js";
import { startPlatform, type Platform, type StartedService } from "../support/platform.js";

const TOKEN = "a".repeat(40);
let platform: Platform;
let db: TestDatabase;
let auth: StartedService<ServiceApp>;
let orgId: string;

beforeAll(async () => {
  platform = await startPlatform({
    token: TOKEN,
    auth: true,
    member: { organisation: "Owner Org", email: "owner@clients.test", password: "password-o" },
  });
  ({ db, auth, organisationId: orgId } = platform);
});

afterAll(async () => {
  await platform?.stop();
});

const client = () => auth.client(AuthService);
const refused = async (p: Promise<unknown>, message: RegExp) => {
  const err = await rpcError(p);
  expect(err.code).toBe(Code.InvalidArgument);
  expect(err.rawMessage).toMatch(message);
};

describe("client registry", () => {
  it("registers a confidential client: secret once, only its hash stored, all scopes by default", async () => {
    const res = await client().createClient({ name: " Zapier ", redirectUris: ["https://zapier.com/oauth/return/"] });
    expect(res.clientSecret).toMatch(/^bcs_[A-Za-z0-9_-]{43}$/);
    expect(res.client).toMatchObject({
      clientId: expect.stringMatching(/^bc_/),
      name: "Zapier",
      redirectUris: ["https://zapier.com/oauth/return/"],
      scopes: ["organisation:read", "webhooks:read", "webhooks:write", "contacts:read"],
      public: false,
      ownerOrganisationId: "",
    });
    const [row] = await dbRows(res.client!.clientId);
    expect(row.secret_hash).toBe(hashSecret(res.clientSecret));
    expect(row.secret_hash).not.toContain(res.clientSecret);
    const got = await client().getClient({ clientId: res.client!.clientId });
    expect(got.client?.name).toBe("Zapier");
  });

  it("registers public clients without a secret, and owned clients for client_credentials", async () => {
    const pub = await client().createClient({
      name: "CLI",
      redirectUris: ["http://127.0.0.1:8765/cb"],
      public: true,
      scopes: ["organisation:read"],
    });
    expect(pub.clientSecret).toBe("");
    expect(pub.client?.public).toBe(true);
    expect(pub.client?.scopes).toEqual(["organisation:read"]);
    const owned = await client().createClient({ name: "CRM sync", ownerOrganisationId: orgId });
    expect(owned.client?.ownerOrganisationId).toBe(orgId);
    expect(owned.clientSecret).toMatch(/^bcs_/);
  });

  it("refuses what could not work, naming the field, and stores nothing", async () => {
    const before = await dbCount();
    await refused(client().createClient({ name: "", redirectUris: ["https://a.example/cb"] }), /^name: required/);
    await refused(client().createClient({ name: "X", redirectUris: [] }), /^redirect_uris: at least one/);
    await refused(
      client().createClient({ name: "X", redirectUris: ["http://evil.example/cb"] }),
      /^redirect_uri: must use https/,
    );
    await refused(
      client().createClient({ name: "X", redirectUris: ["https://a.example/cb#frag"] }),
      /^redirect_uri: must not contain a fragment/,
    );
    await refused(
      client().createClient({ name: "X", redirectUris: ["https://a.example/c b"] }),
      /^redirect_uri: must not contain spaces/,
    );
    await refused(
      client().createClient({ name: "X", redirectUris: ["https://a.example/cb\n"] }),
      /^redirect_uri: must not contain spaces/,
    );
    await refused(
      client().createClient({ name: "X", redirectUris: ["/relative"] }),
      /^redirect_uri: not an absolute URI/,
    );
    await refused(
      client().createClient({ name: "X", redirectUris: ["https://u:p@a.example/cb"] }),
      /^redirect_uri: must not contain user information/,
    );
    await refused(
      client().createClient({ name: "X", redirectUris: ["https://a.example/cb"], scopes: ["admin"] }),
      /^scopes: unknown scope admin/,
    );
    await refused(
      client().createClient({ name: "X", public: true, ownerOrganisationId: orgId }),
      /^owner_organisation_id: a public client cannot be owned/,
    );
    await refused(
      client().createClient({ name: "X", ownerOrganisationId: "00000000-0000-4000-8000-000000000000" }),
      /^owner_organisation_id: no such organisation/,
    );
    expect((await rpcError(client().getClient({ clientId: "bc_nope" }))).code).toBe(Code.NotFound);
    expect(await dbCount()).toBe(before); // none of the refused ones
  });
});

async function dbRows(clientId: string): Promise<{ secret_hash: string }[]> {
  const pg = (await import("pg")).default;
  const c = new pg.Client({ connectionString: db.url });
  await c.connect();
  try {
    return (await c.query(`select secret_hash from auth.client where id = $1`, [clientId])).rows;
  } finally {
    await c.end();
  }
}

async function dbCount(): Promise<number> {
  const pg = (await import("pg")).default;
  const c = new pg.Client({ connectionString: db.url });
  await c.connect();
  try {
    return Number((await c.query(`select count(*) from auth.client`)).rows[0].count);
  } finally {
    await c.end();
  }
}
