// Bounded tables on PostgreSQL: the auth and delivery services prune their own
// expired rows on their timer (PRUNE_INTERVAL_SECONDS), in batches of
// PRUNE_BATCH_SIZE, and keep what still counts: a grant whose access tokens
// have all expired while its refresh token lives, a rotated refresh token of
// a live family, a recently used code, a live session, a delivery within
// DELIVERY_LOG_RETENTION_DAYS or still pending.
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAuthApp } from "../../services/auth/auth-app.js";
import { authPruneTargets } from "../../services/auth/prune/auth-prune.js";
import { createDeliveryApp } from "../../services/delivery/delivery-app.js";
import { InProcessBus } from "../../services/shared/event-bus/in-process-bus.js";
import { createLogger } from "../../services/shared/logger.js";
import { deleteInBatches } from "../../services/shared/prune/batch-delete.js";
import { createDatabaseOn, ADMIN_DATABASE_URL, testConfig, uniqueName } from "../support/backends.js";
import { waitFor } from "../support/processes.js";
import {
  AUTH_ROWS_KEPT,
  DELIVERY_ROWS_KEPT,
  OLD_ROWS,
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
let db: { url: string; drop(): Promise<void> };
let pool: pg.Pool;
let bus: InProcessBus;
const exec: Exec = async (sql, params) => (await pool.query(sql, params)).rows;
const closers: (() => Promise<void>)[] = [];
let authApp: Awaited<ReturnType<typeof createAuthApp>> | undefined;

beforeAll(async () => {
  // Real PostgreSQL whatever the run's backends: the embedded start has its own test (prune-embedded).
  db = await createDatabaseOn(ADMIN_DATABASE_URL, uniqueName("bizcard_test_"));
  pool = new pg.Pool({ connectionString: db.url, max: 2 });
  // pool.end() resolves before its clients' sockets have closed; the database's drop (with force)
  // can then terminate one that is still closing, an error with nobody left to hear it.
  pool.on("error", () => {});
  bus = new InProcessBus(config.NATS_SUBJECT_PREFIX);
});

afterAll(async () => {
  for (const close of closers.reverse()) await close();
  await pool?.end();
  await bus?.close();
  await db?.drop();
});

const deps = () => ({
  config,
  databaseUrl: db.url,
  databasePoolMax: 3,
  bus,
  logger: createLogger("test", config.LOG_LEVEL),
});

describe("auth", () => {
  it("deletes expired tokens, codes, sessions, interactions and rate-limit counters in batches; keeps the live ones", async () => {
    const app = await createAuthApp(deps());
    authApp = app;
    closers.push(() => app.close());
    await seedAuthRows(exec);
    // One kind by hand, before the timer runs: batches of 100 until one comes back short.
    const accessTokens = authPruneTargets("auth").find((t) => t.name === "access tokens")!;
    expect(await deleteInBatches(app.orm, accessTokens, 100)).toEqual([100, 100, OLD_ROWS - 200]);
    expect((await authRowsLeft(exec)).access_token).toEqual(AUTH_ROWS_KEPT.access_token);
    // The rest on the service's timer.
    await app.start();
    const left = await waitFor(
      async () => {
        const rows = await authRowsLeft(exec);
        return rows.session.length === 1 && rows.rate_limit.length === 1 && rows.refresh_token.length <= 2
          ? rows
          : undefined;
      },
      20_000,
      "auth rows pruned",
    );
    expect(left).toEqual(AUTH_ROWS_KEPT);
  });

  it("overlapping runs (several replicas, and the timer) neither fail nor wait on each other, and delete each row once", async () => {
    const app = authApp!;
    await exec(`insert into "auth"."session" ("id_hash", "member_id", "organisation_id", "member_email", "csrf_token", "created_at", "expires_at")
      select 'overlap-' || i, gen_random_uuid(), gen_random_uuid(), 'm@prune.test', 'c', now() - interval '1 day', now() - interval '1 hour'
      from generate_series(1, 1000) i`);
    const sessions = authPruneTargets("auth").find((t) => t.name === "sessions")!;
    const runs = await Promise.all([1, 2, 3].map(() => deleteInBatches(app.orm, sessions, 50)));
    const deleted = runs.flat().reduce((a, b) => a + b, 0);
    // The service's own timer (every second) may have taken some of them.
    expect(deleted).toBeGreaterThan(0);
    expect(deleted).toBeLessThanOrEqual(1000);
    expect((await authRowsLeft(exec)).session).toEqual(["live-session"]);
  });
});

describe("delivery", () => {
  it("deletes finished deliveries, attempts and events past DELIVERY_LOG_RETENTION_DAYS in batches; keeps recent and pending ones", async () => {
    const app = await createDeliveryApp(deps(), { fanOut: false, workers: false });
    closers.push(() => app.close());
    await seedDeliveryRows(exec);
    // OLD_ROWS of each kind with PRUNE_BATCH_SIZE 100: one run takes several batches.
    await app.start();
    const left = await waitFor(
      async () => {
        const rows = await deliveryRowsLeft(exec);
        return rows.delivery_event.length === 2 && rows.delivery_attempt.length === 1 ? rows : undefined;
      },
      20_000,
      "delivery rows pruned",
    );
    expect(left).toEqual(DELIVERY_ROWS_KEPT);
  });
});
