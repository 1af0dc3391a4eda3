// The token side of AuthService: ExchangeToken (grants/), IntrospectToken,
// RevokeToken, AuthenticateAccessToken, ListGrants, RevokeGrant.
import type { ServiceImpl } from "@connectrpc/connect";
import type { AuthService } from "../../../gen/bizcard/auth/v1/auth_pb.js";
import type { AuthServiceDeps } from "../auth-service.js";

export type TokenHandlers = Partial<
  Pick<ServiceImpl<typeof AuthService>, "exchangeToken" | "introspectToken" | "revokeToken" | "authenticateAccessToken" | "listGrants" | "revokeGrant">
>;

export function createTokenHandlers(_deps: AuthServiceDeps): TokenHandlers {
  return {};
}
