// Committed migrations, in order. Never edit one that has shipped: add the next.
import type { MigrationObject } from "@mikro-orm/core";
import { InitialWebhookSchema } from "./2026-11-22-initial.js";
import { SubscriptionDisabled } from "./2026-11-25-disabled.js";
import { SubscriptionEnd } from "./2026-11-27-subscription-end.js";
import { SecretRotation } from "./2026-11-30-secret-rotation.js";
import { SubscriptionOrdered } from "./2026-12-04-ordered.js";

export const webhookMigrations: MigrationObject[] = [
  { name: "2026-11-22-initial", class: InitialWebhookSchema },
  { name: "2026-11-25-disabled", class: SubscriptionDisabled },
  { name: "2026-11-27-subscription-end", class: SubscriptionEnd },
  { name: "2026-11-30-secret-rotation", class: SecretRotation },
  { name: "2026-12-04-ordered", class: SubscriptionOrdered },
];
