// Each service's PostgreSQL schema and committed migrations: what `npm start`
// and the install's migrated template (pglite-migrated-template.ts) agree on.
import type { MigrationObject } from "@mikro-orm/core";
import { AUTH_SCHEMA } from "../services/auth/auth-schema.js";
import { authMigrations } from "../services/auth/migrations/index.js";
import { DELIVERY_SCHEMA } from "../services/delivery/delivery-service.js";
import { deliveryMigrations } from "../services/delivery/migrations/index.js";
import { ORGANISATION_SCHEMA } from "../services/organisation/organisation-service.js";
import { organisationMigrations } from "../services/organisation/migrations/index.js";
import { WEBHOOK_SCHEMA } from "../services/webhook/webhook-service.js";
import { webhookMigrations } from "../services/webhook/migrations/index.js";

export const SERVICE_SCHEMAS = {
  auth: { schema: AUTH_SCHEMA, migrations: authMigrations },
  organisation: { schema: ORGANISATION_SCHEMA, migrations: organisationMigrations },
  webhook: { schema: WEBHOOK_SCHEMA, migrations: webhookMigrations },
  delivery: { schema: DELIVERY_SCHEMA, migrations: deliveryMigrations },
} as const satisfies Record<string, { schema: string; migrations: MigrationObject[] }>;

/** The embedded database the services of `npm start` share (DATA_DIR/pglite/platform). */
export const EMBEDDED_DATABASE = "platform";

/** Each schema's migration names, in order. */
export function migrationNames(): Record<string, string[]> {
  return Object.fromEntries(Object.values(SERVICE_SCHEMAS).map((s) => [s.schema, s.migrations.map((m) => m.name)]));
}
