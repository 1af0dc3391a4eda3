// Committed migrations, in order. Never edit one that has shipped: add the next.
import type { MigrationObject } from "@mikro-orm/core";
import { InitialAuthSchema } from "./2026-11-22-initial.js";
import { TokensAuthSchema } from "./2026-11-23-tokens.js";
import { InteractionsSchema } from "./2026-11-23-interactions.js";
import { CodeRedirectUriSchema } from "./2026-11-24-code-redirect-uri.js";
import { ExpiryIndexesSchema } from "./2026-11-25-expiry-indexes.js";
import { ClientRegistrationSchema } from "./2026-11-26-client-registration.js";
import { TokenAudienceSchema } from "./2026-11-27-token-audience.js";
import { OutboxTraceContextSchema } from "./2026-11-28-trace-context.js";
import { OutboxTracestateSchema } from "./2026-12-14-tracestate.js";
import { TokenPartialIndexesSchema } from "./2026-12-16-token-partial-indexes.js";

export const authMigrations: MigrationObject[] = [
  { name: "2026-11-22-initial", class: InitialAuthSchema },
  { name: "2026-11-23-tokens", class: TokensAuthSchema },
  { name: "2026-11-23-interactions", class: InteractionsSchema },
  { name: "2026-11-24-code-redirect-uri", class: CodeRedirectUriSchema },
  { name: "2026-11-25-expiry-indexes", class: ExpiryIndexesSchema },
  { name: "2026-11-26-client-registration", class: ClientRegistrationSchema },
  { name: "2026-11-27-token-audience", class: TokenAudienceSchema },
  { name: "2026-11-28-trace-context", class: OutboxTraceContextSchema },
  { name: "2026-12-14-tracestate", class: OutboxTracestateSchema },
  { name: "2026-12-16-token-partial-indexes", class: TokenPartialIndexesSchema },
];
