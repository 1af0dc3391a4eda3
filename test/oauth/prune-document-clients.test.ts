// The auth service's pruning of client rows kept from Client ID Metadata
// Documents that nobody uses: registration metadata_document, no grant, no
// sign-in under way, and a copy expired more than UNUSED_DOCUMENT_CLIENT_DAYS
// ago. Every other client stays. A later authorization request naming a
// pruned client_id simply fetches the document again.
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { UNUSED_DOCUMENT_CLIENT_DAYS } from "../../services/auth/clients/metadata-document/unused-clients.js";
import { startPlatform, type Platform } from "../support/platform.js";
import { startDocumentServer, type DocumentServer } from "../support/metadata-documents.js";
import { waitFor } from "../support/processes.js";

const REDIRECT_URI = "http://127.0.0.1:9876/callback";
const ORG = "00000000-0000-4000-8000-000000000001";

let platform: Platform;
let documents: DocumentServer;
let pool: pg.Pool;
const exec = async (sql: string, params: unknown[] = []) =>
  (await pool.query(sql, params)).rows as Record<string, unknown>[];

beforeAll(async () => {
  documents = await startDocumentServer();
  platform = await startPlatform({
    // The pruning timer every second.
    config: { OAUTH_ALLOW_INSECURE_REDIRECTS: "true", PRUNE_INTERVAL_SECONDS: "1" },
    auth: true,
    webhook: false,
    delivery: false,
    gateway: { publicUrlPort: true },
  });
  pool = new pg.Pool({ connectionString: platform.db.url, max: 2 });
}, 60_000);

afterAll(async () => {
  await pool?.end();
  await platform?.stop();
  await documents?.close();
});

/** A client row as the auth service keeps it; `expiredDaysAgo` sets a metadata document's expiry. */
function clientRow(id: string, registration: string, expiredDaysAgo?: number): [string, unknown[]] {
  const expiry = expiredDaysAgo === undefined ? "null" : `now() - make_interval(days => ${expiredDaysAgo})`;
  return [
    `insert into "auth"."client" ("id", "name", "redirect_uris", "scopes", "public", "created_at", "grant_types",
       "registration", "token_endpoint_auth_method", "metadata_fetched_at", "metadata_expires_at")
     values ($1, 'Kept?', '[]', '[]', true, now() - interval '400 days', '["authorization_code"]', $2, 'none', ${expiry === "null" ? "null" : "now() - interval '400 days'"}, ${expiry})`,
    [id, registration],
  ];
}

/**
 * The statements in one transaction: the pruning, every second, sees all their rows or none
 * (a client committed before its grant could be pruned in between, and the grant then fail).
 */
async function inOneTransaction(statements: [string, unknown[]][]): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query("begin");
    for (const [sql, params] of statements) await client.query(sql, params);
    await client.query("commit");
  } catch (err) {
    await client.query("rollback");
    throw err;
  } finally {
    client.release();
  }
}

const clientIds = async () => (await exec(`select "id" from "auth"."client" order by 1`)).map((r) => String(r.id));

const authorize = (clientId: string) =>
  fetch(
    `${platform.base}/oauth/authorize?${new URLSearchParams({
      response_type: "code",
      client_id: clientId,
      redirect_uri: REDIRECT_URI,
      scope: "organisation:read",
      state: "s",
      code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
      code_challenge_method: "S256",
    })}`,
    { redirect: "manual" },
  );

describe("unused metadata document clients", () => {
  it(`deletes only those without a grant or sign-in whose copy expired over ${UNUSED_DOCUMENT_CLIENT_DAYS} days ago`, async () => {
    const old = UNUSED_DOCUMENT_CLIENT_DAYS + 1;
    await inOneTransaction([
      clientRow("https://unused.example/agent.json", "metadata_document", old),
      clientRow("https://connected.example/agent.json", "metadata_document", old),
      clientRow("https://signing-in.example/agent.json", "metadata_document", old),
      clientRow("https://recent.example/agent.json", "metadata_document", UNUSED_DOCUMENT_CLIENT_DAYS - 1),
      clientRow("old-operator-client", "operator"),
      clientRow("old-dynamic-client", "dynamic"),
      [
        `insert into "auth"."grant" ("id", "organisation_id", "client_id", "scopes", "created_at", "updated_at")
          values (gen_random_uuid(), '${ORG}', 'https://connected.example/agent.json', '[]', now() - interval '90 days', now() - interval '90 days')`,
        [],
      ],
      [
        `insert into "auth"."interaction" ("id", "kind", "csrf_token", "scopes", "created_at", "expires_at", "client_id")
          values ('signing-in', 'authorize', 'c', '[]', now(), now() + interval '10 minutes', 'https://signing-in.example/agent.json')`,
        [],
      ],
    ]);

    await waitFor(
      async () => !(await clientIds()).includes("https://unused.example/agent.json"),
      20_000,
      "the unused document client pruned",
    );
    expect(await clientIds()).toEqual([
      "https://connected.example/agent.json",
      "https://recent.example/agent.json",
      "https://signing-in.example/agent.json",
      "old-dynamic-client",
      "old-operator-client",
    ]);
  });

  it("a pruned client_id is fetched again by the next authorization request", async () => {
    const doc = documents.serve("/agents/returning.json", (url) => ({
      body: {
        client_id: url,
        client_name: "Returning",
        redirect_uris: [REDIRECT_URI],
        token_endpoint_auth_method: "none",
      },
      headers: { "cache-control": "max-age=3600" },
    }));
    const first = await authorize(doc.url);
    expect(first.status, await first.text()).toBe(303);
    expect(doc.fetches()).toBe(1);
    expect(await clientIds()).toContain(doc.url);

    // Nobody connected it, and its copy expired long ago.
    await exec(`update "auth"."client" set "metadata_expires_at" = now() - make_interval(days => $2) where "id" = $1`, [
      doc.url,
      UNUSED_DOCUMENT_CLIENT_DAYS + 1,
    ]);
    await exec(`delete from "auth"."interaction" where "client_id" = $1`, [doc.url]);
    await waitFor(async () => !(await clientIds()).includes(doc.url), 20_000, "the document client pruned");

    const again = await authorize(doc.url);
    expect(again.status, await again.text()).toBe(303);
    expect(doc.fetches()).toBe(2);
    const [row] = await exec(
      `select "registration", "metadata_expires_at" > now() as "fresh" from "auth"."client" where "id" = $1`,
      [doc.url],
    );
    expect(row).toEqual({ registration: "metadata_document", fresh: true });
  });
});
