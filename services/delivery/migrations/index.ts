// Committed migrations, in order. Never edit one that has shipped: add the next.
import type { MigrationObject } from "@mikro-orm/core";
import { DeliveryAttemptOwner } from "./2026-11-22-attempt-owner.js";
import { InitialDeliverySchema } from "./2026-11-22-initial.js";
import { DeliverySchema } from "./2026-11-24-deliveries.js";
import { PruneIndexesSchema } from "./2026-11-26-prune-indexes.js";
import { DeliveryTraceContextSchema } from "./2026-11-28-trace-context.js";
import { DeliveryInFlightIndexSchema } from "./2026-11-30-in-flight-index.js";
import { DeliverySubscriptionPauseSchema } from "./2026-12-02-subscription-pause.js";
import { DeliveryOrderedSchema } from "./2026-12-04-ordered-delivery.js";
import { DeliveryPendingIndexSchema } from "./2026-12-08-pending-index.js";
import { DeliveryQueueAutovacuumSchema } from "./2026-12-10-queue-autovacuum.js";
import { DeliveryQueueIndexesSchema } from "./2026-12-12-queue-indexes.js";
import { DeliveryTracestateSchema } from "./2026-12-14-tracestate.js";
import { DeliveryStatesSchema } from "./2026-12-06-delivery-states.js";

export const deliveryMigrations: MigrationObject[] = [
  { name: "2026-11-22-initial", class: InitialDeliverySchema },
  { name: "2026-11-22-attempt-owner", class: DeliveryAttemptOwner },
  { name: "2026-11-24-deliveries", class: DeliverySchema },
  { name: "2026-11-26-prune-indexes", class: PruneIndexesSchema },
  { name: "2026-11-28-trace-context", class: DeliveryTraceContextSchema },
  { name: "2026-11-30-in-flight-index", class: DeliveryInFlightIndexSchema },
  { name: "2026-12-02-subscription-pause", class: DeliverySubscriptionPauseSchema },
  { name: "2026-12-04-ordered-delivery", class: DeliveryOrderedSchema },
  { name: "2026-12-06-delivery-states", class: DeliveryStatesSchema },
  { name: "2026-12-08-pending-index", class: DeliveryPendingIndexSchema },
  { name: "2026-12-10-queue-autovacuum", class: DeliveryQueueAutovacuumSchema },
  { name: "2026-12-12-queue-indexes", class: DeliveryQueueIndexesSchema },
  { name: "2026-12-14-tracestate", class: DeliveryTracestateSchema },
];
