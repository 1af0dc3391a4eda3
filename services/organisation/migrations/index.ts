// Committed migrations, in order. Never edit one that has shipped: add the next.
import type { MigrationObject } from "@mikro-orm/core";
import { InitialOrganisationSchema } from "./2026-11-22-initial.js";
import { OutboxTraceContextSchema } from "./2026-11-28-trace-context.js";

export const organisationMigrations: MigrationObject[] = [
  { name: "2026-11-22-initial", class: InitialOrganisationSchema },
  { name: "2026-11-28-trace-context", class: OutboxTraceContextSchema },
];
