// The browser flow of AuthService: authorization requests as interactions,
// login into server-side sessions, consent, and the connected applications.
import type { ServiceImpl } from "@connectrpc/connect";
import type { AuthService } from "../../../gen/bizcard/auth/v1/auth_pb.js";
import type { AuthServiceDeps } from "../auth-service.js";

export type InteractionHandlers = Partial<
  Pick<
    ServiceImpl<typeof AuthService>,
    | "startAuthorization"
    | "startAccountLogin"
    | "getInteraction"
    | "login"
    | "decideConsent"
    | "getSession"
    | "logout"
    | "listApplications"
    | "revokeApplication"
  >
>;

export function createInteractionHandlers(_deps: AuthServiceDeps): InteractionHandlers {
  return {};
}
