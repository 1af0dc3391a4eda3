import { DeliveryService } from "../../gen/bizcard/delivery/v1/delivery_pb.js";
import { openServiceDatabase, pingDatabase } from "../shared/database.js";
import { runChecks } from "../shared/rpc-server.js";
import type { ServiceApp, ServiceAppDeps } from "../shared/service-app.js";
import { DeliveryAttemptEntity } from "./attempts/delivery-attempt.entity.js";
import { DELIVERY_SCHEMA, createDeliveryService } from "./delivery-service.js";
import { deliveryMigrations } from "./migrations/index.js";

export async function createDeliveryApp(deps: ServiceAppDeps): Promise<ServiceApp> {
  const { config, logger, bus } = deps;
  const orm = await openServiceDatabase(deps, { schema: DELIVERY_SCHEMA, entities: [DeliveryAttemptEntity], migrations: deliveryMigrations });
  return {
    name: "delivery",
    routes: (router) => router.service(DeliveryService, createDeliveryService({ orm })),
    readiness: () => runChecks({ database: () => pingDatabase(orm), bus: () => bus.ping() }),
    start: async () => {},
    close: () => orm.close(),
  };
}
