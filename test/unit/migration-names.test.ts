// Every service's committed migrations: each file is registered once, under
// its own file name, and a migration's name sorts after every name before it,
// so that a new one is always the last in the folder as in the list (MikroORM
// records each by name; a database applies the names it has not seen).
import { readdirSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { authMigrations } from "../../services/auth/migrations/index.js";
import { deliveryMigrations } from "../../services/delivery/migrations/index.js";
import { organisationMigrations } from "../../services/organisation/migrations/index.js";
import { webhookMigrations } from "../../services/webhook/migrations/index.js";
import { ROOT } from "../support/processes.js";

const SERVICES = {
  auth: authMigrations,
  organisation: organisationMigrations,
  webhook: webhookMigrations,
  delivery: deliveryMigrations,
};

// Shipped before the rule below held: a shipped migration is never renamed (a database that
// recorded the old name would apply it again).
const SHIPPED_OUT_OF_ORDER = new Set(["auth/2026-11-23-interactions", "delivery/2026-11-22-attempt-owner"]);

describe("committed migrations", () => {
  for (const [service, migrations] of Object.entries(SERVICES)) {
    it(`${service}: every file registered once under its file name`, () => {
      const files = readdirSync(path.join(ROOT, "services", service, "migrations"))
        .filter((f) => f.endsWith(".ts") && f !== "index.ts")
        .map((f) => f.replace(/\.ts$/, ""));
      const names = migrations.map((m) => m.name);
      expect(new Set(names).size).toBe(names.length);
      expect([...names].sort()).toEqual(files.sort());
    });

    it(`${service}: each name sorts after every name before it`, () => {
      const late = migrations
        .map((m) => m.name)
        .filter((name, i, names) => names.slice(0, i).some((earlier) => earlier > name))
        .filter((name) => !SHIPPED_OUT_OF_ORDER.has(`${service}/${name}`));
      expect(late).toEqual([]);
    });
  }
});
