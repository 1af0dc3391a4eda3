// Committed migrations, in order. Never edit one that has shipped: add the next.
import type { MigrationObject } from "@mikro-orm/core";
import { InitialOrganisationSchema } from "./2026-11-22-initial.js";
import { OutboxTraceContextSchema } from "./2026-11-28-trace-context.js";
import { OutboxTracestateSchema } from "./2026-12-14-tracestate.js";

export const organisationMigrations: MigrationObject[] = [
  { name: "2026-11-22-initial", class: InitialOrganisationSchema },
  { name: "2026-11-28-trace-context", class: OutboxTraceContextSchema },
  { name: "2026-12-14-tracestate", class: OutboxTracestateSchema },
];
