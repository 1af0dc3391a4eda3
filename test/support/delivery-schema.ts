// The delivery schema alone, migrated on a fresh database, with no worker or
// fan-out running (nothing claims behind the test's back), and the store the
// workers use, over its own pool: what the claim tests drive directly.
import type { MikroORM } from "@mikro-orm/postgresql";
import { DELIVERY_ENTITIES, createDeliveryApp } from "../../services/delivery/delivery-app.js";
import { createDeliveryStore, type DeliveryStore } from "../../services/delivery/deliveries/delivery-store.js";
import { DELIVERY_SCHEMA } from "../../services/delivery/delivery-service.js";
import { deliveryMigrations } from "../../services/delivery/migrations/index.js";
import { openServiceDatabase } from "../../services/shared/database.js";
import { createLogger } from "../../services/shared/logger.js";
import { startPlatform, type Platform } from "./platform.js";

export interface DeliverySchema {
  platform: Platform;
  orm: MikroORM;
  store: DeliveryStore;
  stop(): Promise<void>;
}

export async function startDeliverySchema(token: string): Promise<DeliverySchema> {
  const platform = await startPlatform({
    token,
    organisation: false,
    auth: false,
    webhook: false,
    delivery: { create: (deps) => createDeliveryApp(deps, { workers: false, fanOut: false }) },
  });
  const orm = await openServiceDatabase(
    {
      databaseUrl: platform.db.url,
      databasePoolMax: 2,
      logger: createLogger("test", "silent"),
      config: { MIGRATE_ON_START: false },
    },
    { schema: DELIVERY_SCHEMA, entities: DELIVERY_ENTITIES, migrations: deliveryMigrations },
  );
  return {
    platform,
    orm,
    store: createDeliveryStore(orm),
    async stop() {
      await orm.close();
      await platform.stop();
    },
  };
}
