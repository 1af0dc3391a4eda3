// AuthService: the client registry (clients/registration.ts), the browser flow
// (interactions/interaction-handlers.ts) and the token side
// (tokens/token-handlers.ts), put together into one implementation.
import type { ServiceImpl } from "@connectrpc/connect";
import type { AuthService } from "../../gen/bizcard/auth/v1/auth_pb.js";
import type { AuthServiceDeps } from "./auth-service-deps.js";
import { createRegistrationHandlers } from "./clients/registration.js";
import { createInteractionHandlers } from "./interactions/interaction-handlers.js";
import { createTokenHandlers } from "./tokens/token-handlers.js";

export { AUTH_SCHEMA } from "./auth-schema.js";
export type { AuthServiceDeps } from "./auth-service-deps.js";

export function createAuthService(deps: AuthServiceDeps): Partial<ServiceImpl<typeof AuthService>> {
  return {
    ...createRegistrationHandlers(deps),
    ...createTokenHandlers(deps),
    ...createInteractionHandlers(deps),
  };
}
