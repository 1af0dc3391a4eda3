// What an error log line may hold when a statement fails: the statement
// without its parameters, the SQLSTATE, never a value (interaction ids and
// CSRF tokens travel as parameters), whichever way the failure arrived.
import { Writable } from "node:stream";
import type { MikroORM } from "@mikro-orm/postgresql";
import { Code } from "@connectrpc/connect";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OrganisationService } from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import { openDatabase } from "../../services/shared/database.js";
import { createLogger } from "../../services/shared/logger.js";
import { createRpcClient } from "../../services/shared/rpc/client.js";
import { startRpcServer, type RunningServer } from "../../services/shared/rpc/server.js";
import { createTestDatabase, type TestDatabase } from "../support/backends.js";
import { rpcError } from "../support/rpc.js";

const TOKEN = "l".repeat(40);
const INTERACTION = "int-SECRET-4f0c2a9e";
const CSRF = "csrf-SECRET-b81d77e3";
const STATEMENT = "select * from (values (?::uuid, ?)) as v(id, csrf)";

let db: TestDatabase;
let orm: MikroORM;
let server: RunningServer;
const lines: string[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  const quiet = createLogger("orm", "silent");
  orm = await openDatabase({
    clientUrl: db.url,
    schema: "public",
    entities: [],
    migrations: [],
    poolMax: 2,
    logger: quiet,
  });
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(
        ...chunk
          .toString("utf8")
          .split("\n")
          .filter((l) => l.trim()),
      );
      done();
    },
  });
  server = await startRpcServer({
    name: "log-secrets",
    host: "127.0.0.1",
    port: 0,
    logger: createLogger("log-secrets", "info", sink),
    internalTokens: [TOKEN],
    routes: (router) =>
      router.service(OrganisationService, {
        async getOrganisation(req) {
          if (req.id === "orm") await orm.em.fork().execute(STATEMENT, [INTERACTION, CSRF]);
          if (req.id === "wrapped") {
            try {
              await orm.em.fork().execute(STATEMENT, [INTERACTION, CSRF]);
            } catch (cause) {
              throw new Error("consent failed", { cause });
            }
          }
          if (req.id === "pg") {
            const client = new pg.Client({ connectionString: db.url });
            await client.connect();
            try {
              await client.query("select $1::uuid, $2::text", [INTERACTION, CSRF]);
            } finally {
              await client.end();
            }
          }
          return {};
        },
      }),
  });
});

afterAll(async () => {
  await server?.close();
  await orm?.close();
  await db?.drop();
});

const call = async (id: string) => {
  lines.length = 0;
  const client = createRpcClient(OrganisationService, { baseUrl: server.url, timeoutMs: 5000, internalToken: TOKEN });
  const err = await rpcError(client.getOrganisation({ id }));
  expect(err.code).toBe(Code.Internal);
  expect(err.rawMessage).not.toContain("SECRET");
  const logged = lines.join("\n");
  expect(logged).toContain('"level":50');
  expect(logged).not.toContain(INTERACTION);
  expect(logged).not.toContain(CSRF);
  expect(logged).toContain("22P02");
  return logged;
};

describe("a failing statement's error log", () => {
  it("carries the statement without its parameters, through MikroORM", async () => {
    expect(await call("orm")).toContain(JSON.stringify(STATEMENT).slice(1, -1));
  });

  it("does the same for a database error that is the cause of another error", async () => {
    const logged = await call("wrapped");
    expect(logged).toContain("consent failed");
    expect(logged).toContain(JSON.stringify(STATEMENT).slice(1, -1));
  });

  it("carries no value quoted by the server's message, through pg directly", async () => {
    await call("pg");
  });
});
