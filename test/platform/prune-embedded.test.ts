// Bounded tables on the embedded start (PGlite served on a loopback port, one
// connection per service, as `npm start` without DATABASE_URL): the auth
// and delivery services' timers prune their expired rows in batches and keep
// the live ones.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createAuthApp } from "../../services/auth/auth-app.js";
import { createDeliveryApp } from "../../services/delivery/delivery-app.js";
import { EMBEDDED_POOL_MAX, startEmbeddedPostgres } from "../../scripts/embedded/embedded-postgres.js";
import { InProcessBus } from "../../services/shared/event-bus/in-process-bus.js";
import { createLogger } from "../../services/shared/logger.js";
import { testConfig } from "../support/backends.js";
import { waitFor } from "../support/processes.js";
import {
  AUTH_ROWS_KEPT,
  DELIVERY_ROWS_KEPT,
  authRowsLeft,
  deliveryRowsLeft,
  seedAuthRows,
  seedDeliveryRows,
  type Exec,
} from "../support/prune-rows.js";

const config = testConfig({
  NATS_URL: "",
  PRUNE_INTERVAL_SECONDS: "1",
  PRUNE_BATCH_SIZE: "100",
  DELIVERY_LOG_RETENTION_DAYS: "7",
});
let dir: string;
let embedded: Awaited<ReturnType<typeof startEmbeddedPostgres>> | undefined;
let app: Awaited<ReturnType<typeof createAuthApp>> | undefined;
let bus: InProcessBus;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "bizcard-prune-"));
  embedded = await startEmbeddedPostgres(dir, "auth");
  bus = new InProcessBus(config.NATS_SUBJECT_PREFIX);
  app = await createAuthApp({
    config,
    databaseUrl: embedded.url,
    databasePoolMax: EMBEDDED_POOL_MAX,
    bus,
    logger: createLogger("test", config.LOG_LEVEL),
  });
});

afterAll(async () => {
  await app?.close();
  await bus?.close();
  await embedded?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

it("the auth service prunes expired rows in batches on the embedded start, and keeps the live ones", async () => {
  // The service's own single connection, as the pruner uses it.
  const exec: Exec = (sql, params) =>
    app!.orm.em
      .fork()
      .getConnection()
      .execute(sql, params ?? [], "all");
  await seedAuthRows(exec);
  expect((await authRowsLeft(exec)).session).toHaveLength(251);
  await app!.start();
  const left = await waitFor(
    async () => {
      const rows = await authRowsLeft(exec);
      return rows.session.length === 1 && rows.rate_limit.length === 1 && rows.access_token.length === 1
        ? rows
        : undefined;
    },
    30_000,
    "auth rows pruned",
  );
  expect(left).toEqual(AUTH_ROWS_KEPT);
});

it("the delivery service prunes its log past the retention on the embedded start, and keeps recent and pending deliveries", async () => {
  // Its own PGlite, as on the embedded start; the test reads through a second connection.
  const db = await startEmbeddedPostgres(dir, "delivery");
  const delivery = await createDeliveryApp(
    {
      config,
      databaseUrl: db.url,
      databasePoolMax: EMBEDDED_POOL_MAX,
      bus,
      logger: createLogger("test", config.LOG_LEVEL),
    },
    { fanOut: false, workers: false },
  );
  const client = new pg.Client({ connectionString: db.url });
  try {
    await client.connect();
    const exec: Exec = async (sql, params) => (await client.query(sql, params)).rows;
    await seedDeliveryRows(exec);
    await delivery.start();
    const left = await waitFor(
      async () => {
        const rows = await deliveryRowsLeft(exec);
        return rows.delivery_event.length === 2 && rows.delivery_attempt.length === 1 ? rows : undefined;
      },
      30_000,
      "delivery rows pruned",
    );
    expect(left).toEqual(DELIVERY_ROWS_KEPT);
  } finally {
    await client.end().catch(() => undefined);
    await delivery.close();
    await db.close();
  }
});
