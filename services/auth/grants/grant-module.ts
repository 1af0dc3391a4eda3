// What a grant module exports (one per grant type, under grants/): its
// grant_type, the parameters it reads, and its handler. The token endpoint
// (tokens/token-endpoint.ts) checks the required parameters and
// authenticates the client before the handler runs. tokens/ depends on
// grants/ (the endpoint runs the grant modules; token rows belong to grants),
// never the reverse: what a grant issues (values, tokens, the scope rule, the
// refresh retry answer) lives here.
import type { MikroORM } from "@mikro-orm/postgresql";
import type { ExchangeTokenRequest, ExchangeTokenResponse } from "../../../gen/bizcard/auth/v1/auth_pb.js";
import type { ProtectedResources } from "../../shared/protected-resources.js";
import type { AccessTokenToIssue, IssuedTokens, TokenTables } from "./issue-tokens.js";
import type { GrantType } from "../clients/grant-types.js";
import type { GrantStore } from "./grant-store.js";

/** A token request parameter: its name on the wire and its field in ExchangeTokenRequest. */
export interface GrantParameter {
  name: string;
  field: "code" | "redirectUri" | "codeVerifier" | "refreshToken" | "scope";
  required: boolean;
}

/** A client whose credentials were right (tokens/client-authentication.ts), as its registration says. */
export interface AuthenticatedClient {
  id: string;
  public: boolean;
  ownerOrganisationId: string | null;
  scopes: string[];
  grantTypes: string[];
}

export interface GrantDeps {
  orm: MikroORM;
  tables: TokenTables;
  grants: GrantStore;
  /** REFRESH_RETRY_WINDOW_SECONDS. */
  refreshRetryWindowSeconds: number;
  /** The protected resources a token may be for (RFC 8707 audiences). */
  resources: ProtectedResources;
  /** Issues an access token of no grant, committed on its own (issue-tokens.ts accessTokenIssuer). */
  issueAccessToken(t: AccessTokenToIssue): Promise<IssuedTokens>;
}

export interface GrantContext {
  deps: GrantDeps;
  client: AuthenticatedClient;
  request: ExchangeTokenRequest;
}

export interface GrantModule {
  grantType: GrantType;
  parameters: readonly GrantParameter[];
  handle(context: GrantContext): Promise<ExchangeTokenResponse>;
}
